/**
 * After-commit hooks, the controllers' hooks that the controller manifest (src/controllers.ts)
 * installs in its order (the placement scheduler, works delivery, the replica set controller, a
 * removed cluster's namespace...), after kube-apiserver's
 * `registry.Store` AfterCreate/AfterUpdate/AfterDelete hooks and the informers controllers
 * watch. The write path (src/store/d1/write.ts) knows no feature: for every commit it looks the
 * change's kind up in the table of what each hook watches (the manifest's data, {@link Watch}),
 * asks only those hooks what the change owes them (`plan`, pure), records that in the commit's
 * outbox row (src/store/outbox.ts), runs the hooks, and deletes the row once they all finished.
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

/** A kind by its group and kind (a `KindDefinition` is one), any of its versions. */
export interface KindName {
  group: string;
  kind: string;
}

/** A change's type: the object created (no `before`), updated (both), or removed (no `after`). */
export type ChangeType = "create" | "update" | "delete";

/**
 * What wakes a hook, as data (the controller manifest, src/controllers.ts, declares each hook's
 * watches): the write path looks the change's kind up in a table built from them and calls only
 * the `plan` of the hooks that watch it, as an informer delivers an event only to the handlers
 * registered for its resource. A hook is owed nothing by a change none of its watches matches;
 * its `plan` still decides for the changes they match (a watch may be wider, never narrower).
 */
export interface Watch {
  /**
   * The kinds (matched by group and kind, any version); `"*"` for every kind (the garbage
   * collector: any object may have owners); or a rule over a kind's definition for an open set
   * (KubeFleet's and Karmada's selectable kinds, CRDs' included), applied once per kind when its
   * row of the table is built, never per change.
   */
  kinds: readonly KindName[] | "*" | ((def: KindDefinition) => boolean);
  /** Only these changes; every change when absent. */
  changes?: readonly ChangeType[];
  /** Only objects (the one after the write, else before it) that carry one of these label keys. */
  labels?: readonly string[];
}

/** A registered hook and its watches (none: it watches every change). */
interface Registered {
  hook: AfterCommitHook<unknown>;
  watches?: readonly Watch[];
}

const registry = new Map<string, Registered>();

/** A row of the kinds table: a registered hook and its watches that match one kind. */
export interface Watcher {
  hook: AfterCommitHook<unknown>;
  /** Its watches of the kind; undefined: every change of it. */
  watches?: readonly Watch[];
}

/** The table: per kind, the hooks that watch it, in registration order (rebuilt when a hook is registered). */
let byKind = new WeakMap<KindDefinition, Watcher[]>();

/**
 * Registers `hook` with `watches` (see {@link Watch}; absent: every change). Again under the same
 * name, it is replaced in place and keeps its watches unless new ones are given (a test's spy
 * wrapping a manifest hook sees the changes the hook sees). The manifest registers every hook
 * ({@link installHooks}); a test may add one, or replace one with a spy. Hooks run in the order
 * they were first registered.
 */
export function registerAfterCommitHook<Owed>(hook: AfterCommitHook<Owed>, watches?: readonly Watch[]): void {
  const had = registry.get(hook.name);
  registry.set(hook.name, { hook: hook as AfterCommitHook<unknown>, watches: watches ?? had?.watches });
  byKind = new WeakMap();
}

function watchesKind(w: Watch, def: KindDefinition): boolean {
  if (w.kinds === "*") return true;
  if (typeof w.kinds === "function") return w.kinds(def);
  return w.kinds.some((k) => k.group === def.group && k.kind === def.kind);
}

/** The hooks that watch `def` (a lookup; built on the kind's first change). */
export function watchersOf(def: KindDefinition): readonly Watcher[] {
  let row = byKind.get(def);
  if (!row) {
    row = [];
    for (const { hook, watches } of registry.values()) {
      if (!watches) {
        row.push({ hook });
        continue;
      }
      const mine = watches.filter((w) => watchesKind(w, def));
      if (mine.length > 0) row.push({ hook, watches: mine });
    }
    byKind.set(def, row);
  }
  return row;
}

function changeType(change: Change): ChangeType {
  return !change.before ? "create" : !change.after ? "delete" : "update";
}

/** Whether one of `watches` (all of the change's kind) matches the change's type and labels. */
function matches(watches: readonly Watch[], change: Change): boolean {
  for (const w of watches) {
    if (w.changes && !w.changes.includes(changeType(change))) continue;
    if (w.labels) {
      const labels = (change.after ?? change.before)?.metadata.labels;
      if (!labels || !w.labels.some((l) => labels[l] !== undefined)) continue;
    }
    return true;
  }
  return false;
}

/**
 * What `change` owes the hooks that watch it (hook name to its owed value), or null when nothing:
 * the `plan` of each hook its kind's row lists whose watches match the change.
 */
export function planHooks(change: Change): Record<string, unknown> | null {
  let owed: Record<string, unknown> | null = null;
  for (const { hook, watches } of watchersOf(change.def)) {
    if (watches && !matches(watches, change)) continue;
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
    const q = registry.get(name)?.hook.quiet?.(value);
    if (!q || (at && (at.counter !== q.counter || at.value !== q.value))) return undefined;
    at = q;
  }
  return at;
}

/** The registered hook named `name`, or undefined (a row naming it is then kept, never dropped). */
export function hookNamed(name: string): AfterCommitHook<unknown> | undefined {
  return registry.get(name)?.hook;
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

/** A registered {@link CommitStatements} and the kinds it concerns (none: every kind). */
interface RegisteredStatements {
  entry: CommitStatements;
  kinds?: readonly KindName[];
}

const commitStatementsRegistry = new Map<string, RegisteredStatements>();
let statementsByKind = new WeakMap<KindDefinition, CommitStatements[]>();

/** A hook of the manifest and its watches ({@link Watch}), as {@link installHooks} takes them. */
export interface HookEntry {
  hook: AfterCommitHook<never>;
  watches: readonly Watch[];
}

/** Commit statements of the manifest and the kinds they concern (absent: every kind). */
export interface StatementsEntry {
  statements: CommitStatements;
  kinds?: readonly KindName[];
}

/**
 * Installs the hooks and commit statements of the controller manifest (src/controllers.ts
 * `installControllers`), in their order, with what each watches: a hook already registered under
 * a name keeps its place (so installing again changes nothing).
 */
export function installHooks(hooks: readonly HookEntry[], statements: readonly StatementsEntry[]): void {
  for (const { hook, watches } of hooks) if (!registry.has(hook.name)) registry.set(hook.name, { hook: hook as AfterCommitHook<unknown>, watches });
  for (const { statements: entry, kinds } of statements)
    if (!commitStatementsRegistry.has(entry.name)) commitStatementsRegistry.set(entry.name, { entry, kinds });
  byKind = new WeakMap();
  statementsByKind = new WeakMap();
}

/** The statements the registered {@link CommitStatements} of `change`'s kind add to its commit (a lookup by kind). */
export function commitStatements(change: Change, guarded: GuardedBinder): D1PreparedStatement[] {
  let row = statementsByKind.get(change.def);
  if (!row) {
    row = [];
    for (const { entry, kinds } of commitStatementsRegistry.values())
      if (!kinds || kinds.some((k) => k.group === change.def.group && k.kind === change.def.kind)) row.push(entry);
    statementsByKind.set(change.def, row);
  }
  const out: D1PreparedStatement[] = [];
  for (const entry of row) out.push(...entry.statements(change, guarded));
  return out;
}
