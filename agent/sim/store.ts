/**
 * The in-memory object store of the simulated cluster (the etcd stand-in).
 *
 * Objects are keyed by API group + plural resource + namespace + name, independent of version (a
 * multi-version CRD stores one object per name, as kube-apiserver does). Every write takes the next
 * value of one global counter as the object's `metadata.resourceVersion` (a decimal string), like
 * etcd's revision. Optionally the whole store is persisted to a JSON file after every write, using
 * write-to-temp + rename so a crash never leaves a torn file.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { clone, type KubeObject } from "./types.ts";

/** Where an object lives: API group ("" = core), plural resource, namespace ("" when cluster-scoped). */
export interface StoreKey {
  group: string;
  plural: string;
  namespace: string;
}

/** A change notification, as sent on a watch (`ADDED` / `MODIFIED` / `DELETED`). */
export interface StoreEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  group: string;
  plural: string;
  /** The object after the change (for DELETED: the last state, carrying the deletion's resourceVersion). */
  object: KubeObject;
  /** The resourceVersion of this event, as a number. */
  rv: number;
}

interface PersistedState {
  format: "flotilla-sim/v1";
  resourceVersion: number;
  objects: Array<{ group: string; plural: string; object: KubeObject }>;
}

/** How many past events are kept for `watch?resourceVersion=N`; older requests get 410 Gone. */
const EVENT_LOG_SIZE = 5000;

function keyString(group: string, plural: string, namespace: string, name: string): string {
  return `${group}\u0000${plural}\u0000${namespace}\u0000${name}`;
}

/** The versionless object store with a global resourceVersion counter, event log and optional persistence. */
export class Store {
  private readonly objects = new Map<string, { group: string; plural: string; object: KubeObject }>();
  private rv = 0;
  private readonly log: StoreEvent[] = [];
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  /** True when the store was loaded from an existing state file (so first-start seeding is skipped). */
  readonly loaded: boolean;

  /**
   * Loads the state from `statePath` when that file exists. Throws if the file exists but is not a
   * state file written by this simulator.
   */
  constructor(private readonly statePath?: string) {
    this.loaded = false;
    if (statePath && existsSync(statePath)) {
      const state = JSON.parse(readFileSync(statePath, "utf8")) as PersistedState;
      if (state.format !== "flotilla-sim/v1" || !Array.isArray(state.objects)) {
        throw new Error(`${statePath} is not a simulated-cluster state file`);
      }
      this.rv = state.resourceVersion;
      for (const e of state.objects) {
        this.objects.set(keyString(e.group, e.plural, e.object.metadata.namespace ?? "", e.object.metadata.name), e);
      }
      this.loaded = true;
    }
  }

  /** The latest resourceVersion handed out (the etcd revision), as a number. */
  currentRv(): number {
    return this.rv;
  }

  /** The oldest resourceVersion a watch can resume from (older ones get 410 Gone). */
  oldestWatchableRv(): number {
    return this.log.length ? (this.log[0]?.rv ?? this.rv) - 1 : this.rv;
  }

  /** A copy of the object, or undefined. */
  get(group: string, plural: string, namespace: string, name: string): KubeObject | undefined {
    const e = this.objects.get(keyString(group, plural, namespace, name));
    return e ? clone(e.object) : undefined;
  }

  /** Copies of all objects of `group/plural` (in `namespace` when given), sorted by namespace then name. */
  list(group: string, plural: string, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const e of this.objects.values()) {
      if (e.group !== group || e.plural !== plural) continue;
      if (namespace !== undefined && (e.object.metadata.namespace ?? "") !== namespace) continue;
      out.push(clone(e.object));
    }
    return out.sort((a, b) => `${a.metadata.namespace ?? ""}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ""}/${b.metadata.name}`));
  }

  /** Every stored object with its group and plural (copies). */
  all(): Array<{ group: string; plural: string; object: KubeObject }> {
    return [...this.objects.values()].map((e) => ({ group: e.group, plural: e.plural, object: clone(e.object) }));
  }

  /** The object whose `metadata.uid` is `uid`, with its group and plural, or undefined. */
  byUid(uid: string): { group: string; plural: string; object: KubeObject } | undefined {
    for (const e of this.objects.values()) if (e.object.metadata.uid === uid) return { group: e.group, plural: e.plural, object: clone(e.object) };
    return undefined;
  }

  /**
   * Writes `obj` (create or replace), assigning the next resourceVersion, and emits ADDED or
   * MODIFIED. Returns a copy of the stored object.
   */
  put(group: string, plural: string, obj: KubeObject): KubeObject {
    const k = keyString(group, plural, obj.metadata.namespace ?? "", obj.metadata.name);
    const existed = this.objects.has(k);
    const stored = clone(obj);
    stored.metadata.resourceVersion = String(++this.rv);
    this.objects.set(k, { group, plural, object: stored });
    this.emit({ type: existed ? "MODIFIED" : "ADDED", group, plural, object: clone(stored), rv: this.rv });
    this.persist();
    return clone(stored);
  }

  /** Removes the object (no-op when absent) and emits DELETED with a fresh resourceVersion. */
  remove(group: string, plural: string, namespace: string, name: string): KubeObject | undefined {
    const k = keyString(group, plural, namespace, name);
    const e = this.objects.get(k);
    if (!e) return undefined;
    this.objects.delete(k);
    const last = clone(e.object);
    last.metadata.resourceVersion = String(++this.rv);
    this.emit({ type: "DELETED", group, plural, object: clone(last), rv: this.rv });
    this.persist();
    return last;
  }

  /** Events with resourceVersion greater than `afterRv`, oldest first. */
  eventsSince(afterRv: number): StoreEvent[] {
    return this.log.filter((e) => e.rv > afterRv).map((e) => ({ ...e, object: clone(e.object) }));
  }

  /** Registers `fn` for every future event; returns an unsubscribe function. */
  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(e: StoreEvent): void {
    this.log.push(e);
    if (this.log.length > EVENT_LOG_SIZE) this.log.splice(0, this.log.length - EVENT_LOG_SIZE);
    for (const l of this.listeners) l({ ...e, object: clone(e.object) });
  }

  private persist(): void {
    if (!this.statePath) return;
    const state: PersistedState = { format: "flotilla-sim/v1", resourceVersion: this.rv, objects: [...this.objects.values()] };
    const tmp = `${this.statePath}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(state));
    renameSync(tmp, this.statePath);
  }
}
