/**
 * After-commit hooks, the controllers' hooks that the controller manifest (src/controllers.ts)
 * installs in its order (the placement scheduler, works delivery, the replica set controller, a
 * removed cluster's namespace...), after kube-apiserver's
 * `registry.Store` AfterCreate/AfterUpdate/AfterDelete hooks and the informers controllers
 * watch. The write path (src/store/d1/write.ts) knows no feature: for every commit it asks each
 * registered hook what the change owes it (`plan`, pure), records that in the commit's outbox
 * row (src/store/outbox.ts), runs the hooks, and deletes the row once they all finished.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { GuardedBinder } from "./d1/objects.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { Env } from "../env.ts";

/**
 * One committed change: the kind, where the object lives (`namespace` "" when cluster-scoped),
 * and the object before (null on create) and after (null after a delete) the write.
 */
export interface Change {
  def: KindDefinition;
  namespace: string;
  name: string;
  before: KubeObject | null;
  after: KubeObject | null;
}

/**
 * What an owed hook runs for: the written object's D1 resource key (`<group>/<plural>`),
 * namespace and name, and `recovering`: true when a sweep runs it again after a crash or a
 * failure (the hook's first run may have done part of its work, or all of it). `change` is the
 * committed change, its `after` the object as stored (with its resourceVersion), when the hook
 * runs right after its commit in the writer's process; a sweep has only the outbox row, so a
 * hook that needs the object then reads it by key.
 *
 * `writerWaits`: whether the writer waits for the hooks' effects before it answers (a person's
 * or a webhook's write, which returns after the decisions it causes are written), or must answer
 * at once (an agent's status report or lease expiry, which must never wait on work proportional
 * to anything but itself): a hook with slow effects then hands its work to a durable queue of
 * its own and returns once it is queued. A sweep runs with `writerWaits` false (nobody waits).
 *
 * `outbox`: the writer's outbox row (its id), when the writer runs its own row, and whether this
 * hook is the row's only one (`only`). Only then may the hook take the row over
 * ({@link HookOutcome.tookRow}): the row itself is the durable record of the queued work.
 */
export interface HookTarget {
  resource: string;
  namespace: string;
  name: string;
  recovering: boolean;
  writerWaits: boolean;
  change?: Change;
  outbox?: { id: string; only: boolean };
  /**
   * Reads shared by the hooks of commits finished together ({@link SharedReads}), when the
   * writer finishes several at once (the scheduler's decisions of one run).
   */
  reads?: SharedReads;
}

/**
 * Lookups shared by the hook runs of commits finished together (`Storage.finishTogether`), by
 * key (e.g. `manifestworkreplicasets/<namespace>`): ten PlacementDecisions written by one
 * scheduler run owe each consumer a run, and each run's lookup of what refers to its placement
 * reads the same list; with this, it is read once. A shared read started no earlier than the
 * commits it serves (they committed before their hooks run), so it sees them, as a controller's
 * informer cache does once its event arrived; it lives only as long as those runs.
 */
export type SharedReads = Map<string, Promise<unknown>>;

/**
 * `read()`, or the same read another hook run of `target`'s group already started under `key`
 * ({@link SharedReads}); without a group, `read()` alone. A failed read fails each run that shares it.
 */
export function sharedRead<T>(target: HookTarget | undefined, key: string, read: () => Promise<T>): Promise<T> {
  const reads = target?.reads;
  if (!reads) return read();
  let p = reads.get(key) as Promise<T> | undefined;
  if (!p) {
    p = read();
    reads.set(key, p);
  }
  return p;
}

/**
 * What a hook's run reports: `rewrote` when it wrote the changed object itself (e.g. a status);
 * `tookRow` when it took the outbox row over (only with `HookTarget.outbox.only`): its work is
 * queued in memory elsewhere, which deletes the row once the work finished, and the writer
 * leaves the row alone. The row stays the durable record until then: should the queue lose the
 * work (its object restarted), a sweep finds the row and runs the hook again (`recovering`).
 * `requeue` when its work waits on something else (a namespace's objects held by their
 * finalizers): the outbox row is kept and run again at its retry time, as a controller requeues,
 * without the failure being logged as one.
 */
export interface HookOutcome {
  rewrote?: boolean;
  tookRow?: boolean;
  requeue?: boolean;
}

/**
 * An after-commit hook. `plan` decides, from the change alone and before the commit, what the
 * change owes the hook: a JSON value stored in the outbox row, or null for nothing. `run` does
 * the work from that value; it must be idempotent (run again after a crash, it may find its work
 * done already) and throw when the work did not finish, so that the row is kept and swept later.
 */
export interface AfterCommitHook<Owed> {
  /** A stable name: it is stored in outbox rows, so renaming a hook strands their work. */
  readonly name: string;
  plan(change: Change): Owed | null;
  run(env: Env, owed: Owed, target: HookTarget): Promise<HookOutcome | void>;
  /**
   * Optional: a change counter (`KindDefinition.changeCounter`) and its value under which
   * `run(owed)` is known to do nothing, from what the writer's isolate holds (its lists of the
   * placements, none of which may concern the change, read at that value); null when it cannot
   * tell. When every hook a change owes answers the same ({@link quietUnless}), the commit writes
   * its outbox row only if the counter is no longer at that value as its atomic batch commits
   * (src/store/d1/objects.ts `CommitExtras.outbox.unless`): a commit that finds it there owes
   * nothing, and the writer runs no hook; one that finds it moved owes the hooks as planned.
   */
  quiet?(owed: Owed): CounterAt | null;
}

/** A change counter (`KindDefinition.changeCounter`) and a value of it. */
export interface CounterAt {
  counter: number;
  value: number;
}

const registry = new Map<string, AfterCommitHook<unknown>>();

/**
 * Registers `hook` (again under the same name: replaced in place). The manifest registers every
 * hook ({@link installHooks}); a test may add one, or replace one with a spy.
 * Hooks run in the order they were first registered.
 */
export function registerAfterCommitHook<Owed>(hook: AfterCommitHook<Owed>): void {
  registry.set(hook.name, hook as AfterCommitHook<unknown>);
}

/** What `change` owes each registered hook (hook name to its owed value), or null when nothing. */
export function planHooks(change: Change): Record<string, unknown> | null {
  let owed: Record<string, unknown> | null = null;
  for (const hook of registry.values()) {
    const value = hook.plan(change);
    if (value !== null) (owed ??= {})[hook.name] = value;
  }
  return owed;
}

/**
 * The counter and value under which every hook of `owed` (hook name to its owed value, as
 * {@link planHooks} answers) knows its run would do nothing (`AfterCommitHook.quiet`), when they
 * all name the same; undefined otherwise (a hook that cannot tell, or two different counters).
 */
export function quietUnless(owed: Record<string, unknown>): CounterAt | undefined {
  let at: CounterAt | undefined;
  for (const [name, value] of Object.entries(owed)) {
    const q = registry.get(name)?.quiet?.(value);
    if (!q || (at && (at.counter !== q.counter || at.value !== q.value))) return undefined;
    at = q;
  }
  return at;
}

/** The registered hook named `name`, or undefined (a row naming it is then kept, never dropped). */
export function hookNamed(name: string): AfterCommitHook<unknown> | undefined {
  return registry.get(name);
}

/**
 * Statements a feature adds to the atomic batch of each commit (besides the object, its event,
 * outbox row and indexes), for state that must change exactly with the object (a count kept by
 * +1/-1): `statements` is pure, decides from the change alone, and binds each statement with
 * `guarded` so that it takes effect only when the commit's precondition holds (src/store/d1/objects.ts
 * `guardedShape`). It returns none for a change that does not concern it, so such writes cost nothing more.
 */
export interface CommitStatements {
  /** A stable name. */
  readonly name: string;
  statements(change: Change, guarded: GuardedBinder): D1PreparedStatement[];
}

const commitStatementsRegistry = new Map<string, CommitStatements>();

/**
 * Installs the hooks and commit statements of the controller manifest (src/controllers.ts `installControllers`), in
 * their order: a hook already registered under a name keeps its place (so installing again changes nothing).
 */
export function installHooks(hooks: readonly AfterCommitHook<never>[], statements: readonly CommitStatements[]): void {
  for (const hook of hooks) if (!registry.has(hook.name)) registry.set(hook.name, hook as AfterCommitHook<unknown>);
  for (const entry of statements) if (!commitStatementsRegistry.has(entry.name)) commitStatementsRegistry.set(entry.name, entry);
}

/** The statements every registered {@link CommitStatements} adds to the commit of `change`. */
export function commitStatements(change: Change, guarded: GuardedBinder): D1PreparedStatement[] {
  const out: D1PreparedStatement[] = [];
  for (const entry of commitStatementsRegistry.values()) out.push(...entry.statements(change, guarded));
  return out;
}
