/**
 * The agent's policy controller (OCM's config-policy-controller together with the
 * governance-policy-framework-addon's template and status sync, in one): the replicated Policies
 * of the cluster's namespace on the hub (`<rootns>.<rootname>`, delivered with the works) are
 * evaluated against the member cluster, each ConfigurationPolicy of their `policy-templates` on
 * its own `evaluationInterval`, and a Policy's compliance is reported to the hub only when a
 * template's compliance message changed (a compliance event, as OCM's controller emits one when
 * the message of its status changes). An idle cluster whose policies stay compliant sends nothing.
 *
 * - The Policy's `remediationAction`, when set, overrides each template's (OCM's propagator
 *   does); a template's default is `inform`.
 * - `spec.disabled: true`: nothing of the Policy is evaluated or reported.
 * - `evaluationInterval.compliant` / `.noncompliant` (the one of the template's current
 *   compliance applies, as in OCM's `currentlyUsingWatch`):
 *   - `watch` or unset (OCM's default): evaluated when what the last evaluation read changes,
 *     learnt from Kubernetes watches on the member cluster (the agent's `LiveTracker`, as OCM's
 *     dynamic watcher): the named objects, the whole collection (in each selected namespace) of a
 *     template without a name, and a missing namespace an enforce could not create into. A burst
 *     of events is coalesced for {@link WATCH_DEBOUNCE_MS} ms; only the Policy concerned is
 *     evaluated. While a watch it depends on is broken (or being restarted), the template is
 *     evaluated every default interval (the agent's `--status-sync-interval`) instead, and once
 *     at once when the watch starts again from a fresh list.
 *   - a Go duration (`10s`, `1h30m`): evaluated that long after the last evaluation, no watch.
 *   - `never`: not evaluated again until the Policy changes (the message says so, as OCM's does).
 *   - anything else: the default interval (OCM requeues an invalid interval after 10 s).
 *   Whatever the interval, a template with a namespaceSelector is evaluated again when the set of
 *   namespaces it selects changes (OCM's NamespaceSelectorReconciler), learnt from a watch of the
 *   member cluster's namespaces.
 * - A template of a kind other than ConfigurationPolicy is reported NonCompliant: this agent
 *   evaluates ConfigurationPolicies only.
 */
import { parseGoDuration } from "../../../src/k8s/duration.ts";
import type { PolicyComplianceReport, PolicyTemplateCompliance } from "../../../src/agent-api/protocol-answers.ts";
import type { GroupVersionResource, ObjectRef } from "../work/dynamic.ts";
import type { LiveTracker } from "../work/tracker.ts";
import { isObj, type Obj } from "../work/types.ts";
import {
  evaluateObjectTemplate,
  selectNamespaces,
  selectsNamespaces,
  type EvaluationContext,
  type NamespaceSelector,
  type ObjectTemplate,
  type ReadObserver,
  type Remediation,
} from "./evaluate.ts";

/** OCM's `PolicyTemplate` kind this agent evaluates. */
export const CONFIGURATION_POLICY_KIND = "ConfigurationPolicy";

/** How long a watched change waits for more before its Policy is evaluated, in milliseconds (a burst is one evaluation). */
export const WATCH_DEBOUNCE_MS = 100;

/** The watches the controller uses: the agent's one implementation (agent/src/work/tracker.ts). */
export type PolicyWatches = Pick<LiveTracker, "beginRead" | "note" | "watchCollection" | "synced" | "retain">;

const NAMESPACES: GroupVersionResource = { group: "", version: "v1", resource: "namespaces" };

/** A collection of the member cluster: group/version/resource and namespace ("" for all or cluster-scoped). */
type CollectionRef = GroupVersionResource & { namespace: string };

function collectionKey(c: CollectionRef): string {
  return `${c.group}/${c.version}/${c.resource}/${c.namespace}`;
}
function objectKey(r: ObjectRef): string {
  return `${collectionKey(r)}/${r.name}`;
}

/** What one evaluation of a template read: named objects and whole collections, by key. */
interface Reads {
  objects: Map<string, ObjectRef>;
  collections: Map<string, CollectionRef>;
}

/** A replicated Policy as delivered (metadata name, uid, generation; the spec as stored). */
export interface DeliveredPolicy {
  metadata: { name: string; uid: string; generation?: number };
  spec?: Obj;
}

/** The state of one template of one Policy. */
interface TemplateState {
  /** JSON of the template and the effective remediation: a change re-evaluates at once. */
  key: string;
  compliant: "Compliant" | "NonCompliant";
  message: string;
  /** When the message last changed (epoch ms). */
  since: number;
  /**
   * When it is evaluated next (epoch ms; Infinity: never). On watch, when the watches are checked
   * next (evaluated then only if one of them is not running).
   */
  dueMs: number;
  /** Its current interval is `watch`. */
  watch: boolean;
  /** A watched change (or a watch's restart) asks for an evaluation at `dueMs`. */
  pending: boolean;
  /** What its last evaluation read (kept for watching while {@link watch}). */
  reads: Reads;
  /** The namespaces its namespaceSelector selected (sorted), when it has one that selects. */
  selected: string[] | undefined;
  /** A namespace changed: whether the selection changed is checked at the next pass. */
  selectionStale: boolean;
}

/** Per Policy: its uid and each template's state by template name. */
interface PolicyState {
  uid: string;
  templates: Map<string, TemplateState>;
  /** Template names in spec order. */
  order: string[];
  /** A template's message changed since the last report the hub took. */
  dirty: boolean;
}

/** A report to send: the Policy's name and its compliance. */
export interface PolicyReport {
  policy: string;
  report: PolicyComplianceReport;
}

/**
 * The evaluation interval of one `evaluationInterval` value, as OCM's `parseInterval`: unset, ""
 * or `watch`: `"watch"`; `never`: Infinity; a Go duration: its milliseconds; anything else
 * (which OCM's CRD pattern refuses): `defaultMs`.
 */
export function intervalMs(value: unknown, defaultMs: number): number | "watch" {
  if (typeof value !== "string" || value === "" || value.toLowerCase() === "watch") return "watch";
  if (value.toLowerCase() === "never") return Infinity;
  try {
    return parseGoDuration(value);
  } catch {
    return defaultMs;
  }
}

/** The remediation of a template: the Policy's when set, else the template's, else inform. */
function remediationOf(policySpec: Obj, templateSpec: Obj): Remediation {
  const p = typeof policySpec.remediationAction === "string" ? policySpec.remediationAction.toLowerCase() : "";
  if (p === "inform" || p === "enforce") return p;
  return typeof templateSpec.remediationAction === "string" && templateSpec.remediationAction.toLowerCase() === "enforce" ? "enforce" : "inform";
}

/** Whether an `evaluationInterval` may put a template on watch (either value is `watch` or unset). */
function mayWatch(interval: Obj): boolean {
  return intervalMs(interval.compliant, 0) === "watch" || intervalMs(interval.noncompliant, 0) === "watch";
}

/** See the module comment. */
export class PolicyController {
  private readonly policies = new Map<string, PolicyState>();
  private delivered: DeliveredPolicy[] = [];
  /** The reads of the template being evaluated (events for them during its evaluation count). */
  private inFlight: { reads: Reads; changed: boolean } | undefined;
  /** When the templates whose selection may have changed check it (epoch ms; Infinity: none waits). */
  private selectionDueMs = Infinity;

  /**
   * @param ctx the member cluster's client and REST mapper
   * @param defaultIntervalMs the evaluation interval of a template that sets none valid, and
   *   the period of a `watch` template while a watch it needs is broken, in ms
   * @param now the clock, epoch ms
   * @param watches the agent's watch tracker, whose `onChange` and `onResync` listeners call
   *   {@link changed} and {@link resynced}; without it a `watch` template is evaluated every
   *   default interval
   */
  constructor(
    private readonly ctx: EvaluationContext,
    private readonly defaultIntervalMs: number,
    private readonly now: () => number = Date.now,
    private readonly watches?: PolicyWatches,
  ) {}

  /** Takes the cluster's whole list of replicated Policies (a new delivery); watches no Policy needs any more end. */
  setPolicies(policies: readonly DeliveredPolicy[]): void {
    this.delivered = [...policies];
    const names = new Set(policies.map((p) => p.metadata.name));
    for (const name of [...this.policies.keys()]) if (!names.has(name)) this.policies.delete(name);
    this.retainWatches();
  }

  /**
   * A watch reported a change of `ref` (an object of a watched collection, or a tracked object):
   * the templates on watch that read it are due in {@link WATCH_DEBOUNCE_MS} ms, and a change of
   * a namespace makes the templates with a namespaceSelector check their selection.
   * @returns whether a template became due (the loop should recompute its sleep)
   */
  changed(ref: ObjectRef): boolean {
    const collection = collectionKey(ref);
    const object = objectKey(ref);
    return this.mark((reads) => reads.objects.has(object) || reads.collections.has(collection), ref.group === "" && ref.resource === "namespaces");
  }

  /**
   * The watch of a collection (re)started from a fresh list: changes before it may have been
   * missed, so the templates on watch that read from it are due as after a change.
   * @returns whether a template became due
   */
  resynced(gvr: GroupVersionResource, namespace: string): boolean {
    const collection = collectionKey({ ...gvr, namespace });
    const inCollection = (reads: Reads): boolean =>
      reads.collections.has(collection) || [...reads.objects.values()].some((r) => collectionKey(r) === collection);
    return this.mark(inCollection, gvr.group === "" && gvr.resource === "namespaces" && namespace === "");
  }

  private mark(concerns: (reads: Reads) => boolean, namespaces: boolean): boolean {
    let any = false;
    const due = this.now() + WATCH_DEBOUNCE_MS;
    if (this.inFlight && concerns(this.inFlight.reads)) this.inFlight.changed = true;
    for (const state of this.policies.values()) {
      for (const t of state.templates.values()) {
        if (namespaces && t.selected !== undefined && !t.selectionStale) {
          t.selectionStale = true;
          this.selectionDueMs = Math.min(this.selectionDueMs, due);
          any = true;
        }
        if (!t.watch || !concerns(t.reads)) continue;
        t.pending = true;
        if (t.dueMs > due) t.dueMs = due;
        any = true;
      }
    }
    return any;
  }

  /** Keeps the watches the templates on watch (and the namespaceSelectors) need, ends the others. */
  private retainWatches(): void {
    if (!this.watches) return;
    const objects = new Map<string, ObjectRef>();
    const collections = new Map<string, CollectionRef>();
    for (const state of this.policies.values()) {
      for (const t of state.templates.values()) {
        if (t.selected !== undefined) collections.set(collectionKey({ ...NAMESPACES, namespace: "" }), { ...NAMESPACES, namespace: "" });
        if (!t.watch) continue;
        for (const [k, r] of t.reads.objects) objects.set(k, r);
        for (const [k, c] of t.reads.collections) collections.set(k, c);
      }
    }
    for (const c of collections.values()) this.watches.watchCollection(c, c.namespace);
    this.watches.retain([...objects.values()], [...collections.values()]);
  }

  /**
   * Whether every watch `t` depends on runs (its events can be trusted to tell a change); false
   * when it read nothing to watch (e.g. a kind the cluster does not serve yet: OCM retries those
   * periodically too).
   */
  private watched(t: TemplateState): boolean {
    const w = this.watches;
    if (!w || (t.reads.objects.size === 0 && t.reads.collections.size === 0)) return false;
    if (t.selected !== undefined && !w.synced(NAMESPACES, "")) return false;
    for (const c of t.reads.collections.values()) if (!w.synced(c, c.namespace)) return false;
    for (const r of t.reads.objects.values()) if (!w.synced(r, r.namespace)) return false;
    return true;
  }

  /** How many Policies are held (disabled ones included). */
  get size(): number {
    return this.delivered.length;
  }

  /** Epoch ms of the next evaluation (or check of a `watch` template's watches) due; Infinity when none is. */
  nextDueMs(): number {
    let next = Infinity;
    for (const p of this.delivered) {
      if (isObj(p.spec) && p.spec.disabled === true) continue;
      const state = this.policies.get(p.metadata.name);
      if (!state || state.uid !== p.metadata.uid) return this.now();
      for (const t of state.templates.values()) next = Math.min(next, t.dueMs, t.selectionStale ? this.selectionDueMs : Infinity);
      if (templatesOf(p).length !== state.templates.size) return this.now();
    }
    return next;
  }

  /**
   * Evaluates every template that is due (or changed, or whose namespace selection changed),
   * enforcing where asked, and returns the reports of the Policies whose compliance changed since
   * the hub last took one (see {@link reported}). A `watch` template whose time came while its
   * watches run and told nothing is not evaluated (its next check is a default interval later).
   * Failures to reach the member cluster are part of the messages; never throws.
   */
  async evaluate(): Promise<PolicyReport[]> {
    const now = this.now();
    /** Selections computed in this pass, by the selector's JSON. */
    const selections = new Map<string, Promise<string[] | undefined>>();
    for (const policy of this.delivered) {
      const spec = isObj(policy.spec) ? policy.spec : {};
      if (spec.disabled === true) {
        this.policies.delete(policy.metadata.name);
        continue;
      }
      let state = this.policies.get(policy.metadata.name);
      if (!state || state.uid !== policy.metadata.uid) {
        state = { uid: policy.metadata.uid, templates: new Map(), order: [], dirty: true };
        this.policies.set(policy.metadata.name, state);
      }
      const templates = templatesOf(policy);
      state.order = templates.map((t) => t.name);
      for (const name of [...state.templates.keys()]) {
        if (!state.order.includes(name)) {
          state.templates.delete(name);
          state.dirty = true;
        }
      }
      for (const t of templates) {
        const remediation = remediationOf(spec, t.spec);
        const key = JSON.stringify([t.definition, remediation]);
        const held = state.templates.get(t.name);
        const selector = isObj(t.spec.namespaceSelector) ? (t.spec.namespaceSelector as NamespaceSelector) : undefined;
        if (held && held.key === key && held.dueMs > now) {
          if (!held.selectionStale || this.selectionDueMs > now) continue;
          held.selectionStale = false;
          // OCM's NamespaceSelectorReconciler: evaluated again only when the selection changed.
          const json = JSON.stringify(selector);
          let selection = selections.get(json);
          if (!selection) selections.set(json, (selection = selectNamespaces(this.ctx.client, selector).catch(() => undefined)));
          const selected = await selection;
          if (selected !== undefined && JSON.stringify(selected) === JSON.stringify(held.selected)) continue;
        } else if (held && held.key === key && held.watch && !held.pending && !(held.selectionStale && this.selectionDueMs <= now) && this.watched(held)) {
          // On watch, the watches run and told nothing: nothing to evaluate; checked again later.
          held.dueMs = now + this.defaultIntervalMs;
          continue;
        }
        const interval = isObj(t.spec.evaluationInterval) ? t.spec.evaluationInterval : {};
        const reads: Reads = { objects: new Map(), collections: new Map() };
        const inFlight = { reads, changed: false };
        this.inFlight = inFlight;
        let result: { compliant: boolean; message: string; selected: string[] | undefined };
        try {
          result = await this.evaluateTemplate(t.definition, t.spec, remediation, this.watches && mayWatch(interval) ? this.observer(reads) : undefined);
        } finally {
          this.inFlight = undefined;
        }
        const compliant = result.compliant ? "Compliant" : "NonCompliant";
        const every = intervalMs(result.compliant ? interval.compliant : interval.noncompliant, this.defaultIntervalMs);
        let message = result.message;
        if (every === Infinity) {
          message += `. This policy will not be evaluated again due to spec.evaluationInterval.${result.compliant ? "compliant" : "noncompliant"} being set to "never".`;
        }
        const watch = every === "watch";
        const pending = watch && inFlight.changed;
        const dueMs = pending ? this.now() + WATCH_DEBOUNCE_MS : every === Infinity ? Infinity : this.now() + (watch ? this.defaultIntervalMs : every);
        const next = { key, watch, pending, dueMs, reads, selected: selectsNamespaces(selector) ? (result.selected ?? []) : undefined, selectionStale: false };
        if (held && held.compliant === compliant && held.message === message) {
          Object.assign(held, next);
          continue;
        }
        state.templates.set(t.name, { ...next, compliant, message, since: this.now() });
        state.dirty = true;
      }
    }
    this.retainWatches();
    if (this.selectionDueMs <= now) this.selectionDueMs = Infinity;
    const reports: PolicyReport[] = [];
    for (const [name, state] of this.policies) {
      if (!state.dirty) continue;
      const templates: PolicyTemplateCompliance[] = [];
      for (const t of state.order) {
        const s = state.templates.get(t);
        if (s) templates.push({ name: t, compliant: s.compliant, message: s.message, timestamp: new Date(s.since).toISOString() });
      }
      reports.push({ policy: name, report: { uid: state.uid, templates } });
    }
    return reports;
  }

  /** A recorder of what one evaluation reads into `reads`, forwarding to the watches (started at once). */
  private observer(reads: Reads): ReadObserver {
    const w = this.watches!;
    return {
      beginRead(ref) {
        reads.objects.set(objectKey(ref), { group: ref.group, version: ref.version, resource: ref.resource, namespace: ref.namespace, name: ref.name });
        w.beginRead(ref);
      },
      note(ref, rv) {
        w.note(ref, rv);
      },
      collection(gvr, namespace) {
        const c = { group: gvr.group, version: gvr.version, resource: gvr.resource, namespace };
        reads.collections.set(collectionKey(c), c);
        w.watchCollection(c, namespace);
      },
    };
  }

  /** The hub took `report` of `policy` (or refused it for good): not sent again until a change. */
  reported(policy: string, report: PolicyComplianceReport): void {
    const state = this.policies.get(policy);
    if (!state || state.uid !== report.uid) return;
    const same = report.templates.every((t) => {
      const s = state.templates.get(t.name);
      return s && s.message === t.message && new Date(s.since).toISOString() === t.timestamp;
    });
    if (same && report.templates.length === state.templates.size) state.dirty = false;
  }

  /**
   * One ConfigurationPolicy: its object templates in the namespaces its selector selects. The
   * template's compliance event message is OCM's default one (`Compliant; notification - ...` or
   * `NonCompliant; violation - ...`, one part per object template).
   */
  private async evaluateTemplate(
    definition: Obj,
    spec: Obj,
    remediation: Remediation,
    observer: ReadObserver | undefined,
  ): Promise<{ compliant: boolean; message: string; selected: string[] | undefined }> {
    if (definition.kind !== CONFIGURATION_POLICY_KIND) {
      return {
        compliant: false,
        message: `NonCompliant; violation - the policy template kind ${String(definition.kind)} is not evaluated by the flotilla agent (only ${CONFIGURATION_POLICY_KIND})`,
        selected: undefined,
      };
    }
    let selected: string[];
    try {
      selected = await selectNamespaces(this.ctx.client, isObj(spec.namespaceSelector) ? (spec.namespaceSelector as NamespaceSelector) : undefined);
    } catch (e) {
      return {
        compliant: false,
        message: `NonCompliant; violation - Error filtering namespaces with provided namespaceSelector: ${e instanceof Error ? e.message : String(e)}`,
        selected: undefined,
      };
    }
    const ctx: EvaluationContext = observer ? { ...this.ctx, observer } : this.ctx;
    const objectTemplates = Array.isArray(spec["object-templates"]) ? (spec["object-templates"] as unknown[]).filter(isObj) : [];
    const parts: { compliant: boolean; message: string }[] = [];
    for (const ot of objectTemplates) parts.push(await evaluateObjectTemplate(ctx, ot as ObjectTemplate, remediation, selected));
    const compliant = parts.every((p) => p.compliant);
    const body = parts.map((p) => `; ${p.compliant ? "notification" : "violation"} - ${p.message}`).join("");
    return { compliant, message: `${compliant ? "Compliant" : "NonCompliant"}${body}`, selected };
  }
}

/** A Policy's templates: name (the embedded object's `metadata.name`, else `template-<i>` as OCM), definition, spec. */
function templatesOf(policy: DeliveredPolicy): { name: string; definition: Obj; spec: Obj }[] {
  const spec = isObj(policy.spec) ? policy.spec : {};
  const list = Array.isArray(spec["policy-templates"]) ? (spec["policy-templates"] as unknown[]) : [];
  return list.map((t, i) => {
    const definition = isObj(t) && isObj(t.objectDefinition) ? t.objectDefinition : {};
    const meta = isObj(definition.metadata) ? definition.metadata : {};
    return { name: typeof meta.name === "string" && meta.name ? meta.name : `template-${i}`, definition, spec: isObj(definition.spec) ? definition.spec : {} };
  });
}
