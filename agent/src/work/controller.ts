/**
 * The work agent's controller (OCM `pkg/work/spoke`): keeps the member cluster in line with the
 * ManifestWorks the hub lists for this cluster. One {@link WorkController.sync} pass
 * 1. applies every manifest of every work (all of them when the work is new or its spec
 *    changed; otherwise only those that drifted, see apply.ts), in kind-rank order;
 * 2. updates each work's AppliedManifestWork record (record.ts) and lets go of resources whose
 *    manifest left the work (cleanup.ts, honouring the work's deleteOption);
 * 3. lets go of everything a work applied when the hub deletes it (the work is listed with a
 *    deletionTimestamp: OCM's ManifestWorkFinalizeController and AppliedManifestWorkFinalizeController),
 *    per its deleteOption, deletes its record and reports it `released`, so that the hub drops the
 *    `manifest-work-cleanup` finalizer and the work goes;
 * 4. keeps what a work applied when the work merely disappears from the hub's list without the
 *    agent having seen it deleted (a hub restored from a backup, a wrong hub URL): OCM's
 *    UnManagedAppliedWorkController, which evicts it only after the eviction grace period
 *    (`--appliedmanifestwork-eviction-grace-period`, default 60 minutes) from the time the work
 *    was first found missing; a work that comes back meanwhile is kept;
 * 5. computes each work's status (conditions.ts).
 * A work with an `executor` is applied, read and deleted impersonating its ServiceAccount
 * (dynamic.ts `as`), so the member cluster's RBAC decides what it may do; every object a work
 * writes carries its trace labels and annotations (src/kinds/manifestwork-labels.ts).
 * The caller (agent.ts) runs passes serially: when the list changes and every status-sync period.
 */
import { describeKubeError, type KubeConfig } from "../kube.ts";
import type { Logger } from "../log.ts";
import { createHash } from "node:crypto";
import { applyManifest, type ManifestMemo } from "./apply.ts";
import { releaseResources, type ReleaseResult } from "./cleanup.ts";
import { nowRfc3339, workStatus, type ManifestOutcome } from "./conditions.ts";
import { RestMapper } from "./discovery.ts";
import { DynamicClient, type ObjectRef } from "./dynamic.ts";
import { applyStrategyOf, unavailablePeriodOf } from "./kubefleet-strategy.ts";
import { applyOrder } from "./order.ts";
import { RecordStore, sortApplied, type WorkRecord } from "./record.ts";
import { LiveTracker } from "./tracker.ts";
import {
  describeResource,
  executorUser,
  sameResource,
  type AppliedResource,
  type ManifestWork,
  type ManifestWorkSpec,
  type ManifestWorkStatus,
} from "./types.ts";
import { APPLIED_BY_WORK_ANNOTATION, APPLIED_BY_WORK_LABEL, MWRS_LABEL, PLACEMENT_NAME_LABEL } from "../../../src/kinds/manifestwork-labels.ts";

/** Options of {@link WorkController}. */
export interface WorkControllerOptions {
  /** The member cluster's configuration. */
  kubeConfig: KubeConfig;
  /** The agent's namespace, where the records live (e.g. `flotilla-agent`). */
  namespace: string;
  /** Where to log one line per work event (applied, failing, removed). */
  logger: Logger;
  /** Per-request timeout on the member cluster, in milliseconds; default 15 000. */
  requestTimeoutMs?: number;
  /**
   * Watch the applied objects, so that a pass reads only those that changed (default true);
   * false reads every object every pass.
   */
  watch?: boolean;
  /** Ends the watches. */
  signal?: AbortSignal;
  /**
   * How long the resources of a work missing from the hub's list (not seen deleted) are kept, in
   * milliseconds; default {@link DEFAULT_EVICTION_GRACE_PERIOD_MS} (60 minutes, OCM's). At or
   * above {@link EVICTION_GRACE_PERIOD_BOUND_MS} (100 years, OCM's bound) nothing is ever evicted.
   */
  evictionGracePeriodMs?: number;
  /** The clock, epoch milliseconds; default `Date.now`. */
  now?: () => number;
}

/** OCM's default `--appliedmanifestwork-eviction-grace-period`: 60 minutes, in milliseconds. */
export const DEFAULT_EVICTION_GRACE_PERIOD_MS = 60 * 60 * 1000;
/** OCM's `EvictionGracePeriodBound` (100 years, in milliseconds): a grace period this long or longer disables eviction. */
export const EVICTION_GRACE_PERIOD_BOUND_MS = 100 * 365 * 24 * 60 * 60 * 1000;

/** The status computed for one work in a pass. */
export interface WorkReport {
  /** The work's name on the hub. */
  name: string;
  /** The work's `metadata.uid` (sent with the status so the hub can refuse a replaced work). */
  uid: string;
  /** The work's status in OCM's shape. */
  status: ManifestWorkStatus;
  /**
   * The work is being deleted on the hub and everything it applied is released (deleted, or kept
   * as its deleteOption orphans it): the report confirms it (src/agent-api/protocol.ts `released`).
   */
  released?: true;
}

interface WorkState {
  /** SHA-256 of the JSON of uid + spec last applied in full. */
  specKey: string;
  memos: Map<number, ManifestMemo>;
  status?: ManifestWorkStatus;
  /** Summary of the last logged failure, to log once per change. */
  lastFailure?: string;
  /**
   * Set after a pass in which every manifest applied and was read without error: the objects
   * and the report, reused as they are while the spec stays and the tracker reports none of
   * the objects changed.
   */
  quiet?: { refs: ObjectRef[]; report: WorkReport };
  /** When the earliest untrackable object of its last pass counts as available (epoch ms, rounded up to a whole second), if later than that pass. */
  dueAt?: number;
  /** Keys ({@link refKey}) of the objects whose manifests ask for `feedbackScrapeType: Watch`. */
  watchKeys?: string[];
}

/** `group/resource/namespace/name` of an object, the key of the Watch-scraped set. */
function refKey(r: { group: string; resource: string; namespace: string; name: string }): string {
  return `${r.group}/${r.resource}/${r.namespace}/${r.name}`;
}

/** A Kubernetes label value (apimachinery IsValidLabelValue): at most 63 characters, alphanumeric at both ends. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * The labels and annotations every object `work` applies carries (src/kinds/manifestwork-labels.ts): the work's
 * name (label when it is a valid label value; annotation `<namespace>/<name>` always) and the
 * replica set and placement labels the hub set on the work, when it has them.
 */
export function traceOf(work: ManifestWork): { labels: Record<string, string>; annotations: Record<string, string> } {
  const name = work.metadata.name;
  const labels: Record<string, string> = {};
  if (name.length <= 63 && LABEL_VALUE.test(name)) labels[APPLIED_BY_WORK_LABEL] = name;
  for (const key of [MWRS_LABEL, PLACEMENT_NAME_LABEL]) {
    const v = work.metadata.labels?.[key];
    if (v !== undefined) labels[key] = v;
  }
  return { labels, annotations: { [APPLIED_BY_WORK_ANNOTATION]: `${work.metadata.namespace ?? ""}/${name}` } };
}

function generationOf(w: ManifestWork): number {
  return typeof w.metadata.generation === "number" ? w.metadata.generation : 0;
}

/**
 * Applies works, keeps records, removes what works no longer hold, and computes statuses.
 *
 * @example
 * const c = new WorkController({ kubeConfig: kc, namespace: "flotilla-agent", logger: log });
 * await c.init();
 * c.setWorks(worksFromHub);
 * const reports = await c.sync();
 */
export class WorkController {
  private readonly client: DynamicClient;
  /** Impersonating clients, by user (one per executor ServiceAccount in use). */
  private readonly impersonating = new Map<string, DynamicClient>();
  private readonly mapper: RestMapper;
  private readonly records: RecordStore;
  private readonly log: Logger;
  private recorded = new Map<string, WorkRecord>();
  private desired = new Map<string, ManifestWork>();
  private listedByHub = false;
  private readonly states = new Map<string, WorkState>();
  private readonly tracker: LiveTracker | undefined;
  /** Objects whose manifests ask for `feedbackScrapeType: Watch`, by {@link refKey}. */
  private watchScraped = new Set<string>();
  private watchedChange: (() => void) | undefined;
  /** specKey of each work object seen (a work from the same hub answer is not hashed again). */
  private specKeys = new WeakMap<ManifestWork, string>();
  private initialised = false;
  private readonly evictionGraceMs: number;
  private readonly now: () => number;

  /** @param opts cluster, namespace, logger and timeout. */
  constructor(opts: WorkControllerOptions) {
    this.evictionGraceMs = opts.evictionGracePeriodMs ?? DEFAULT_EVICTION_GRACE_PERIOD_MS;
    this.now = opts.now ?? Date.now;
    this.client = new DynamicClient(opts.kubeConfig, opts.requestTimeoutMs ?? 15_000);
    this.mapper = new RestMapper(this.client);
    this.records = new RecordStore(this.client, opts.namespace);
    this.log = opts.logger;
    if (opts.watch !== false) {
      this.tracker = new LiveTracker(opts.kubeConfig, opts.logger, opts.signal);
      this.tracker.onChange((ref) => {
        if (this.watchScraped.has(refKey(ref))) this.watchedChange?.();
      });
    }
  }

  /**
   * Calls `listener` when the watch reports a change of an object whose manifest asks for
   * `feedbackScrapeType: Watch` (OCM registers an informer for it), so its status is reported
   * at once instead of at the next status sync. Without watches (`watch: false`) it never fires.
   */
  onWatchedChange(listener: () => void): void {
    this.watchedChange = listener;
  }

  /**
   * The client a work's manifests are applied, read and deleted with: the agent's own without
   * executor, else one impersonating the executor's ServiceAccount; `{ error }` for an executor
   * the agent cannot act as.
   */
  private clientFor(spec: ManifestWorkSpec | undefined): DynamicClient | { error: string } {
    const who = executorUser(spec);
    if ("error" in who) return who;
    if (who.user === undefined) return this.client;
    let c = this.impersonating.get(who.user);
    if (!c) this.impersonating.set(who.user, (c = this.client.as(who.user)));
    return c;
  }

  /** Ends the watches (the controller still works, reading every object). */
  close(): void {
    this.tracker?.close();
  }

  private specKeyOf(work: ManifestWork): string {
    let k = this.specKeys.get(work);
    if (k === undefined) {
      k = createHash("sha256")
        .update(JSON.stringify([work.metadata.uid, work.spec]))
        .digest("base64url");
      this.specKeys.set(work, k);
    }
    return k;
  }

  /** Whether {@link init} has succeeded. */
  get ready(): boolean {
    return this.initialised;
  }

  /**
   * Loads the records from the member cluster. Until the hub's first list arrives, the works
   * they hold are the desired state, so drift is repaired even while the hub is unreachable
   * after a restart.
   *
   * @throws the client's error when the records cannot be listed (retry later).
   */
  async init(): Promise<void> {
    this.recorded = await this.records.list();
    if (!this.listedByHub) {
      for (const r of this.recorded.values()) if (r.work) this.desired.set(r.workName, r.work);
    }
    this.initialised = true;
  }

  /**
   * Replaces the desired works with the hub's list (`GET .../works` answer). Works absent from
   * it are removed at the next {@link sync}.
   */
  setWorks(works: readonly ManifestWork[]): void {
    this.desired = new Map(works.map((w) => [w.metadata.name, w]));
    this.listedByHub = true;
  }

  /** The works currently desired (from the hub's last list, or from the records before it). */
  works(): ManifestWork[] {
    return [...this.desired.values()];
  }

  private heldByOthers(workName: string): AppliedResource[] {
    return [...this.recorded.values()].filter((r) => r.workName !== workName).flatMap((r) => r.appliedResources);
  }

  private logRelease(what: string, r: ReleaseResult): void {
    const parts = [`deleted ${r.deleted.length}`, `orphaned ${r.orphaned.length}`, `kept ${r.shared.length} held by other works`];
    if (r.pending.length) parts.push(`${r.pending.length} still being deleted (finalizers)`);
    if (r.failed.length) parts.push(`failed ${r.failed.length} (${r.failed.map((f) => `${describeResource(f.resource)}: ${f.error}`).join("; ")})`);
    if (r.deleted.length + r.orphaned.length + r.shared.length + r.failed.length + r.pending.length > 0) this.log.info(`${what}: ${parts.join(", ")}`);
  }

  /** Applies one work and updates its record; returns its status. */
  private async syncWork(work: ManifestWork, refs: ObjectRef[]): Promise<WorkReport> {
    const name = work.metadata.name;
    const generation = generationOf(work);
    const specKey = this.specKeyOf(work);
    const prev = this.states.get(name);
    const specChanged = !prev || prev.specKey !== specKey;
    const state: WorkState = prev && !specChanged ? prev : { specKey, memos: prev?.memos ?? new Map(), ...(prev?.status ? { status: prev.status } : {}) };
    if (specChanged) {
      this.log.info(prev ? "work changed; applying it" : "applying work", { work: name, generation });
    } else if (prev?.quiet && this.tracker && prev.quiet.refs.every((r) => this.tracker!.unchanged(r))) {
      refs.push(...prev.quiet.refs);
      return prev.quiet.report;
    }
    delete state.quiet;
    const workRefs: ObjectRef[] = [];
    const manifests = work.spec.workload?.manifests ?? [];
    const configs = work.spec.manifestConfigs ?? [];
    const outcomes: ManifestOutcome[] = new Array<ManifestOutcome>(manifests.length);
    const applied: AppliedResource[] = [];
    const readOnly: AppliedResource[] = [];
    const watchKeys: string[] = [];
    // OCM: a work that is Complete gets no updates; a manifest that is Complete is not updated.
    const isComplete = (conds: readonly { type: string; status: string }[] | undefined) =>
      conds?.some((c) => c.type === "Complete" && c.status === "True") === true;
    const workComplete = isComplete(state.status?.conditions);
    const manifestComplete = (i: number): boolean => {
      const m = manifests[i] as { kind?: unknown; metadata?: { name?: unknown } } | undefined;
      const prev = state.status?.resourceStatus.manifests.find((x) => x.resourceMeta.ordinal === i);
      return prev !== undefined && prev.resourceMeta.kind === m?.kind && prev.resourceMeta.name === m?.metadata?.name && isComplete(prev.conditions);
    };
    const as = this.clientFor(work.spec);
    const client = as instanceof DynamicClient ? as : this.client;
    const trace = traceOf(work);
    // A KubeFleet placement's work (docs/kubefleet.md): applied as KubeFleet's work applier, the
    // objects this work's record holds being the ones Fleet owns.
    const strategy = applyStrategyOf(work.metadata.annotations);
    const heldUids = new Set((this.recorded.get(name)?.appliedResources ?? []).map((r) => r.uid));
    const nowMs = this.now();
    const fleet = strategy
      ? {
          strategy,
          unavailablePeriodSeconds: unavailablePeriodOf(work.metadata.annotations),
          owns: (uid: string) => uid !== "" && heldUids.has(uid),
          now: nowMs,
        }
      : undefined;
    for (const i of applyOrder(manifests)) {
      const completed = workComplete || manifestComplete(i);
      const r = await applyManifest(client, this.mapper, {
        manifest: manifests[i],
        ordinal: i,
        configs,
        generation,
        specChanged,
        completed,
        memo: state.memos.get(i),
        trace,
        ...(this.tracker ? { tracker: this.tracker } : {}),
        ...(as instanceof DynamicClient ? {} : { refused: as.error }),
        ...(fleet ? { fleet } : {}),
      });
      if (r.outcome.meta.resource)
        workRefs.push({
          group: r.outcome.meta.group,
          version: r.outcome.meta.version,
          resource: r.outcome.meta.resource,
          namespace: r.outcome.meta.namespace,
          name: r.outcome.meta.name,
        });
      state.memos.set(i, r.memo);
      outcomes[i] = r.outcome;
      if (r.applied) applied.push(r.applied);
      // A KubeFleet workload not yet available is reported as soon as it changes (KubeFleet's
      // work applier requeues such a work quickly), not only at the next status sync.
      const pending = r.outcome.fleet?.availability === "ManifestNotAvailableYet";
      if ((r.watch || pending) && r.outcome.meta.resource) watchKeys.push(refKey(r.outcome.meta));
      if (r.strategy === "ReadOnly") readOnly.push({ ...r.outcome.meta, uid: "" });
    }
    for (const k of [...state.memos.keys()]) if (k >= manifests.length) state.memos.delete(k);

    // Record: what this work holds now; resources whose manifest left the work are released.
    const old = this.recorded.get(name);
    const named = (r: AppliedResource) =>
      outcomes.some(
        (o) =>
          o.meta.group === r.group &&
          o.meta.name === r.name &&
          (o.meta.resource === "" || (o.meta.resource === r.resource && o.meta.namespace === r.namespace)),
      );
    const held = [...applied];
    const released: AppliedResource[] = [];
    for (const r of old?.appliedResources ?? []) {
      if (held.some((h) => sameResource(h, r))) continue;
      if (readOnly.some((ro) => ro.group === r.group && ro.resource === r.resource && ro.namespace === r.namespace && ro.name === r.name)) continue;
      if (named(r)) {
        // Still in the work but not (re)applied in this pass (e.g. a failed read): keep holding it.
        if (!held.some((h) => h.group === r.group && h.resource === r.resource && h.namespace === r.namespace && h.name === r.name)) held.push(r);
      } else released.push(r);
    }
    if (released.length > 0) {
      // Released as the identity that applied them (the record's work), as OCM's executor deletes.
      const releaser = this.clientFor(old?.work?.spec ?? work.spec);
      const result =
        releaser instanceof DynamicClient
          ? await releaseResources(releaser, released, old?.deleteOption ?? work.spec.deleteOption, this.heldByOthers(name))
          : { deleted: [], orphaned: [], shared: [], pending: [], failed: released.map((resource) => ({ resource, error: releaser.error })) };
      this.logRelease(`manifests removed from work ${name}`, result);
      held.push(...result.failed.map((f) => f.resource), ...result.pending);
    }
    const record: WorkRecord = {
      workName: name,
      workUid: work.metadata.uid,
      ...(work.spec.deleteOption ? { deleteOption: work.spec.deleteOption } : {}),
      appliedResources: sortApplied(held),
      work: { apiVersion: work.apiVersion, kind: work.kind, metadata: work.metadata, spec: work.spec },
    };
    this.recorded.set(name, record);
    refs.push(...workRefs);
    let saved = true;
    try {
      await this.records.save(record);
    } catch (e) {
      saved = false;
      this.log.warn(`could not write the record of work ${name}: ${describeKubeError(e)}; retrying at the next sync`, { work: name });
    }

    const status = workStatus(outcomes, generation, state.status, nowRfc3339(new Date(nowMs)), fleet !== undefined);
    state.status = status;
    state.specKey = specKey;
    state.watchKeys = watchKeys;
    this.states.set(name, state);
    const failures = outcomes.filter((o) => !o.applied.ok).map((o) => `${o.meta.kind} ${o.meta.name}: ${o.applied.ok ? "" : o.applied.message}`);
    const summary = failures.join("; ");
    if (summary !== (state.lastFailure ?? "")) {
      if (summary) this.log.warn(`work ${name}: ${failures.length} manifest(s) failed to apply: ${summary}`, { work: name, generation });
      else if (state.lastFailure) this.log.info(`work ${name}: all manifests applied again`, { work: name, generation });
      state.lastFailure = summary;
    }
    const report: WorkReport = { name, uid: work.metadata.uid, status };
    const everyManifestCached = manifests.every((_, i) => state.memos.get(i)?.cached !== undefined);
    // Not quiet while an untrackable object of a KubeFleet work waits for its unavailablePeriodSeconds.
    // Judged on the status's clock (whole seconds, as its timestamps): a pass within the second an
    // object becomes available still reports it unavailable, so it waits for the next whole second.
    const judgedAt = Date.parse(nowRfc3339(new Date(nowMs)));
    const waits = outcomes.map((o) => o.fleet?.availableAt).filter((t): t is number => t !== undefined && t > judgedAt);
    const waiting = waits.length > 0;
    if (waiting) state.dueAt = Math.ceil(Math.min(...waits) / 1000) * 1000;
    else delete state.dueAt;
    if (this.tracker && saved && released.length === 0 && everyManifestCached && !waiting && workRefs.length === manifests.length)
      state.quiet = { refs: workRefs, report };
    return report;
  }

  /**
   * Lets go of everything a work's record holds (per `deleteOption`), then deletes the record
   * (kept, holding what failed, when a delete failed).
   */
  private async removeWork(record: WorkRecord, spec?: ManifestWorkSpec): Promise<ReleaseResult> {
    const releaser = this.clientFor(spec ?? record.work?.spec);
    const result: ReleaseResult =
      releaser instanceof DynamicClient
        ? await releaseResources(releaser, record.appliedResources, record.deleteOption, this.heldByOthers(record.workName))
        : { deleted: [], orphaned: [], shared: [], pending: [], failed: record.appliedResources.map((resource) => ({ resource, error: releaser.error })) };
    if (result.failed.length > 0 || result.pending.length > 0) {
      const left: WorkRecord = { ...record, appliedResources: sortApplied([...result.failed.map((f) => f.resource), ...result.pending]) };
      this.recorded.set(record.workName, left);
      await this.records.save(left).catch(() => undefined);
      return result;
    }
    await this.records.remove(record.workName);
    this.recorded.delete(record.workName);
    this.states.delete(record.workName);
    return result;
  }

  /**
   * One pass over all works (see the module doc).
   *
   * @returns the status of every desired work, in name order. Never throws for per-manifest
   *   failures (they are in the statuses).
   * @throws the client's error when records cannot be read before the first pass.
   */
  /**
   * How long until a status the last {@link sync} reported changes by time alone, in
   * milliseconds from now: the earliest moment an untrackable object of a KubeFleet work counts
   * as available (`unavailablePeriodSeconds` after it was applied); undefined when none waits.
   * The sync loop runs the next pass then rather than a whole status-sync period later.
   */
  nextDueInMs(): number | undefined {
    const now = this.now();
    const due = Math.min(...[...this.states.values()].map((s) => s.dueAt ?? Infinity));
    return due === Infinity ? undefined : Math.max(0, due - now);
  }

  async sync(): Promise<WorkReport[]> {
    if (!this.initialised) await this.init();
    const reports: WorkReport[] = [];
    const refs: ObjectRef[] = [];
    for (const name of [...this.desired.keys()].sort()) {
      const work = this.desired.get(name);
      if (!work) continue;
      if (work.metadata.deletionTimestamp) {
        const released = await this.finalizeWork(work);
        if (released) reports.push(released);
      } else reports.push(await this.syncWork(work, refs));
    }
    // Objects no work holds any more need no watching.
    this.tracker?.retain(refs);
    this.watchScraped = new Set([...this.desired.keys()].flatMap((n) => this.states.get(n)?.watchKeys ?? []));
    if (this.listedByHub) {
      for (const record of [...this.recorded.values()]) {
        if (this.desired.has(record.workName)) continue;
        try {
          await this.missingWork(record);
        } catch (e) {
          this.log.warn(`could not remove work ${record.workName}: ${describeKubeError(e)}; retrying at the next sync`, { work: record.workName });
        }
      }
      for (const name of [...this.states.keys()]) if (!this.desired.has(name) && !this.recorded.has(name)) this.states.delete(name);
    }
    return reports;
  }

  /**
   * A work the hub is deleting: lets go of what it applied, per its deleteOption (the hub's
   * current one), marking the record `deleting` first so that a restart or the work's
   * disappearance finishes the job at once. Returns the `released` report once nothing is held
   * (no record left), or undefined while a delete failed (retried at the next sync).
   */
  private async finalizeWork(work: ManifestWork): Promise<WorkReport | undefined> {
    const name = work.metadata.name;
    const record = this.recorded.get(name);
    if (record) {
      const marked: WorkRecord = { ...record, deleting: true, ...(work.spec.deleteOption ? { deleteOption: work.spec.deleteOption } : {}) };
      if (!record.deleting) {
        this.log.info(`work ${name} is being deleted on the hub; removing what it applied`, { work: name });
        this.recorded.set(name, marked);
        await this.records.save(marked).catch(() => undefined);
      }
      let result: ReleaseResult;
      try {
        result = await this.removeWork(marked);
      } catch (e) {
        this.log.warn(`could not remove work ${name}: ${describeKubeError(e)}; retrying at the next sync`, { work: name });
        return undefined;
      }
      this.logRelease(`work ${name} deleted on the hub`, result);
      if (result.failed.length > 0 || result.pending.length > 0) return this.deletingReport(work, result);
    }
    this.states.delete(name);
    return { name, uid: work.metadata.uid, status: { conditions: [], resourceStatus: { manifests: [] } }, released: true };
  }

  /**
   * The status of a work whose deletion is not done: its last status with OCM's `Deleting`
   * condition, reason `ResourceRemaining` (objects held by their finalizers) or `DeletingError`
   * (a delete failed, its error in the message). Reported once per change, as any status.
   */
  private deletingReport(work: ManifestWork, result: ReleaseResult): WorkReport {
    const name = work.metadata.name;
    const last = this.states.get(name)?.status ?? { conditions: [], resourceStatus: { manifests: [] } };
    const failed = result.failed.map((f) => `${describeResource(f.resource)}: ${f.error}`);
    const condition =
      failed.length > 0
        ? {
            type: "Deleting",
            status: "True" as const,
            reason: "DeletingError",
            message: `could not delete ${failed.length} resource(s): ${failed.join("; ")}`.slice(0, 32 * 1024),
          }
        : {
            type: "Deleting",
            status: "True" as const,
            reason: "ResourceRemaining",
            message: `${result.pending.length} resource(s) are being deleted (held by their finalizers)`,
          };
    const prev = last.conditions.find((c) => c.type === "Deleting");
    const at = prev?.status === "True" ? prev.lastTransitionTime : nowRfc3339();
    const conditions = [
      ...last.conditions.filter((c) => c.type !== "Deleting"),
      { ...condition, lastTransitionTime: at, observedGeneration: generationOf(work) },
    ];
    return { name, uid: work.metadata.uid, status: { ...last, conditions } };
  }

  /**
   * A recorded work the hub no longer lists: released at once when the agent saw it being deleted
   * (`deleting`), else evicted only after the grace period from when it was first found missing
   * (OCM's UnManagedAppliedWorkController).
   */
  private async missingWork(record: WorkRecord): Promise<void> {
    const name = record.workName;
    if (!record.deleting) {
      if (this.evictionGraceMs >= EVICTION_GRACE_PERIOD_BOUND_MS) return;
      const now = this.now();
      const since = record.evictionStartTime ? Date.parse(record.evictionStartTime) : NaN;
      if (!Number.isFinite(since)) {
        const marked: WorkRecord = { ...record, evictionStartTime: nowRfc3339(new Date(now)) };
        this.recorded.set(name, marked);
        await this.records.save(marked);
        this.log.warn(
          `work ${name} is missing on the hub, which did not delete it through its finalizer; keeping what it applied until ${new Date(now + this.evictionGraceMs).toISOString()} (--appliedmanifestwork-eviction-grace-period)`,
          { work: name },
        );
        return;
      }
      if (now < since + this.evictionGraceMs) return;
      this.log.info(`work ${name} has been missing on the hub since ${record.evictionStartTime}, past the eviction grace period; evicting what it applied`, {
        work: name,
      });
    }
    this.logRelease(`work ${name} ${record.deleting ? "deleted on the hub" : "evicted"}`, await this.removeWork(record));
  }

  /**
   * The cluster leaves the hub: lets go of everything every work applied, honouring each work's
   * deleteOption (the hub's latest list when it has the work, else the record's), and deletes
   * the records. Logs only failures; the caller logs the outcome.
   *
   * @returns `done` true when everything is released and every record deleted (false: call
   *   again), and the numbers of resources deleted and orphaned.
   * @throws the client's error when the records cannot be listed.
   */
  async leave(): Promise<{ done: boolean; deleted: number; orphaned: number }> {
    if (!this.initialised) await this.init();
    const out = { done: true, deleted: 0, orphaned: 0 };
    for (const record of [...this.recorded.values()]) {
      const desired = this.desired.get(record.workName)?.spec;
      const current = desired?.deleteOption;
      const withOption: WorkRecord = current ? { ...record, deleteOption: current } : record;
      try {
        const r = await this.removeWork(withOption, desired);
        out.deleted += r.deleted.length;
        out.orphaned += r.orphaned.length;
        if (r.pending.length > 0) out.done = false;
        if (r.failed.length > 0) {
          out.done = false;
          this.log.warn(
            `could not delete ${r.failed.length} resource(s) of work ${record.workName} while leaving: ${r.failed.map((f) => `${describeResource(f.resource)}: ${f.error}`).join("; ")}`,
            { work: record.workName },
          );
        }
      } catch (e) {
        out.done = false;
        this.log.warn(`could not remove work ${record.workName} while leaving: ${describeKubeError(e)}`, { work: record.workName });
      }
    }
    return out;
  }
}
