/**
 * The ManifestWorkReplicaSet controller (OCM `pkg/work/hub/controllers/manifestworkreplicasetcontroller`,
 * ../shared/reference/ocm-semantics.md section 4): one ManifestWork per cluster its placements
 * decide, rolled out by each placementRef's rollout strategy (src/work/rollout.ts), and OCM's
 * status (summary, placementSummary, PlacementVerified, PlacementRolledOut, ManifestworkApplied).
 *
 * Runs are serialised per replica set in its Durable Object (durable-objects/replicaset.ts,
 * named `<namespace>/<name>`); every run reads the current state from D1 and writes through
 * the store (src/store/store.ts), so works delivery and watches see the controller's writes like any other.
 *
 * Triggers (each names exactly one replica set, or the ones referring to a placement):
 * - a write of the replica set that creates it, changes its spec (generation) or starts its
 *   deletion: run before the write returns;
 * - a status report on one of its works (a status change of a work carrying the
 *   {@link MWRS_LABEL} label): a run shortly after (the object's alarm, at once; reports that
 *   arrive during a run coalesce into the next);
 * - a change of a placement's decisions (a PlacementDecision's write): run before the
 *   scheduler's caller returns ({@link replicaSetsForPlacements}, from the hook);
 * - the deletion of one of its works, the removal of the replica set object or of its finalizer
 *   by someone else: a run shortly after as well, never awaited, since the controller's own runs
 *   make such writes;
 * - rollout timers (minSuccessTime, progressDeadline): the object's `replicaset` timer at the
 *   moment due (the controller manifest, src/controllers.ts).
 * The controller's own writes (works' spec and metadata, the replica set's status and
 * finalizer) trigger nothing, so a run never waits for a run of its own object.
 */
import { ApiError } from "../k8s/errors.ts";
import { resourceKey } from "../k8s/kind.ts";
import { setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind, MWRS_LABEL, PLACEMENT_NAME_LABEL } from "../kinds/manifestwork.ts";
import { PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL } from "../scheduling/index.ts";
import type { Env } from "../env.ts";
import { type ManyWrite } from "../store/store.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { CommitGroups } from "../store/group-commit.ts";
import { sharedRead, type AfterCommitHook, type Change, type HookTarget } from "../store/hooks.ts";
import { classifyRollout, TEMPLATE_WRITTEN_ANNOTATION, type DecisionGroup, type RolloutStrategy, type WorkCondition } from "./rollout.ts";
import { canonicalJson } from "../k8s/canonical-json.ts";
import { racing } from "../k8s/racing.ts";
import { decisionsMoved } from "../placement/changes.ts";

/** The finalizer the controller keeps on a replica set until its works are deleted (OCM). */
export const MWRS_FINALIZER = "work.open-cluster-management.io/manifest-work-cleanup";
export { TEMPLATE_WRITTEN_ANNOTATION };

/** The value of {@link MWRS_LABEL} for a replica set: `<namespace>.<name>` (OCM). */
export function replicaSetKey(namespace: string, name: string): string {
  return `${namespace}.${name}`;
}

/**
 * The name of the ManifestWork a replica set generates in each cluster's namespace:
 * `<mwrs namespace>.<mwrs name>`, the same as its {@link MWRS_LABEL} value. OCM first named the
 * work exactly after the replica set, so two replica sets of the same name in different
 * namespaces fought over one work; it now uses `generateName`, which needs a lookup by label
 * for every work. Prefixing the namespace keeps the name deterministic (one point read, and a
 * run that crashed half-way finds its works by name), unique across namespaces (a namespace is
 * a DNS label and has no dot), and still readable. The kind's validation keeps it at most 63
 * characters (it is also a label value).
 */
export function generatedWorkName(namespace: string, name: string): string {
  return replicaSetKey(namespace, name);
}

/** Splits a {@link MWRS_LABEL} value into the replica set's namespace and name, or null. */
function parseKey(value: string | undefined): { namespace: string; name: string } | null {
  const i = value?.indexOf(".") ?? -1;
  if (!value || i <= 0 || i === value.length - 1) return null;
  return { namespace: value.slice(0, i), name: value.slice(i + 1) };
}

/** JSON with object keys sorted, so that equal contents compare equal (src/work/rollout.ts). */
const canonical = canonicalJson;

/**
 * A work's spec in {@link canonical} form, computed once per work object: the replica set
 * object keeps its works between runs (WorksCache), so a run compares each with the template
 * without serialising every work again.
 */
const specJsonOf = new WeakMap<KubeObject, string>();
function specJson(w: KubeObject): string {
  let json = specJsonOf.get(w);
  if (json === undefined) {
    json = canonical(w.spec ?? {});
    specJsonOf.set(w, json);
  }
  return json;
}

interface PlacementRef {
  name: string;
  rolloutStrategy?: RolloutStrategy;
}

interface ReplicaSetSpec {
  manifestWorkTemplate?: Record<string, unknown>;
  placementRefs?: PlacementRef[];
  cascadeDeletionPolicy?: "Background" | "Foreground";
}

/** OCM's ManifestWorkReplicaSetSummary (desiredTotal and updated are not populated, as in OCM). */
interface Summary {
  total: number;
  applied: number;
  available: number;
  progressing: number;
  degraded: number;
}

/**
 * The outcome of one run: `recheckAt` (epoch ms) when a rollout timer is due, `rerun` when a
 * write lost a race and the run should be repeated at once, `gone` when the replica set no
 * longer exists and nothing of it remains (its object may forget it).
 */
export interface RunOutcome {
  recheckAt?: number;
  rerun?: boolean;
  gone?: boolean;
  /** The run wrote as many works as one run may ({@link MAX_WORK_WRITES_PER_RUN}): run again at once to go on. */
  more?: boolean;
}

/**
 * Most works one run writes: a run is one invocation (a request or an alarm), and on Cloudflare
 * an invocation of the Paid plan makes at most 10,000 subrequests (Durable Object calls and D1
 * queries; developers.cloudflare.com/workers/platform/limits, read 2026-11-26; it was 1,000):
 * each work's write tells its cluster's Durable Object, and its D1 batch and outbox deletion are
 * shared by 50 works, so 2,000 works cost about 2,100. A replica set over a larger fleet writes
 * its works over several runs, each continuing at once where the last stopped.
 */
export const MAX_WORK_WRITES_PER_RUN = 2_000;

/** What the Durable Object learns from a run while it happens, and the works it already holds. */
export interface RunHooks {
  /** Called with a cluster's name before the run deletes its work there. */
  deleting?(cluster: string): void;
  /** The object's copy of the works named after the replica set, used instead of reading them all. */
  cache?: WorksCache;
}

/** How long a {@link WorksCache} is trusted before a run reads the works again, in milliseconds. */
export const WORKS_RESYNC_MS = 60_000;

/**
 * A replica set object's copy of the ManifestWorks named after its replica set, one per cluster
 * namespace, so that a run reads none of them back: filled by a run's full read (when empty,
 * stale, or invalidated), then kept by the run's own writes and by the works the after-commit hook
 * hands over (an agent's status report carries the work as stored). A write of a work that reaches
 * the object without the work (a hook run again by the outbox sweep), a lost write race, or
 * {@link WORKS_RESYNC_MS} without a full read empties it, as an informer relists; a newer
 * resourceVersion never gives way to an older one.
 */
export class WorksCache {
  private works: Map<string, KubeObject> | null = null;
  private filledAt = 0;

  /** The works held (any owner's), or null when a run must read them (`now` epoch ms). */
  current(now: number): KubeObject[] | null {
    if (!this.works || now - this.filledAt > WORKS_RESYNC_MS) return null;
    return [...this.works.values()];
  }

  /** Replaces what is held with a full read made at `now` (epoch ms). */
  fill(works: KubeObject[], now: number): void {
    this.works = new Map(works.map((w) => [w.metadata.namespace!, w]));
    this.filledAt = now;
  }

  /**
   * Takes a work as stored (kept only when newer than the copy held). A work of the same uid and
   * generation as the copy held has its spec (a ManifestWork's generation moves with its spec: an
   * agent's status report keeps it), so the copy's {@link specJson} is carried over, not computed again.
   */
  apply(work: KubeObject): void {
    if (!this.works) return;
    const held = this.works.get(work.metadata.namespace!);
    if (held && Number(held.metadata.resourceVersion) > Number(work.metadata.resourceVersion)) return;
    const json = held && held.metadata.uid === work.metadata.uid && held.metadata.generation === work.metadata.generation ? specJsonOf.get(held) : undefined;
    if (json !== undefined && !specJsonOf.has(work)) specJsonOf.set(work, json);
    this.works.set(work.metadata.namespace!, work);
  }

  /** Drops the work of `cluster` (removed). */
  remove(cluster: string): void {
    this.works?.delete(cluster);
  }

  /** Forgets everything: the next run reads the works again. */
  invalidate(): void {
    this.works = null;
  }
}

const isTrue = (w: KubeObject, type: string) => ((w.status?.conditions ?? []) as WorkCondition[]).some((c) => c.type === type && c.status === "True");

/** OCM's summary counts (conditions True at any generation) over works not being deleted. */
function summarize(works: KubeObject[]): Summary {
  const live = works.filter((w) => !w.metadata.deletionTimestamp);
  return {
    total: live.length,
    applied: live.filter((w) => isTrue(w, "Applied")).length,
    available: live.filter((w) => isTrue(w, "Available")).length,
    progressing: live.filter((w) => isTrue(w, "Progressing")).length,
    degraded: live.filter((w) => isTrue(w, "Degraded")).length,
  };
}

/** A placement's decision groups from its status.decisionGroups, with PlacementDecisions not listed there grouped by their labels. */
export function decisionGroups(placement: KubeObject | null, decisions: KubeObject[]): DecisionGroup[] {
  const clustersOf = (pd: KubeObject) => ((pd.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []).map((d) => d.clusterName);
  const byName = new Map(decisions.map((d) => [d.metadata.name, d]));
  const groups = new Map<number, DecisionGroup>();
  const covered = new Set<string>();
  const add = (index: number, name: string, clusters: string[]) => {
    const g = groups.get(index) ?? { index, name, clusters: [] };
    g.clusters.push(...clusters);
    groups.set(index, g);
  };
  const listed =
    (placement?.status as { decisionGroups?: { decisionGroupIndex: number; decisionGroupName: string; decisions: string[] }[] } | undefined)?.decisionGroups ??
    [];
  for (const g of listed) {
    const clusters: string[] = [];
    for (const pdName of g.decisions) {
      const pd = byName.get(pdName);
      if (!pd) continue;
      covered.add(pdName);
      clusters.push(...clustersOf(pd));
    }
    add(g.decisionGroupIndex, g.decisionGroupName, clusters);
  }
  for (const pd of decisions) {
    if (covered.has(pd.metadata.name)) continue;
    const index = Number(pd.metadata.labels?.[DECISION_GROUP_INDEX_LABEL] ?? "0");
    add(Number.isInteger(index) ? index : 0, pd.metadata.labels?.[DECISION_GROUP_NAME_LABEL] ?? "", clustersOf(pd));
  }
  return [...groups.values()].sort((a, b) => a.index - b.index);
}

/** Deletes a work (only the one read: uid precondition); a work already gone is fine. @returns false when it changed meanwhile */
async function deleteWork(env: Env, work: KubeObject, hooks: RunHooks): Promise<boolean> {
  hooks.deleting?.(work.metadata.namespace!);
  try {
    await admittedStoreOf(env, ManifestWorkKind).write(
      work.metadata.namespace!,
      work.metadata.name,
      { verb: "delete", preconditions: { uid: work.metadata.uid } },
      { known: work },
    );
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.reason === "NotFound") return true;
    if (e instanceof ApiError && e.reason === "Conflict") return false;
    throw e;
  }
}

/** Removes the controller's finalizer (the generic write machinery then finishes the deletion). */
async function finalize(env: Env, mwrs: KubeObject): Promise<RunOutcome> {
  const finalizers = (mwrs.metadata.finalizers ?? []).filter((f) => f !== MWRS_FINALIZER);
  if (finalizers.length === (mwrs.metadata.finalizers ?? []).length) return {};
  const body = { ...mwrs, metadata: { ...mwrs.metadata, finalizers } };
  const r = await racing(() => admittedStoreOf(env, ManifestWorkReplicaSetKind).write(mwrs.metadata.namespace!, mwrs.metadata.name, { verb: "update", body }));
  if (r === "lost") return { rerun: true };
  return r ? {} : { gone: true };
}

/**
 * Reconciles one replica set at `nowMs` (epoch ms): reads it, its placements' decisions and its
 * works from D1, creates, updates and deletes works through the store, and writes its
 * status through the status subresource when it changed. On deletion it deletes the works and
 * then removes its finalizer (Foreground: only once the works are gone; Background, the
 * default: as soon as their deletion is requested). A replica set that no longer exists gets
 * its leftover works deleted.
 * @throws errors of D1 or an unexpected write failure (the caller retries later); lost write
 *   races are reported as `rerun`.
 */
export async function runReplicaSet(env: Env, namespace: string, name: string, nowMs: number, hooks: RunHooks = {}): Promise<RunOutcome> {
  const key = replicaSetKey(namespace, name);
  const workName = generatedWorkName(namespace, name);
  let mwrs = await admittedStoreOf(env, ManifestWorkReplicaSetKind).get(namespace, name);
  const cache = hooks.cache;
  let named = cache?.current(nowMs) ?? null;
  if (!named) {
    named = await admittedStoreOf(env, ManifestWorkKind).listNamed(workName);
    cache?.fill(named, nowMs);
  }
  const ours = named.filter((w) => w.metadata.labels?.[MWRS_LABEL] === key);

  if (!mwrs || mwrs.metadata.deletionTimestamp) {
    // The works are being deleted: what the object holds is no longer worth keeping.
    cache?.invalidate();
    let raced = false;
    for (const w of ours) if (!w.metadata.deletionTimestamp && !(await deleteWork(env, w, hooks))) raced = true;
    if (raced) return { rerun: true };
    if (!mwrs) return ours.length === 0 ? { gone: true } : {};
    const foreground = (mwrs.spec as ReplicaSetSpec | undefined)?.cascadeDeletionPolicy === "Foreground";
    if (foreground && (await admittedStoreOf(env, ManifestWorkKind).listNamed(workName)).some((w) => w.metadata.labels?.[MWRS_LABEL] === key)) return {};
    return finalize(env, mwrs);
  }

  if (!(mwrs.metadata.finalizers ?? []).includes(MWRS_FINALIZER)) {
    const body = { ...mwrs, metadata: { ...mwrs.metadata, finalizers: [...(mwrs.metadata.finalizers ?? []), MWRS_FINALIZER] } };
    const r = await racing(() => admittedStoreOf(env, ManifestWorkReplicaSetKind).write(namespace, name, { verb: "update", body }));
    if (r === "lost" || !r) return { rerun: true };
    mwrs = r;
  }

  const spec = (mwrs.spec ?? {}) as ReplicaSetSpec;
  // The spec a work stores for the template (the ManifestWork kind's defaults applied), so that
  // defaults never make a written work look out of date.
  const defaulted = {
    apiVersion: "",
    kind: "",
    metadata: { name: "", uid: "", resourceVersion: "", creationTimestamp: "" },
    spec: structuredClone(spec.manifestWorkTemplate ?? {}),
  } as KubeObject;
  ManifestWorkKind.defaults?.(defaulted);
  const template = defaulted.spec ?? {};
  const templateJson = canonical(template);
  const now = new Date(nowMs).toISOString();
  const allDecisions = (await admittedStoreOf(env, PlacementDecisionKind).list(namespace)).items;
  const works = new Map(ours.map((w) => [w.metadata.namespace!, w]));
  const foreign = new Set(named.filter((w) => w.metadata.labels?.[MWRS_LABEL] !== key).map((w) => w.metadata.namespace!));
  const owner = new Map<string, string>();
  const notFound: string[] = [];
  let placementMissing = false;
  const notes: string[] = [];
  let decidedTotal = 0;
  let succeeded = 0;
  let breach = false;
  let recheckAt = Infinity;
  let raced = false;
  const perPlacement: { name: string; groups: number; decided: number; clusters: string[] }[] = [];
  let budget = MAX_WORK_WRITES_PER_RUN;
  let more = false;

  for (const ref of spec.placementRefs ?? []) {
    const placement = await admittedStoreOf(env, PlacementKind).get(namespace, ref.name);
    const pds = allDecisions.filter((d) => d.metadata.labels?.[PLACEMENT_LABEL] === ref.name);
    if (!placement || pds.length === 0) notFound.push(ref.name);
    if (!placement) placementMissing = true;
    const groups = decisionGroups(placement, pds);
    const decided = new Set(groups.flatMap((g) => g.clusters));
    // A cluster decided by an earlier placementRef keeps that ref's work (one work per cluster);
    // a work being deleted is recreated once it is gone; another owner's work is left alone.
    const mine = (c: string) => !owner.has(c) && !foreign.has(c) && !works.get(c)?.metadata.deletionTimestamp;
    for (const c of decided) if (foreign.has(c)) notes.push(`a ManifestWork ${workName} not created by this replica set exists in ${c}`);
    const usable = groups.map((g) => ({ ...g, clusters: [...new Set(g.clusters)].filter(mine) }));
    const clusters = [...new Set(usable.flatMap((g) => g.clusters))];
    for (const c of clusters) owner.set(c, ref.name);
    decidedTotal += decided.size;
    perPlacement.push({ name: ref.name, groups: groups.length, decided: decided.size, clusters });

    // The same classification as the dashboard's rollout page (src/ui/app/replicasets.tsx).
    const classified = classifyRollout(ref.rolloutStrategy, usable, works, templateJson, nowMs, (w) => specJson(w as KubeObject));
    succeeded += classified.succeeded;
    const rollout = classified.rollout;
    if (rollout.maxFailureBreach) breach = true;
    if (rollout.recheckAfterMs !== undefined) recheckAt = Math.min(recheckAt, nowMs + rollout.recheckAfterMs);

    const apply = new Set(rollout.toApply);
    // The works of this ref's clusters are written together, in D1 batches (writeStoredMany).
    const writes: { cluster: string; write: ManyWrite }[] = [];
    for (const c of clusters) {
      const w = works.get(c);
      const labels = { ...(w?.metadata.labels ?? {}), [MWRS_LABEL]: key, [PLACEMENT_NAME_LABEL]: ref.name };
      if (apply.has(c)) {
        const metadata = {
          ...(w?.metadata ?? {}),
          name: workName,
          namespace: c,
          labels,
          annotations: { ...(w?.metadata.annotations ?? {}), [TEMPLATE_WRITTEN_ANNOTATION]: now },
        };
        const body = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata, spec: structuredClone(template) };
        writes.push({ cluster: c, write: { namespace: c, name: workName, req: w ? { verb: "update", body } : { verb: "create", body }, known: w ?? null } });
      } else if (w && w.metadata.labels?.[PLACEMENT_NAME_LABEL] !== ref.name) {
        // The cluster moved to this placementRef: relabel only, its content follows the rollout.
        writes.push({
          cluster: c,
          write: { namespace: c, name: workName, req: { verb: "update", body: { ...w, metadata: { ...w.metadata, labels } } }, known: w },
        });
      }
    }
    if (writes.length > budget) {
      more = true;
      writes.length = budget;
    }
    budget -= writes.length;
    const written = await admittedStoreOf(env, ManifestWorkKind).writeMany(writes.map((x) => x.write));
    written.forEach((r, i) => {
      if (r === "lost" || !r) raced = true;
      else {
        works.set(writes[i]!.cluster, r);
        cache?.apply(r);
      }
    });
  }

  // Clusters no placement decides any more lose their work at once (deleted together; only the
  // work read: uid precondition, a work already gone is fine, one changed meanwhile is a rerun).
  // A missing Placement (not one without decisions) keeps every work, as OCM's deploy reconciler
  // stops at PlacementDecisionNotFound: a Placement deleted by mistake or not yet restored from a
  // backup does not tear the workloads down.
  const leaving = placementMissing ? [] : [...works].filter(([c, w]) => !owner.has(c) && !w.metadata.deletionTimestamp);
  if (leaving.length > budget) {
    more = true;
    leaving.length = budget;
  }
  for (const [c] of leaving) hooks.deleting?.(c);
  const deleted = await admittedStoreOf(env, ManifestWorkKind).writeMany(
    leaving.map(([c, w]) => ({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w })),
  );
  for (const [i, r] of deleted.entries()) {
    const [c, w] = leaving[i]!;
    if (r === "lost" && (await admittedStoreOf(env, ManifestWorkKind).get(c, w.metadata.name))) raced = true;
    // A work with finalizers stays, being deleted; one without is gone.
    if (r !== "lost" && r !== null && r.metadata.deletionTimestamp) cache?.apply(r);
    else cache?.remove(c);
    works.delete(c);
  }

  const all = [...works.values()];
  const summary = summarize(all);
  const conditions = structuredClone((mwrs.status?.conditions ?? []) as Condition[]);
  const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (notFound.length > 0) {
    setCondition(
      conditions,
      {
        type: "PlacementVerified",
        status: "False",
        reason: "PlacementDecisionNotFound",
        message: `no PlacementDecision found for placement ${notFound.join(", ")}`,
      },
      at,
    );
  } else if (decidedTotal === 0) {
    setCondition(conditions, { type: "PlacementVerified", status: "False", reason: "PlacementDecisionEmpty", message: "" }, at);
  } else {
    setCondition(conditions, { type: "PlacementVerified", status: "True", reason: "AsExpected", message: "" }, at);
  }
  const rolledOut = succeeded === owner.size && owner.size === decidedTotal;
  if (rolledOut) {
    setCondition(conditions, { type: "PlacementRolledOut", status: "True", reason: "Complete", message: "" }, at);
  } else {
    const stopped = breach ? "; the rollout stopped: more failures than maxFailures allows" : "";
    const extra = notes.length > 0 ? `; ${notes.join("; ")}` : "";
    setCondition(
      conditions,
      { type: "PlacementRolledOut", status: "False", reason: "Progressing", message: `${succeeded} of ${decidedTotal} clusters succeeded${stopped}${extra}` },
      at,
    );
  }
  if (summary.available === summary.total && summary.progressing === 0 && summary.degraded === 0) {
    setCondition(conditions, { type: "ManifestworkApplied", status: "True", reason: "AsExpected", message: "" }, at);
  } else if (summary.progressing > 0 && summary.degraded === 0) {
    setCondition(conditions, { type: "ManifestworkApplied", status: "False", reason: "Processing", message: "" }, at);
  } else {
    setCondition(conditions, { type: "ManifestworkApplied", status: "False", reason: "NotAsExpected", message: "" }, at);
  }
  const placementSummary = perPlacement.map((p) => {
    const placed = p.clusters.map((c) => works.get(c)).filter((w): w is KubeObject => w !== undefined);
    const current = placed.filter((w) => specJson(w) === templateJson).length;
    return { name: p.name, availableDecisionGroups: `${p.groups} (${current} / ${p.decided} clusters applied)`, summary: summarize(placed) };
  });
  const status = { ...(mwrs.status ?? {}), conditions, summary, placementSummary };
  if (canonical(status) !== canonical(mwrs.status ?? {})) {
    const r = await racing(() =>
      admittedStoreOf(env, ManifestWorkReplicaSetKind).write(
        namespace,
        name,
        { verb: "update", subresource: "status", body: { ...mwrs, status } },
        { known: mwrs },
      ),
    );
    if (r === "lost") raced = true;
  }
  // A lost race means another writer changed what the run holds: read everything again next time.
  if (raced) cache?.invalidate();
  return { ...(Number.isFinite(recheckAt) ? { recheckAt } : {}), ...(raced ? { rerun: true } : {}), ...(more ? { more: true } : {}) };
}

function stub(env: Env, namespace: string, name: string) {
  return env.REPLICASETS.getByName(`${namespace}/${name}`);
}

/**
 * Runs the replica set's controller and waits for a run that started after this call. When the
 * object cannot be reached, asks for a later run instead (its alarm).
 * @throws when neither could be done (the caller's outbox row keeps the work, or it logs)
 */
async function reconcileNow(env: Env, namespace: string, name: string): Promise<void> {
  try {
    await stub(env, namespace, name).reconcile(namespace, name);
  } catch (e) {
    console.error(`replica set ${namespace}/${name}: could not run it; asking for a later run`, e);
    await reconcileSoon(env, namespace, name);
  }
}

/**
 * One change a replica set's object is told of: a work as stored (`work`), its removal (`work`
 * null, with `deletedWorkIn`, the cluster's name), or a change whose object is unknown (`work`
 * undefined: an outbox sweep's; the object then reads every work at its next run).
 */
export interface ReplicaSetChange {
  deletedWorkIn?: string;
  work?: KubeObject | null;
}

/** A notification on its way to a replica set's object: which one, and the change. */
interface Notification {
  namespace: string;
  name: string;
  change: ReplicaSetChange;
}

/** Most notifications one group carries (one call per replica set among them). */
const NOTIFY_GROUP_MAX = 500;

/** The notification groups of each replica set namespace binding (one per isolate), made on first use. */
const notifyGroups = new WeakMap<DurableObjectNamespace, CommitGroups<Notification, void>>();

/**
 * Sends a group of notifications: one `notifyMany` call per replica set among them, in parallel.
 * @throws when a call fails (the group's notifications are then sent again one by one: telling an
 *   object twice of a change is harmless)
 */
async function sendNotifications(env: Env, items: Notification[]): Promise<void[]> {
  const byTarget = new Map<string, Notification[]>();
  for (const n of items) {
    const key = `${n.namespace}/${n.name}`;
    const xs = byTarget.get(key);
    if (xs) xs.push(n);
    else byTarget.set(key, [n]);
  }
  await Promise.all(
    [...byTarget.values()].map((ns) =>
      stub(env, ns[0]!.namespace, ns[0]!.name).notifyMany(
        ns[0]!.namespace,
        ns[0]!.name,
        ns.map((n) => n.change),
      ),
    ),
  );
  return items.map(() => undefined);
}

/**
 * Asks for a run shortly after (the object's alarm, at once) without waiting for it, handing over
 * the changed work as stored when the change carries it (`work`; null: the work was removed).
 * Notifications that come while one is in flight go together when it returns (group commit,
 * src/store/group-commit.ts): during a fleet's rollout, the reports of many clusters reach their
 * replica set's object in a few calls, not one each. Resolves once the object was told.
 * @throws when the object cannot be reached
 */
async function reconcileSoon(env: Env, namespace: string, name: string, deletedWorkIn?: string, work?: KubeObject | null): Promise<void> {
  let groups = notifyGroups.get(env.REPLICASETS);
  if (!groups) {
    groups = new CommitGroups((items: Notification[]) => sendNotifications(env, items), NOTIFY_GROUP_MAX);
    notifyGroups.set(env.REPLICASETS, groups);
  }
  await groups.run({ namespace, name, change: { deletedWorkIn, work } });
}

/**
 * What a write owes a replica set: its run now (awaited) or soon (its alarm), and the cluster
 * whose work was deleted; or the runs, awaited, of the replica sets that refer to a placement whose
 * decisions moved (`placement`, `<namespace>/<name>`).
 */
type ReplicaSetOwed = { namespace: string; name: string; now?: true; deletedWorkIn?: string } | { placement: string };

/**
 * Which replica set run a committed write calls for:
 * - a ManifestWorkReplicaSet created, its spec changed (generation) or its deletion started:
 *   its run, awaited (the write returns after it);
 * - removed, or its finalizer removed by someone else: a run shortly after (not awaited);
 * - a ManifestWork carrying {@link MWRS_LABEL} whose status changed (an agent's report or an
 *   admin's status write): its replica set's run shortly after (the object's alarm, set to now;
 *   not awaited, so an agent's report returns at once and the reports of many clusters that
 *   arrive during a run coalesce into the next run);
 * - such a work deleted (or its deletion started): a run shortly after (not awaited: the
 *   controller itself deletes works);
 * - a PlacementDecision whose decisions moved (src/placement/changes.ts `decisionsMoved`): the
 *   runs of the replica sets that refer to its placement, awaited (as OCM's controller watches
 *   the PlacementDecision informer).
 * Status-only writes of a replica set and spec or metadata writes of works are the
 * controller's own and call for nothing.
 */
function planReplicaSet(change: Change): ReplicaSetOwed | null {
  const { def, namespace, name, before, after } = change;
  const placement = decisionsMoved(change);
  if (placement) return { placement };
  if (def === ManifestWorkReplicaSetKind) {
    if (!after) return { namespace, name };
    const started =
      !before || before.metadata.generation !== after.metadata.generation || (!before.metadata.deletionTimestamp && !!after.metadata.deletionTimestamp);
    if (started) return { namespace, name, now: true };
    const lost = (before.metadata.finalizers ?? []).includes(MWRS_FINALIZER) && !(after.metadata.finalizers ?? []).includes(MWRS_FINALIZER);
    if (lost && !after.metadata.deletionTimestamp) return { namespace, name };
    return null;
  }
  if (def !== ManifestWorkKind) return null;
  const owner = parseKey((after ?? before)?.metadata.labels?.[MWRS_LABEL]);
  if (!owner) return null;
  if (before && after && !deepEqual(before.status ?? null, after.status ?? null)) return owner;
  if (!after || (after.metadata.deletionTimestamp && !before?.metadata.deletionTimestamp)) return { ...owner, deletedWorkIn: namespace };
  return null;
}

/**
 * The replica set controller's after-commit hook (src/store/hooks.ts): runs or notifies the
 * replica set a write calls for ({@link planReplicaSet}). An awaited run of the written replica
 * set itself reports `rewrote` (the run adds its finalizer and writes its status). Idempotent:
 * a run reads the current state.
 */
export const replicaSetHook: AfterCommitHook<ReplicaSetOwed> = {
  name: "replicasets",
  plan: planReplicaSet,
  async run(env, owed, target) {
    if ("placement" in owed) return replicaSetsForPlacements(env, [owed.placement], target);
    // A work's change run right after its commit carries the work as stored: the replica set's
    // object keeps it instead of reading every work back (a sweep's run has only the key).
    const work = target.change?.def === ManifestWorkKind ? target.change.after : undefined;
    if (!owed.now) return reconcileSoon(env, owed.namespace, owed.name, owed.deletedWorkIn, work);
    await reconcileNow(env, owed.namespace, owed.name);
    return { rewrote: target.resource === resourceKey(ManifestWorkReplicaSetKind) && target.namespace === owed.namespace && target.name === owed.name };
  },
};

/**
 * Runs the replica sets that refer to any of `placements` (`<namespace>/<name>` keys whose
 * decisions changed) and waits for them: the hook's run for a PlacementDecision's change.
 * A run's failure is logged, never thrown (the replica set's object retries it on its alarm).
 * The namespace's list of replica sets is shared with the other hook runs of `target`'s group
 * (src/store/hooks.ts `sharedRead`).
 * @throws errors of D1 (listing the replica sets): the outbox row keeps the run owed
 */
export async function replicaSetsForPlacements(env: Env, placements: string[], target?: HookTarget): Promise<void> {
  if (placements.length === 0) return;
  const byNamespace = new Map<string, Set<string>>();
  for (const p of placements) {
    const i = p.indexOf("/");
    const ns = p.slice(0, i);
    if (!byNamespace.has(ns)) byNamespace.set(ns, new Set());
    byNamespace.get(ns)!.add(p.slice(i + 1));
  }
  const runs: Promise<void>[] = [];
  for (const [ns, names] of byNamespace) {
    const { items } = await sharedRead(target, `manifestworkreplicasets/${ns}`, () => admittedStoreOf(env, ManifestWorkReplicaSetKind).list(ns));
    for (const m of items) {
      const refs = (m.spec as ReplicaSetSpec | undefined)?.placementRefs ?? [];
      if (refs.some((r) => names.has(r.name))) runs.push(reconcileNow(env, ns, m.metadata.name));
    }
  }
  const results = await Promise.allSettled(runs);
  for (const r of results) if (r.status === "rejected") console.error("replica set run failed", r.reason);
}

/**
 * Reconciles one ManifestWorkReplicaSet now (a webhook's re-evaluate action) and waits for a
 * run that started after this call. Does nothing harmful for a replica set that does not exist
 * (its leftover works, if any, are deleted).
 */
export async function reevaluateReplicaSet(env: Env, namespace: string, name: string): Promise<void> {
  try {
    await reconcileNow(env, namespace, name);
  } catch (e) {
    console.error(`replica set ${namespace}/${name}: could not ask for a run`, e);
  }
}
