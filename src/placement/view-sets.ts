/**
 * The scheduler view's ManagedClusterSets and ManagedClusterSetBindings (src/placement/view.ts):
 * the sets with their compiled selectors, the bindings by namespace and by set, a version of
 * each that moves when scheduling could read them differently, and which sets a label set
 * belongs to (cached per distinct label set until a set changes).
 */
import type { LabelSelectorRequirementSet } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { cmp, compileSetSelector, inCompiledSet } from "./reads.ts";

/** A ManagedClusterSet as the view keeps it. */
export interface SetRecord {
  object: KubeObject;
  rv: number;
  /** null for an ExclusiveClusterSetLabel set (members carry the clusterset label). */
  selector: LabelSelectorRequirementSet | null;
}

/** Whether labels belong to the set `name` (OCM's `clusterInSet`). */
export function inSet(name: string, s: SetRecord, labels: Readonly<Record<string, string>> | undefined): boolean {
  return inCompiledSet(name, s.selector, labels);
}

/** The view's sets and bindings. */
export class SetIndex {
  /** set name → set */
  readonly sets = new Map<string, SetRecord>();
  /** namespace → binding name → binding */
  readonly bindings = new Map<string, Map<string, KubeObject>>();
  /** set name → namespaces with a binding of that name */
  readonly boundNamespaces = new Map<string, Set<string>>();
  private readonly membershipCache = new Map<string, readonly string[]>();
  private setsAt = 0;
  private bindingsAt = 0;

  /** Bumped by every change of a set (its membership may have changed). */
  get setsVersion(): number {
    return this.setsAt;
  }

  /** Bumped when a binding appears or goes (scheduling reads a binding's existence and name only). */
  get bindingsVersion(): number {
    return this.bindingsAt;
  }

  /** Stores a set at `rv` (null: removes it). */
  applySet(name: string, object: KubeObject | null, rv: number | undefined): void {
    this.setsAt++;
    this.membershipCache.clear();
    if (object === null) this.sets.delete(name);
    else this.sets.set(name, { object, rv: rv ?? 0, selector: compileSetSelector(object) });
  }

  /** Stores a binding (null: removes it). */
  applyBinding(namespace: string, name: string, object: KubeObject | null): void {
    let inNs = this.bindings.get(namespace);
    const before = inNs?.get(name);
    if (object === null) {
      if (before) {
        inNs!.delete(name);
        const nss = this.boundNamespaces.get(name);
        nss?.delete(namespace);
        if (nss?.size === 0) this.boundNamespaces.delete(name);
        this.bindingsAt++;
      }
      return;
    }
    if (!inNs) this.bindings.set(namespace, (inNs = new Map()));
    inNs.set(name, object);
    let nss = this.boundNamespaces.get(name);
    if (!nss) this.boundNamespaces.set(name, (nss = new Set()));
    nss.add(namespace);
    // Scheduling reads a binding's existence and name only; its status is the scheduler's own.
    if (!before) this.bindingsAt++;
  }

  /** The sets bound to a namespace by a binding whose set exists, by binding name. */
  boundSets(namespace: string): string[] {
    return [...(this.bindings.get(namespace)?.keys() ?? [])].filter((s) => this.sets.has(s)).sort(cmp);
  }

  /** The names of the sets labels belong to (as `clusterInSet`), interned per label set. */
  setsOf(labels: Readonly<Record<string, string>> | undefined): readonly string[] {
    const out: string[] = [];
    for (const [name, s] of this.sets) if (inSet(name, s, labels)) out.push(name);
    const k = out.join("\0");
    const hit = this.membershipCache.get(k);
    if (hit) return hit;
    this.membershipCache.set(k, out);
    return out;
  }

  /** Whether labels belong to one of the sets. */
  inAny(setNames: readonly string[], labels: Readonly<Record<string, string>> | undefined): boolean {
    for (const name of setNames) {
      const s = this.sets.get(name);
      if (s && inSet(name, s, labels)) return true;
    }
    return false;
  }
}
