/**
 * Applying one manifest of a ManifestWork to the member cluster with its `updateStrategy`
 * (OCM `pkg/work/spoke/apply`), then reading back what the status needs: the live object,
 * feedback values and rollout state.
 *
 * Strategies:
 * - `Update` (default): server-side apply with `force: true` under field manager `work-agent`.
 *   Flotilla uses SSA rather than OCM's get/compare/update because the API server then merges
 *   labels, annotations and fields other managers own, removes fields a new revision of the
 *   manifest no longer carries, and skips writes that change nothing, in one request.
 * - `CreateOnly`: created when missing, otherwise left as it is.
 * - `ServerSideApply`: apply under `fieldManager` (default `work-agent`) with `force` (default
 *   false). A 409 conflict is reported as `Applied=False`, reason `AppliedManifestFailed`, with
 *   the server's message, and is not retried until the work or the live object changes.
 *   `ignoreFields` (`OnSpokePresent`, the default): the listed fields are left out of the drift
 *   comparison and, when the object exists, sent with their live values, so changes made on the
 *   member cluster are kept. `OnSpokeChange`: the same, except that a change of the field's value
 *   in the work is applied.
 * - `ReadOnly`: never written or deleted; only existence and feedback are read.
 *
 * Drift: a resync (no change to the work) re-applies a manifest when its object is missing or a
 * field of the manifest differs from the live object (lists compared element by element);
 * `CreateOnly` re-creates a missing object only.
 *
 * Traceability: every write carries the work's trace labels and annotations
 * (`ApplyManifestInput.trace`, src/kinds/manifestwork-labels.ts), merged over the manifest's own. They are left
 * out of the drift comparison, so an object two works apply is labelled by the last one to write
 * it rather than rewritten by each in turn.
 *
 * KubeFleet: a work a KubeFleet placement rendered (annotation `kubernetes-fleet.io/apply-strategy`)
 * is applied by fleet-apply.ts instead, as KubeFleet's work applier (docs/kubefleet-apply.md).
 *
 * Identity: the client is the work's (the agent's own, or impersonating the work's executor,
 * controller.ts); a 403 of the member cluster is reported as any failed write or read, with the
 * API server's message.
 */
import { describeKubeError, statusCodeOf } from "../kube.ts";
import { NoKindMatchError, type RestMapper } from "./discovery.ts";
import type { DynamicClient, ObjectRef } from "./dynamic.ts";
import { evaluateConditionRules } from "./condition-rules.ts";
import type { ApplyStrategy } from "./kubefleet-strategy.ts";
import { collectFeedback } from "./feedback.ts";
import { getPointer, pointers, setPointer } from "./jsonpath.ts";
import type { ManifestOutcome } from "./conditions.ts";
import { rolloutState } from "./rollout.ts";
import type { LiveTracker } from "./tracker.ts";
import { cloneJson, isObj, type AppliedResource, type ManifestConfig, type Obj, type ResourceMeta, type UpdateStrategy } from "./types.ts";

/** The field manager of the `Update` strategy and the default of `ServerSideApply` (OCM's). */
export const WORK_FIELD_MANAGER = "work-agent";

/** What the agent remembers about one manifest between passes (in memory). */
export interface ManifestMemo {
  /** Set after a failed write: not retried while the work's generation and the live resourceVersion stay the same. */
  failure?: { generation: number; liveResourceVersion: string | undefined; message: string };
  /** `OnSpokeChange` ignoreFields: the work's values last applied, by JSONPath (JSON-encoded). */
  hubValues?: Record<string, string>;
  /**
   * The last pass's result (without the live object), reused while the tracker says the object
   * has not changed since and the work's spec is the same.
   */
  cached?: Omit<ApplyManifestResult, "memo">;
  /** KubeFleet works: when the manifest of this hash was first applied (epoch ms), the start of `unavailablePeriodSeconds`. */
  appliedSince?: { hash: string; at: number };
}

/** How a work a KubeFleet placement rendered is applied (the work's annotations, kubefleet.ts). */
export interface FleetApplyOptions {
  /** The placement's applyStrategy. */
  strategy: ApplyStrategy;
  /** `unavailablePeriodSeconds` of its rollout. */
  unavailablePeriodSeconds: number;
  /** Whether the work holds the object of this uid (its record): KubeFleet's ownership. */
  owns: (uid: string) => boolean;
  /** The clock, epoch ms. */
  now: number;
}

/** Input of {@link applyManifest}. */
export interface ApplyManifestInput {
  /** The manifest as it is in `spec.workload.manifests`. */
  manifest: unknown;
  /** Its index in `spec.workload.manifests` (`resourceMeta.ordinal`). */
  ordinal: number;
  /** The work's `spec.manifestConfigs`. */
  configs: readonly ManifestConfig[];
  /** The work's `metadata.generation`. */
  generation: number;
  /** True when the work is new or its spec changed: apply unconditionally; false for a resync (drift repair only). */
  specChanged: boolean;
  /**
   * The manifest (or its whole work) reported `Complete=True` (a condition rule): OCM no longer
   * updates it, so nothing is written (drift is not repaired, a missing object not re-created);
   * it is still read for status.
   */
  completed?: boolean;
  /** What was remembered about this manifest, if anything. */
  memo: ManifestMemo | undefined;
  /** Tells which objects changed since the last pass (watches); without it every pass reads every object. */
  tracker?: LiveTracker;
  /** Labels and annotations naming the work (and its replica set and placement) set on every write. */
  trace?: { labels: Record<string, string>; annotations: Record<string, string> };
  /** Set when the work may not be applied at all (an executor the agent cannot act as): the manifest fails with it. */
  refused?: string;
  /** Set for a work a KubeFleet placement rendered: applied as KubeFleet's work applier does (fleet-apply.ts). */
  fleet?: FleetApplyOptions;
}

/** Result of {@link applyManifest}. */
export interface ApplyManifestResult {
  /** Input of the status (conditions.ts). */
  outcome: ManifestOutcome;
  /** The object this work now holds (absent for ReadOnly manifests and objects that do not exist). */
  applied?: AppliedResource;
  /** The strategy used. */
  strategy: NonNullable<UpdateStrategy["type"]>;
  /** What to remember for the next pass. */
  memo: ManifestMemo;
  /** Whether the manifest's config asks for `feedbackScrapeType: Watch` (status reported on change). */
  watch?: boolean;
}

/** Whether `id` (a resourceIdentifier, `*` allowed in name and namespace) names the object. */
function identifies(c: ManifestConfig, group: string, resource: string, namespace: string, name: string): boolean {
  const id = c.resourceIdentifier;
  const match = (want: string | undefined, have: string) => (want ?? "") === have || want === "*";
  return (id.group ?? "") === group && id.resource === resource && match(id.name, name) && match(id.namespace, namespace);
}

/**
 * Whether every field of `desired` has the same value in `live` (lists: same length, element by
 * element). At the top level only `metadata.labels` and `metadata.annotations` of the metadata
 * are compared, and `status` is ignored.
 *
 * @example isSubset({spec: {replicas: 2}}, {spec: {replicas: 2, paused: false}}) // true
 */
export function isSubset(desired: unknown, live: unknown, top = true): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSubset(d, live[i], false));
  }
  if (isObj(desired)) {
    if (!isObj(live)) return false;
    for (const [k, v] of Object.entries(desired)) {
      if (top && (k === "status" || k === "apiVersion" || k === "kind")) continue;
      if (top && k === "metadata") {
        const dm = isObj(v) ? v : {};
        const lm = isObj(live.metadata) ? live.metadata : {};
        if (!isSubset(dm.labels ?? {}, lm.labels ?? {}, false) || !isSubset(dm.annotations ?? {}, lm.annotations ?? {}, false)) return false;
        continue;
      }
      if (v === null || v === undefined) continue;
      if (!isSubset(v, live[k], false)) return false;
    }
    return true;
  }
  return desired === live;
}

interface IgnoredPath {
  path: string;
  onSpokeChange: boolean;
}

function ignoredPaths(strategy: UpdateStrategy | undefined): IgnoredPath[] {
  return (strategy?.serverSideApply?.ignoreFields ?? []).flatMap((f) =>
    (f.jsonPaths ?? []).map((path) => ({ path, onSpokeChange: f.condition === "OnSpokeChange" })),
  );
}

function stripPaths(obj: Obj, paths: readonly IgnoredPath[]): Obj {
  const out = cloneJson(obj);
  for (const p of paths) for (const ptr of pointers(out, p.path).reverse()) setPointer(out, ptr, undefined);
  return out;
}

/** `obj` with the trace's labels and annotations merged over its own (a copy; `obj` itself when there is no trace). */
function withTrace(obj: Obj, trace: ApplyManifestInput["trace"]): Obj {
  if (!trace) return obj;
  const out = cloneJson(obj);
  const meta: Obj = isObj(out.metadata) ? out.metadata : {};
  const merged = (own: unknown, add: Record<string, string>) => ({ ...(isObj(own) ? own : {}), ...add });
  if (Object.keys(trace.labels).length > 0) meta.labels = merged(meta.labels, trace.labels);
  if (Object.keys(trace.annotations).length > 0) meta.annotations = merged(meta.annotations, trace.annotations);
  out.metadata = meta;
  return out;
}

function errorMessage(e: unknown): string {
  if (e instanceof NoKindMatchError) return e.message;
  return describeKubeError(e);
}

/**
 * Applies one manifest per its strategy (see the module doc) and reads its live state.
 *
 * @param client the member cluster's dynamic client.
 * @param mapper discovery-backed kind → resource mapper.
 * @param input the manifest, its ordinal and config, and what is remembered about it.
 * @returns the outcome for the status, the applied resource (for the AppliedManifestWork
 *   record) and the memo to keep; never throws (every failure is in `outcome.applied` or
 *   `outcome.live`).
 */
export async function applyManifest(client: DynamicClient, mapper: RestMapper, input: ApplyManifestInput): Promise<ApplyManifestResult> {
  const { manifest, ordinal, generation } = input;
  const m: Obj = isObj(manifest) ? manifest : {};
  const mMeta: Obj = isObj(m.metadata) ? m.metadata : {};
  const apiVersion = typeof m.apiVersion === "string" ? m.apiVersion : "";
  const kind = typeof m.kind === "string" ? m.kind : "";
  const name = typeof mMeta.name === "string" ? mMeta.name : "";
  const slash = apiVersion.indexOf("/");
  const meta: ResourceMeta = {
    ordinal,
    group: slash < 0 ? "" : apiVersion.slice(0, slash),
    version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
    kind,
    resource: "",
    name,
    namespace: typeof mMeta.namespace === "string" ? mMeta.namespace : "",
  };
  const fail = (message: string, memo: ManifestMemo = {}): ApplyManifestResult => ({
    outcome: { meta, applied: { ok: false, message }, live: undefined, feedback: undefined, rollout: undefined },
    strategy: "Update",
    memo,
  });
  if (!apiVersion || !kind || !name) return fail("the manifest needs apiVersion, kind and metadata.name");
  let mapping;
  try {
    mapping = await mapper.mapping(apiVersion, kind);
  } catch (e) {
    return fail(`Failed to find the resource of ${kind} ${apiVersion}: ${errorMessage(e)}`);
  }
  meta.resource = mapping.resource;
  meta.namespace = mapping.namespaced ? meta.namespace || "default" : "";
  if (input.refused !== undefined) return fail(`Failed to apply manifest: ${input.refused}`);
  const ref: ObjectRef = { group: meta.group, version: meta.version, resource: meta.resource, namespace: meta.namespace, name };
  const config = input.configs.find((c) => identifies(c, meta.group, meta.resource, meta.namespace, name));
  const strategy = config?.updateStrategy?.type ?? "Update";
  const desired: Obj = cloneJson(m);
  if (mapping.namespaced) desired.metadata = { ...mMeta, namespace: meta.namespace };
  // What is written: the manifest and the work's trace; what drift is judged on: the manifest.
  const traced = withTrace(desired, input.trace);
  const tracker = input.tracker;
  const cached = input.memo?.cached;
  const watch = config?.feedbackScrapeType === "Watch";
  // A cached result is reused while nothing changed, unless it waits for a time (an untrackable
  // object of a KubeFleet work becomes available unavailablePeriodSeconds after it was applied).
  const availableAt = cached?.outcome.fleet?.availableAt;
  const waiting = availableAt !== undefined && availableAt > (input.fleet?.now ?? 0);
  if (!input.specChanged && cached && !waiting && tracker?.unchanged(ref)) return { ...cached, memo: input.memo ?? {}, watch };
  const memo: ManifestMemo = { ...(input.memo?.hubValues ? { hubValues: input.memo.hubValues } : {}) };
  if (input.fleet) return applyFleet(client, input, input.fleet, { ref, meta, desired, traced, kind, config, watch, memo });

  // Read the live object.
  tracker?.beginRead(ref);
  let live: Obj | undefined;
  let readError: string | undefined;
  try {
    live = await client.get(ref);
  } catch (e) {
    if (statusCodeOf(e) !== 404) readError = describeKubeError(e);
  }

  let applyFailure: string | undefined;
  const liveRv = (o: Obj | undefined) => (isObj(o?.metadata) && typeof o.metadata.resourceVersion === "string" ? o.metadata.resourceVersion : undefined);
  const previousFailure = input.memo?.failure;
  const write = async (fn: () => Promise<Obj>): Promise<void> => {
    if (input.completed) return;
    if (!input.specChanged && previousFailure && previousFailure.generation === generation && previousFailure.liveResourceVersion === liveRv(live)) {
      // The same write failed against the same object: do not retry it in a loop.
      applyFailure = previousFailure.message;
      memo.failure = previousFailure;
      return;
    }
    try {
      live = await fn();
      readError = undefined;
    } catch (e) {
      applyFailure = `Failed to apply manifest: ${errorMessage(e)}`;
      // A denial (403) is lifted by an RBAC change the agent does not see: retried at the next
      // pass, as OCM requeues an executor's denial; other failures wait for a change.
      if (statusCodeOf(e) !== 403) memo.failure = { generation, liveResourceVersion: liveRv(live), message: applyFailure };
    }
  };

  if (readError === undefined) {
    if (strategy === "CreateOnly") {
      if (!live) await write(() => client.create(ref, ref.namespace, traced, WORK_FIELD_MANAGER));
    } else if (strategy === "Update") {
      if (input.specChanged || !live || !isSubset(desired, live)) await write(() => client.apply(ref, traced, WORK_FIELD_MANAGER, true));
    } else if (strategy === "ServerSideApply") {
      const ssa = config?.updateStrategy?.serverSideApply;
      const manager = ssa?.fieldManager || WORK_FIELD_MANAGER;
      const ignored = ignoredPaths(config?.updateStrategy);
      let body = traced;
      let compare = desired;
      try {
        compare = stripPaths(desired, ignored);
        if (live && ignored.length > 0) {
          body = cloneJson(traced);
          const hubValues: Record<string, string> = {};
          for (const p of ignored) {
            const hubValue = JSON.stringify(pointers(desired, p.path).map((ptr) => getPointer(desired, ptr)));
            hubValues[p.path] = hubValue;
            const hubChanged = p.onSpokeChange && input.memo?.hubValues?.[p.path] !== undefined && input.memo.hubValues[p.path] !== hubValue;
            if (hubChanged) continue;
            for (const ptr of pointers(live, p.path)) setPointer(body, ptr, cloneJson(getPointer(live, ptr)));
          }
          memo.hubValues = hubValues;
        } else if (ignored.length > 0) {
          memo.hubValues = Object.fromEntries(ignored.map((p) => [p.path, JSON.stringify(pointers(desired, p.path).map((ptr) => getPointer(desired, ptr)))]));
        }
      } catch (e) {
        applyFailure = `Failed to apply manifest: ignoreFields: ${(e as Error).message}`;
      }
      if (applyFailure === undefined && (input.specChanged || !live || !isSubset(compare, live))) {
        await write(() => client.apply(ref, body, manager, ssa?.force === true));
      }
    }
  } else if (strategy !== "ReadOnly") {
    applyFailure = `Failed to read the live object: ${readError}`;
  }

  const outcome: ManifestOutcome = {
    meta,
    applied: applyFailure === undefined ? { ok: true } : { ok: false, message: applyFailure },
    live: live ? { state: "found", object: live } : readError !== undefined ? { state: "error", message: readError } : { state: "missing" },
    feedback: undefined,
    rollout: undefined,
  };
  if (config?.feedbackRules?.length) {
    outcome.feedback = live
      ? collectFeedback(live, meta.group, meta.version, kind, config.feedbackRules)
      : { values: [], errors: ["the resource is not on the cluster"] };
  }
  if (live && config?.conditionRules?.length) outcome.rules = await evaluateConditionRules(live, meta.group, meta.version, kind, config.conditionRules);
  let applied: AppliedResource | undefined;
  if (live && strategy !== "ReadOnly") {
    outcome.rollout = rolloutState(meta.group, kind, live);
    const uid = isObj(live.metadata) && typeof live.metadata.uid === "string" ? live.metadata.uid : "";
    applied = { group: meta.group, version: meta.version, resource: meta.resource, namespace: meta.namespace, name, uid };
  }
  if (tracker && applyFailure === undefined && readError === undefined) {
    tracker.note(ref, liveRv(live));
    // Keep what the status needs, not the object.
    const kept: ManifestOutcome = { ...outcome, live: outcome.live?.state === "found" ? { state: "found", object: {} } : outcome.live };
    memo.cached = { outcome: kept, ...(applied ? { applied } : {}), strategy };
  }
  return { outcome, ...(applied ? { applied } : {}), strategy, memo, watch };
}

let fleetApplier: Promise<typeof import("./fleet-apply.ts")> | undefined;

/** The KubeFleet branch of {@link applyManifest}: fleet-apply.ts, then the outcome in the shape the status needs. */
async function applyFleet(
  client: DynamicClient,
  input: ApplyManifestInput,
  fleet: FleetApplyOptions,
  c: { ref: ObjectRef; meta: ResourceMeta; desired: Obj; traced: Obj; kind: string; config: ManifestConfig | undefined; watch: boolean; memo: ManifestMemo },
): Promise<ApplyManifestResult> {
  const tracker = input.tracker;
  tracker?.beginRead(c.ref);
  // Loaded when a KubeFleet work is first applied: an agent without one does not carry it.
  const { applyFleetManifest } = await (fleetApplier ??= import("./fleet-apply.ts"));
  const r = await applyFleetManifest({
    client,
    ref: c.ref,
    desired: c.desired,
    traced: c.traced,
    strategy: fleet.strategy,
    fieldManager: c.config?.updateStrategy?.serverSideApply?.fieldManager || WORK_FIELD_MANAGER,
    owns: fleet.owns,
    readOnly: input.completed === true,
    now: fleet.now,
    unavailablePeriodSeconds: fleet.unavailablePeriodSeconds,
    ...(input.memo?.appliedSince ? { appliedSince: input.memo.appliedSince } : {}),
  });
  const memo = c.memo;
  if (r.appliedSince) memo.appliedSince = r.appliedSince;
  const ok =
    r.fleet.result === "Applied" || r.fleet.result === "AppliedWithFailedDriftDetection" || r.fleet.result === "NoDiffFound" || r.fleet.result === "FoundDiff";
  const outcome: ManifestOutcome = {
    meta: c.meta,
    applied: ok ? { ok: true } : { ok: false, message: r.fleet.error ?? r.fleet.result },
    live: r.live ? { state: "found", object: r.live } : r.readError !== undefined ? { state: "error", message: r.readError } : { state: "missing" },
    feedback: undefined,
    rollout: undefined,
    fleet: r.fleet,
  };
  if (c.config?.feedbackRules?.length) {
    outcome.feedback = r.live
      ? collectFeedback(r.live, c.meta.group, c.meta.version, c.kind, c.config.feedbackRules)
      : { values: [], errors: ["the resource is not on the cluster"] };
  }
  if (r.live && c.config?.conditionRules?.length)
    outcome.rules = await evaluateConditionRules(r.live, c.meta.group, c.meta.version, c.kind, c.config.conditionRules);
  let applied: AppliedResource | undefined;
  if (r.live && r.held) {
    outcome.rollout = rolloutState(c.meta.group, c.kind, r.live);
    const uid = isObj(r.live.metadata) && typeof r.live.metadata.uid === "string" ? r.live.metadata.uid : "";
    applied = { group: c.meta.group, version: c.meta.version, resource: c.meta.resource, namespace: c.meta.namespace, name: c.meta.name, uid };
  }
  const liveRv = isObj(r.live?.metadata) && typeof r.live.metadata.resourceVersion === "string" ? r.live.metadata.resourceVersion : undefined;
  if (tracker && ok && r.readError === undefined) {
    tracker.note(c.ref, liveRv);
    const kept: ManifestOutcome = { ...outcome, live: outcome.live?.state === "found" ? { state: "found", object: {} } : outcome.live };
    memo.cached = { outcome: kept, ...(applied ? { applied } : {}), strategy: "ServerSideApply" };
  }
  return { outcome, ...(applied ? { applied } : {}), strategy: "ServerSideApply", memo, watch: c.watch };
}
