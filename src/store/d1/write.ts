/**
 * The one write path for D1-stored kinds, below the HTTP layer: the D1 backend of the store
 * (src/store/store.ts), through which every writer (the admin API, agent routes, controllers,
 * webhook receivers) writes, and the commit the cluster object's backend runs too, so every
 * write has the same effects. A commit records what it owes the registered after-commit hooks
 * (src/store/hooks.ts) in an outbox row of the same atomic batch (src/store/outbox.ts), runs
 * them, and deletes the row once they finished.
 */
import { ApiError } from "../../k8s/errors.ts";
import { resourceKey, type KindDefinition } from "../../k8s/kind.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import {
  changeCounterShape,
  COMMIT_BATCH_ITEMS,
  commitObjectOutcome,
  commitObjects,
  d1Database,
  getObject,
  labelIndexStatements,
  needsRewrite,
  ownerIndexStatements,
  type CommitExtras,
  type CommitItem,
  type Database,
  type GuardedBinder,
  type StoreKey,
} from "./objects.ts";
import { computeWrite, settleDeletion, type WriteRequest } from "../../k8s/write.ts";
import type { Env } from "../../env.ts";
import type { CommitAudit, ManyOutcome, ManyWrite, NamespaceAdmission, WriteOutcome, WriterMode } from "../types.ts";
import { auditRowStatements } from "./audit-log.ts";
import { commitStatements, planHooks, quietUnless, type SharedReads } from "../hooks.ts";
import { deferOutboxDelete, deleteOutboxRows, OUTBOX_GRACE_MS, retryTime, runOwed, type OwedWork, type WaitUntil } from "../outbox.ts";
import { clock } from "../../clock.ts";

/**
 * A committed write: its kind, the object before it (null on create) and as stored (null after a
 * delete), and the after-commit work it owes (its outbox row), or null when it owes none.
 */
export interface Committed {
  def: KindDefinition;
  before: KubeObject | null;
  object: KubeObject | null;
  owed: OwedWork | null;
}

/**
 * Commits `next` (null: delete) in place of `before` (null: create) with the resourceVersion
 * precondition of `before`, and in the same atomic batch the outbox row of what the change owes
 * the registered hooks. Does not run the hooks: the caller runs {@link finishCommit} once it has
 * done what must precede them (a Durable Object stores its copy first). `now` is epoch
 * milliseconds; `extra` adds statements to the batch (see `CommitExtras`); `grouped`: the commit
 * may share a D1 batch with others (src/store/d1/objects.ts `commitObject`); `admission`, for a
 * create: its namespace must admit new content as the batch commits (`NamespaceAdmission`).
 * @throws ApiError 404, 409 (the precondition failed; nothing was written); `admission`'s refusal
 */
export async function commitChange(
  env: Env,
  def: KindDefinition,
  key: StoreKey,
  before: KubeObject | null,
  next: KubeObject | null,
  now: number,
  extra?: CommitExtras["extra"],
  grouped = false,
  admission?: NamespaceAdmission,
): Promise<Committed> {
  const db = d1Database(env);
  const { item, owed } = prepareCommit(db, def, key, before, next, now, extra);
  const { object, outboxSkipped } = await commitObjectOutcome(db, def, key, next, item.expectedRv, item.extras, grouped, admission);
  return { def, before, object, owed: outboxSkipped ? null : owed };
}

/**
 * What a write of `key` from `before` to `next` commits besides the object, at `now` (epoch ms):
 * the outbox row of what it owes the registered hooks (written only while their `quiet` counter
 * moved, when they all have one: src/store/hooks.ts `quietUnless`), and the indexes' statements (labels for
 * labelSelector lists, owners for the garbage collector: none when neither changed), the statements
 * controllers add (the manifest's `statements`, src/controllers.ts), plus `extra`.
 */
function prepareCommit(
  db: Database,
  def: KindDefinition,
  key: StoreKey,
  before: KubeObject | null,
  next: KubeObject | null,
  now: number,
  extra?: CommitExtras["extra"],
): { item: CommitItem; owed: OwedWork | null } {
  const change = { def, namespace: key.namespace, name: key.name, before, after: next };
  const hooks = planHooks(change);
  const owed = hooks ? { id: crypto.randomUUID(), resource: resourceKey(def), namespace: key.namespace, name: key.name, hooks } : null;
  const extras: CommitExtras = {
    outbox: owed ? { id: owed.id, hooks: JSON.stringify(hooks), createdAt: now, dueAt: now + OUTBOX_GRACE_MS, unless: quietUnless(owed.hooks) } : undefined,
    extra: (guarded) => [
      ...labelIndexStatements(before, next, guarded),
      ...ownerIndexStatements(before, next, guarded),
      ...(def.changeCounter !== undefined ? [guarded(changeCounterShape, { counter: def.changeCounter })] : []),
      ...commitStatements(change, guarded),
      ...(extra?.(guarded) ?? []),
    ],
  };
  return { item: { key, next, expectedRv: before ? Number(before.metadata.resourceVersion) : null, extras }, owed };
}

/**
 * Runs the after-commit hooks a commit owes and deletes its outbox row; a hook that fails is
 * logged and left to the sweep (never thrown: the write has committed). `now` is epoch
 * milliseconds; `mode` says whether the writer waits for the hooks' effects ({@link WriterMode});
 * given `waitUntil` (the request's), the finished row is deleted just after instead, with other
 * writes' rows (`deferOutboxDelete`): one D1 query less for the most frequent writes, agents' reports.
 * `reads`: the lookups its hooks share with those of commits finished together (`HookTarget.reads`).
 * Returns whether a hook rewrote the written object itself.
 */
export async function finishCommit(
  env: Env,
  committed: Committed,
  now: number,
  mode: WriterMode = "waits",
  waitUntil?: WaitUntil,
  reads?: SharedReads,
): Promise<{ rewrote: boolean }> {
  const { def, before, object, owed } = committed;
  if (!owed) return { rewrote: false };
  const change = { def, namespace: owed.namespace, name: owed.name, before, after: object };
  const { rewrote, finished, tookRow } = await runOwed(env, owed, {
    recovering: false,
    retryAt: retryTime(now),
    change,
    writerWaits: mode === "waits",
    deleteWhenFinished: !waitUntil,
    reads,
  });
  if (finished && !tookRow && waitUntil) deferOutboxDelete(env, owed.id, waitUntil);
  return { rewrote };
}

/**
 * How many times a write without a resourceVersion precondition is tried when other writers
 * keep committing first (kube-apiserver's GuaranteedUpdate retries without a bound; this bound
 * only stops a livelock, and is far above what 50 concurrent writers on one object need).
 */
const MAX_ATTEMPTS = 100;
/** Upper bound of the random wait before a retry, in milliseconds (grows with the attempt, up to this). */
const MAX_RETRY_WAIT_MS = 200;

/** Waits a random 0..min(2^attempt, MAX_RETRY_WAIT_MS) milliseconds (full jitter), so that racing writers spread out. */
function backoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(2 ** attempt, MAX_RETRY_WAIT_MS);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Commits one write of a D1-stored kind (create, update, merge patch, apply, delete; main
 * resource or status) with the generic strategy, then runs the after-commit hooks it owes (the
 * placement scheduler, works delivery, replica sets: before this returns). The admin API,
 * controllers, Durable Objects and webhook receivers all write through here.
 *
 * As kube-apiserver's GuaranteedUpdate: when another writer committed between the read and the
 * commit, the write is computed again on a fresh read and retried (with a small random wait),
 * so patches, updates and deletes without a resourceVersion precondition apply however many
 * writers race; a request that carries a precondition (a resourceVersion in the body or the
 * patch, DeleteOptions preconditions) is checked again on the fresh read and gets its 409 there.
 * Concurrent writers of one object race and retry rather than queue: a write never waits on a
 * promise of another request (workerd cancels a request that waits on another's promise with
 * nothing of its own pending, as hung, and a queue link such a request left would never settle;
 * issue 27). Each retry waits on a timer of its own request.
 *
 * Returns the object as stored when this returns (null after a delete: the object as it was):
 * when an after-commit hook rewrote it (the scheduler writes a new Placement's status, the
 * replica set controller its finalizer), it is read again, so an update built from the answer
 * does not conflict with the write's own effects. Also whether the write created the object.
 * `known` is the stored object as the caller just read it (a controller that listed it, or a
 * route that checked it), null when the caller found none: the first attempt uses it instead of
 * reading it again, and the commit's precondition (the resourceVersion, or for an object known
 * absent that no row exists) still refuses it if it was stale (one D1 query less per write).
 * `waitUntil` (the request's, for frequent small writes from many requests: agents' status
 * reports): the commit may share a D1 batch with other such writes of the isolate
 * (src/store/group-commit.ts), and the finished outbox row is deleted just after, with others
 * (see {@link finishCommit}). `mode` `"returns"` with `waitUntil` (an agent's write): the write
 * answers once committed, with the object as committed, and its hooks run after the answer under
 * `waitUntil` (their outbox row, committed in the same batch, keeps them owed until they
 * finished: a crash meanwhile leaves them to the sweep), so an agent's acknowledgement waits for
 * no other object. `audit`: the request's audit record, committed in the write's own batch (marked
 * `committed` then; a write that commits nothing records nothing). `admission`: a write that
 * creates the object commits only while its namespace admits new content (NamespaceLifecycle as
 * a precondition of the commit's batch, src/store/types.ts `NamespaceAdmission`).
 * @throws ApiError (4xx) for a bad request, a conflict or a missing object, `admission`'s
 *   refusal; nothing is written then.
 */
export async function writeStored(
  env: Env,
  def: KindDefinition,
  namespace: string,
  name: string,
  req: WriteRequest,
  extras?: Record<string, unknown>,
  known?: KubeObject | null,
  waitUntil?: WaitUntil,
  mode: WriterMode = "waits",
  audit?: CommitAudit,
  admission?: NamespaceAdmission,
): Promise<WriteOutcome> {
  const outcome = await commitWithRetries(env, def, { namespace, name }, req, extras, known, waitUntil !== undefined, audit, admission);
  if (!outcome.committed) return { object: outcome.unchanged, created: outcome.created };
  const { committed, created, now } = outcome;
  if (audit && outcome.audited) audit.committed = created ? 201 : 200;
  if (mode === "returns" && waitUntil) {
    waitUntil(
      finishCommit(env, committed, now, "returns", waitUntil).catch((e: unknown) =>
        console.error(`after-commit hooks of ${def.plural} ${namespace}/${name} failed; a sweep runs them again`, e),
      ),
    );
    return { object: committed.object ?? committed.before, created };
  }
  const { rewrote } = await finishCommit(env, committed, now, "waits", waitUntil);
  let object = committed.object;
  if (rewrote && object) object = (await getObject(d1Database(env), def, { namespace, name: object.metadata.name })) ?? object;
  // A delete answers with the object as it was (as the apiserver does).
  return { object: object ?? committed.before, created };
}

/**
 * Reads, computes and commits one write, again on a fresh read while other writers commit first
 * (see {@link writeStored}). Returns the commit and its time (epoch ms), or the stored object
 * when the write changes nothing (`committed` null).
 */
async function commitWithRetries(
  env: Env,
  def: KindDefinition,
  key: { namespace: string; name: string },
  req: WriteRequest,
  extras: Record<string, unknown> | undefined,
  known: KubeObject | null | undefined,
  grouped: boolean,
  audit?: CommitAudit,
  admission?: NamespaceAdmission,
): Promise<{ committed: Committed; created: boolean; now: number; audited: boolean } | { committed: null; unchanged: KubeObject | null; created: boolean }> {
  const db = d1Database(env);
  for (let attempt = 0; ; attempt++) {
    const current = req.verb === "create" ? null : attempt === 0 && known !== undefined ? known : await getObject(db, def, key);
    const now = clock.now();
    const ctx = { now, newUid: () => crypto.randomUUID(), extras };
    let computed: ReturnType<typeof computeWrite>;
    try {
      computed = computeWrite(def, key, current, req, ctx);
      // A row sealed under an older key (or not at all) is written again even when nothing changed,
      // as the apiserver rewrites stale objects on update (src/k8s/encryption.ts).
      if (computed.next === current && !(current && needsRewrite(current))) return { committed: null, unchanged: current, created: computed.created };
      if (computed.next && def.finalize) await def.finalize(computed.next, current, ctx);
    } catch (e) {
      // NamespaceLifecycle runs before the strategy's validation in kube-apiserver: its refusal first.
      throw (current === null && admission && e instanceof ApiError && (await admission.refusal())) || e;
    }
    const { next, created } = computed;
    const settled = settleDeletion(next, def);
    const storeKey = { namespace: key.namespace, name: (settled ?? next ?? current)!.metadata.name };
    const auditing = audit;
    const record = auditing && ((guarded: GuardedBinder) => auditRowStatements(guarded, auditing.row(storeKey.name, created ? 201 : 200), auditing.limits));
    try {
      const admitting = created ? admission : undefined;
      return {
        committed: await commitChange(env, def, storeKey, current, settled, now, record, grouped, admitting),
        created,
        now,
        audited: record !== undefined,
      };
    } catch (e) {
      // A database the audit log's migration has not reached yet: the write commits without its
      // record, which the audit middleware then tries to store on its own (and logs its failure).
      if (record && missingAuditTable(e)) {
        audit = undefined;
        attempt--;
        continue;
      }
      if (e instanceof ApiError && e.reason === "Conflict" && req.verb !== "create" && attempt + 1 < MAX_ATTEMPTS) {
        await backoff(attempt);
        continue;
      }
      throw e;
    }
  }
}

/** Whether `e` is D1's refusal of a statement on the audit log's table where it does not exist (migrations/0009 not applied). */
function missingAuditTable(e: unknown): boolean {
  return e instanceof Error && /no such table: audit_events/.test(`${e.message} ${e.cause instanceof Error ? e.cause.message : ""}`);
}

/** After-commit hook runs {@link writeStoredMany} keeps in flight (each may call a Durable Object). */
const HOOK_CONCURRENCY = 32;

/**
 * Commits many writes of one kind through the store's write path at once, for a controller that
 * writes across a fleet (a replica set's works): each is computed as {@link writeStored} computes
 * it (on `known`, or a fresh read), the changes are committed {@link COMMIT_BATCH_ITEMS} to a D1
 * batch, each with its own precondition, outbox row and indexes; then their after-commit hooks run,
 * {@link HOOK_CONCURRENCY} at a time (works delivery tells the clusters' Durable Objects in
 * parallel), and the finished outbox rows are deleted together, a batch at a time. A crash after a batch leaves its
 * outbox rows, which the sweep runs (src/store/outbox.ts). No write is retried here: one that lost
 * a race is answered `lost` for the controller to compute again on a fresh read.
 * Returns, per write in order, the object as stored (null after a delete), or `lost`.
 * @throws ApiError (4xx) when a write is invalid (nothing of that batch is committed then), errors of D1
 */
export async function writeStoredMany(env: Env, def: KindDefinition, writes: ManyWrite[]): Promise<ManyOutcome[]> {
  const out: ManyOutcome[] = new Array(writes.length);
  // Chunk by chunk: computing a chunk's writes is CPU work, its commit and hooks are I/O, so a
  // large fleet's writes never hold the isolate for long (its other requests run in between).
  // A chunk is computed and committed while the hooks of the one before run (a pipeline of two:
  // the chunks' objects differ, so their hooks owe nothing to one another's order).
  let hooks: Promise<void> | null = null;
  try {
    for (let start = 0; start < writes.length; start += COMMIT_BATCH_ITEMS) {
      const now = clock.now();
      const committed = await commitChunk(env, def, writes.slice(start, start + COMMIT_BATCH_ITEMS), start, out, now);
      await hooks;
      hooks = finishChunk(env, def, committed, now);
    }
  } finally {
    await hooks;
  }
  return out;
}

/** One chunk of {@link writeStoredMany} computed and committed: `writes` are its items from `offset`; results go to `out`. */
async function commitChunk(env: Env, def: KindDefinition, writes: ManyWrite[], offset: number, out: ManyOutcome[], now: number): Promise<Committed[]> {
  const db = d1Database(env);
  const items: CommitItem[] = [];
  const pending: { index: number; before: KubeObject | null; owed: OwedWork | null }[] = [];
  for (const [i, w] of writes.entries()) {
    const key = { namespace: w.namespace, name: w.name };
    const current = w.req.verb === "create" ? null : w.known !== undefined ? w.known : await getObject(db, def, key);
    const ctx = { now, newUid: () => crypto.randomUUID() };
    const { next } = computeWrite(def, key, current, w.req, ctx);
    if (next === current && !(current && needsRewrite(current))) {
      out[offset + i] = current;
      continue;
    }
    if (next && def.finalize) await def.finalize(next, current, ctx);
    const settled = settleDeletion(next, def);
    const storeKey = { namespace: key.namespace, name: (settled ?? next ?? current)!.metadata.name };
    const { item, owed } = prepareCommit(db, def, storeKey, current, settled, now);
    items.push(item);
    pending.push({ index: offset + i, before: current, owed });
  }
  const outcomes = await commitObjects(db, def, items);
  const committed: Committed[] = [];
  outcomes.forEach((o, j) => {
    const p = pending[j]!;
    if (!o.ok) {
      out[p.index] = "lost";
      return;
    }
    out[p.index] = o.object ?? p.before;
    committed.push({ def, before: p.before, object: o.object, owed: o.outboxSkipped ? null : p.owed });
  });
  return committed;
}

/**
 * Runs the hooks a committed chunk owes ({@link HOOK_CONCURRENCY} at a time) and deletes its
 * finished outbox rows. The hooks share their lookups ({@link SharedReads}): a controller's chunk
 * of dependents of one owner (a placement's bindings) has the owner read once, not once each.
 * Never throws.
 */
async function finishChunk(env: Env, def: KindDefinition, committed: Committed[], now: number): Promise<void> {
  const finished: string[] = [];
  const reads: SharedReads = new Map();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(HOOK_CONCURRENCY, committed.length) }, async () => {
      while (next < committed.length) {
        const c = committed[next++]!;
        if (!c.owed) continue;
        const change = { def, namespace: c.owed.namespace, name: c.owed.name, before: c.before, after: c.object };
        const r = await runOwed(env, c.owed, { recovering: false, retryAt: retryTime(now), change, writerWaits: true, deleteWhenFinished: false, reads });
        if (r.finished && !r.tookRow) finished.push(c.owed.id);
      }
    }),
  );
  await deleteOutboxRows(env, finished);
}
