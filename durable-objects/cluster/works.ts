/**
 * Works delivery of one cluster: the works ETag (a new one whenever a work in the cluster's
 * namespace changes, or a leave starts), the namespace's works kept in memory
 * (src/work/namespace-deliverables.ts), and the agents' works long-polls waiting for a change.
 *
 * The ETag lives in memory, and in the `worksEtag` row only once a works poll (the poll
 * transport's `GET .../works`) handed it out: from then on each change writes the new one there
 * (one row), so that a poll agent's ETag still matches after the object was evicted and its idle
 * heartbeats fetch nothing. A cluster whose agent only uses the channel never has the row, and a
 * works change writes nothing to the object's storage: an object loaded without the row makes a
 * new ETag, which no agent holds, so an agent that says `hello` after an eviction gets the works
 * again (the row, when there is one, is always current: a change rewrites it before any message
 * carries the new ETag, so no older ETag can ever match newer works).
 *
 * What the works kept in memory hold, while complete, is also kept with the agent's hibernated
 * WebSocket (its attachment, in memory: cluster/connection.ts `AttachmentPicture`; each
 * deliverable's name, resourceVersion and whether it was removed), so that an object woken from
 * hibernation by a change it can prove is the namespace's only news pushes the works without
 * reading them from D1 (src/work/namespace-deliverables.ts). Nothing of it is written to the
 * object's storage: a works change on a channel cluster still writes no row.
 */
import type { Env } from "../../src/env.ts";
import { tooManyRequests, type Status } from "../../src/k8s/errors.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { storeOf } from "../../src/store/store.ts";
import { ManifestWorkKind } from "../../src/kinds/manifestwork.ts";
import { PolicyKind, isReplicatedPolicy } from "../../src/kinds/policy.ts";
import { keyOf, NamespaceDeliverables, type DeliverableDelta, type DeliverableDeltaMessage, type KeptPicture } from "../../src/work/namespace-deliverables.ts";
import { clock } from "../../src/clock.ts";
import { WORKS_ETAG, type ClusterState } from "./state.ts";
import { errorResult, type WorksState } from "./types.ts";

/**
 * Most works long-polls one cluster may have waiting at once. Its agent holds one; the rest covers
 * agent restarts, whose abandoned polls wait out their `waitSeconds` (at most 55).
 */
export const MAX_WORKS_WAITERS = 8;
/** `Retry-After` of a works long-poll refused by {@link MAX_WORKS_WAITERS}, in seconds. */
export const WORKS_RETRY_AFTER_SECONDS = 5;

/** The works delivery of the host's cluster. */
export class WorksDelivery {
  /** The works of the cluster's namespace, for works polls and pushes; kept across hibernation in `kept`. */
  private readonly works: NamespaceDeliverables;
  /** The long-polls waiting for a works change: each resolves when called. */
  readonly waiters = new Set<() => void>();
  /** The works ETag; null until first asked in this object's life (then the row's, or a new one). */
  private tag: string | null = null;
  /** Whether the `worksEtag` row holds {@link tag} (a works poll handed it out). */
  private stored = false;

  /**
   * @param kept where what the works held are is kept across the object's hibernation (the agent
   *   connections' attachments)
   */
  constructor(
    private readonly env: Env,
    private readonly state: ClusterState,
    kept?: KeptPicture,
  ) {
    this.works = new NamespaceDeliverables(kept);
  }

  /**
   * The works ETag: the `worksEtag` row's when there is one, else one made in memory (nothing
   * written: see the module comment).
   */
  etag(): string {
    if (this.tag === null) {
      const row = this.state.view<string>(WORKS_ETAG);
      this.tag = row ?? crypto.randomUUID();
      this.stored = row !== null;
    }
    return this.tag;
  }

  /**
   * The works ETag as a works poll hands it out: kept in the `worksEtag` row (one row written the
   * first time), so that the poll agent's ETag outlives this object's eviction.
   */
  private pollEtag(): string {
    const etag = this.etag();
    if (!this.stored) {
      this.state.write(WORKS_ETAG, etag);
      this.stored = true;
    }
    return etag;
  }

  /**
   * What a works poll with `ifNoneMatch` (the ETag the agent holds) learns of `obj`'s works,
   * without them; the ETag is kept in the `worksEtag` row from then on ({@link pollEtag}).
   */
  stateOf(obj: KubeObject, ifNoneMatch: string | undefined): WorksState {
    const etag = this.pollEtag();
    return { etag, leaving: Boolean(obj.metadata.deletionTimestamp), changed: ifNoneMatch !== etag };
  }

  /**
   * Records a works change: with `delta` the works kept in memory take it in, without it they
   * are read from D1 at the next changed poll (`null`: the change is known, and nothing is held
   * to take it in: {@link takesChange}); a new ETag when `exists` (the cluster has an
   * object: a cluster without one gets a fresh ETag at its first poll anyway), written to the
   * `worksEtag` row only when a works poll handed out the one before (see the module comment),
   * and every waiting long-poll answers at once.
   */
  changed(exists: boolean, delta?: DeliverableDelta | null): void {
    if (!exists) return this.works.invalidate();
    if (delta) this.works.apply(delta);
    else if (delta === undefined) this.works.invalidate();
    this.etag();
    this.tag = crypto.randomUUID();
    if (this.stored) this.state.write(WORKS_ETAG, this.tag);
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Whether works change `m` would be taken in (works are held, or being read, or the kept entries
   * prove them with it: src/work/namespace-deliverables.ts): else it need not be parsed.
   */
  takesChange(m: DeliverableDeltaMessage): boolean {
    return this.works.takesChange({ key: keyOf(m.kind, m.name), resourceVersion: m.resourceVersion, removed: m.json === null });
  }

  /** Forgets the works kept in memory and the ETag (the cluster was removed, its storage erased). */
  invalidate(): void {
    this.works.invalidate();
    this.tag = null;
    this.stored = false;
  }

  /**
   * Waits up to `ms` milliseconds for a works change; resolves null then, or at once with a 429
   * TooManyRequests Status when {@link MAX_WORKS_WAITERS} long-polls of this cluster already wait.
   */
  wait(ms: number): Promise<{ ok: false; status: Status } | null> {
    if (this.waiters.size >= MAX_WORKS_WAITERS) {
      return Promise.resolve(
        errorResult(
          tooManyRequests(
            `too many works long-polls: ${MAX_WORKS_WAITERS} requests of this cluster already wait for a works change`,
            WORKS_RETRY_AFTER_SECONDS,
          ),
        ),
      );
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(null);
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /**
   * Finishes a works poll of cluster `name` outside the object's queue, so heartbeats and other
   * calls go on: a poll whose ETag still matches waits up to `waitMs` milliseconds for a change
   * (or the start of a leave), then the state is read again; a changed state carries the
   * namespace's works (read from D1 when not kept: `read` is then true).
   * @returns the poll's state, or a 429 Status (see {@link wait})
   */
  async answer(
    name: string,
    first: WorksState,
    ifNoneMatch: string | undefined,
    waitMs: number,
  ): Promise<{ ok: true; value: WorksState; read: boolean } | { ok: false; status: Status }> {
    let value = first;
    if (!value.changed && waitMs > 0) {
      const refused = await this.wait(waitMs);
      if (refused) return refused;
      const obj = this.state.viewObject();
      value = obj ? this.stateOf(obj, ifNoneMatch) : { ...value, leaving: true, changed: true };
    }
    let read = false;
    if (value.changed) {
      const known = await this.current(name);
      if (known) value = { ...value, works: known.works };
      read = known?.read ?? false;
    }
    return { ok: true, value, read };
  }

  /**
   * The works and replicated Policies of cluster `name`'s namespace as kept here
   * (src/work/namespace-deliverables.ts; `splitDelivered` separates them), read from D1 when none are
   * kept (`read` true then); null when the namespace holds too many bytes of them to keep (a poll
   * then reads them from D1 in the Worker, {@link readDelivered}).
   */
  current(name: string): Promise<{ works: KubeObject[]; read: boolean } | null> {
    return this.works.current(clock.now(), () => readDelivered(this.env, name));
  }
}

/**
 * The ManifestWorks and replicated Policies of cluster `name`'s namespace, from D1, with the
 * store's resourceVersion both reads reflect (the older of the two snapshots: a change newer than
 * it is taken from the hook, src/work/namespace-deliverables.ts).
 */
export async function readDelivered(env: Env, name: string): Promise<{ items: KubeObject[]; resourceVersion: number }> {
  const [works, policies] = await Promise.all([storeOf(env, ManifestWorkKind).list(name), storeOf(env, PolicyKind).list(name)]);
  return {
    items: [...works.items, ...policies.items.filter(isReplicatedPolicy)],
    resourceVersion: Math.min(Number(works.resourceVersion), Number(policies.resourceVersion)),
  };
}
