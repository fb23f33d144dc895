/**
 * The Store's types (src/store/store.ts): the {@link Store} interface a backend implements, its
 * write options and outcomes. A module of its own so that the backends (src/store/d1,
 * src/store/cluster-object) implement the interface without importing src/store/store.ts, which
 * chooses among them (no import cycle).
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { WriteRequest } from "../k8s/write.ts";
import type { ListResult, NamespaceAdmission, Page, PageOptions, WatchEvent } from "./d1/objects.ts";

export type { NamespaceAdmission };
import type { WaitUntil } from "./outbox.ts";
import type { AuditAppendLimits, AuditRow } from "./d1/audit-log.ts";

/**
 * Who is waiting on a write: `"waits"` (the default) for a person's, a webhook's or a
 * controller's write, which returns after the effects its hooks cause (a Placement's decisions)
 * are written; `"returns"` for an agent's write (a status report, a lease expiry), which returns
 * once its hooks' work is durably queued (the scheduler's pending triggers), so an agent never
 * waits on scheduling. README.md ("Which writes wait") lists them.
 */
export type WriterMode = "waits" | "returns";

/**
 * What a ManagedCluster write changes of what OCM guards (src/auth/ocm-admission.ts): its cluster
 * set (`[from, to]`, `""` for none; null when the label does not change) and whether it accepts
 * the cluster. The API admits one for the requesting user; the cluster backend carries it to the
 * cluster's object, which refuses a write that would make another ({@link WriteOptions.admitted}).
 */
export interface ClusterTransition {
  clusterSet: [string, string] | null;
  accepts: boolean;
}

/** The outcome of a write: the object as stored (after a delete: as it was, or null once removed) and whether it was created. */
export interface WriteOutcome {
  object: KubeObject | null;
  created: boolean;
}

/**
 * The audit record of an API request's write (src/audit/middleware.ts), which the D1 backend
 * stores in the write's own atomic batch, under its precondition: the record is committed exactly
 * when the write is, with no D1 call of its own. `row(name, code)` is the record of the write of
 * the object named `name` answered with HTTP `code` (201 when the write created the object, else
 * 200), built when the commit is prepared; `limits` the log's retention (src/audit/log.ts). The
 * backend sets `committed` to that code once the batch committed (the answer may yet differ: a
 * failure after the commit), and leaves it unset when it committed nothing or keeps no record.
 */
export interface CommitAudit {
  row(name: string, code: number): AuditRow;
  limits: AuditAppendLimits;
  committed?: number;
}

/**
 * Options of {@link Store.write}, for the D1 backend (the cluster backend takes `admitted` only):
 * `extras` reach the kind's strategy (a BootstrapToken's secret hash); `known` is the object as
 * the caller just read it, null when it read none there (its first attempt skips the read; a
 * stale copy fails its precondition); `waitUntil` lets the commit share a D1 batch with other small writes
 * (src/store/d1/write.ts `writeStored`); `mode` `"returns"` (with `waitUntil`), for an agent's
 * write: it answers once committed, and its after-commit hooks run after, under `waitUntil`
 * (src/store/d1/write.ts `WriterMode`).
 */
export interface WriteOptions {
  extras?: Record<string, unknown>;
  known?: KubeObject | null;
  waitUntil?: WaitUntil;
  mode?: WriterMode;
  /**
   * The API request's audit record, committed with the write by the D1 backend ({@link CommitAudit},
   * which it marks `committed` then). The cluster backend and a write that commits nothing leave
   * it to the caller.
   */
  audit?: CommitAudit;
  /**
   * The cluster backend's one option: the ManagedCluster transition the API admitted for the
   * requesting user (src/auth/ocm-admission.ts); a write that would make another is refused with
   * 409 Conflict. Absent for the hub's own writers.
   */
  admitted?: ClusterTransition;
  /**
   * The D1 backend's NamespaceLifecycle for a create (src/admission/store.ts): the create commits
   * only while its namespace admits new content, a precondition of its own batch, instead of a
   * read before it ({@link NamespaceAdmission}). Ignored by writes other than a create.
   */
  namespaceAdmission?: NamespaceAdmission;
}

/**
 * One write of {@link Store.writeMany}: where, what, and the stored object as the caller read it
 * (undefined: read it; null: known absent).
 */
export interface ManyWrite {
  namespace: string;
  name: string;
  req: WriteRequest;
  known?: KubeObject | null;
}

/** The outcome of one {@link ManyWrite}: the object as stored (null after a delete), or `lost` when another writer committed first. */
export type ManyOutcome = KubeObject | null | "lost";

/** A range of names in one namespace, for {@link Store.listNameRanges}: names strictly between `from` and `to`, at most `limit`. */
export interface NameRange {
  namespace: string;
  from: string;
  to: string;
  limit: number;
}

/** The objects of one kind, wherever they are stored. */
export interface Store {
  /** The kind this store serves. */
  readonly def: KindDefinition;
  /**
   * The object at (namespace, name) (namespace "" for a cluster-scoped kind), or null, from the
   * backend that owns it (the cluster backend asks the cluster's Durable Object).
   */
  get(namespace: string, name: string): Promise<KubeObject | null>;
  /**
   * The object at (namespace, name) as last committed to the D1 index, or null: one indexed read,
   * never a call to the Durable Object that owns it (what a controller, or that object itself,
   * reads). The same as {@link get} for the D1 backend.
   */
  getCommitted(namespace: string, name: string): Promise<KubeObject | null>;
  /**
   * The objects at `keys` (namespace "" for a cluster-scoped kind), per key in order, or null: the
   * D1 backend reads them in one D1 call; the cluster backend asks each object.
   */
  getMany(keys: readonly { namespace: string; name: string }[]): Promise<(KubeObject | null)[]>;
  /** Every object in `namespace` (undefined: all namespaces), sorted, with the collection's resourceVersion. */
  list(namespace?: string): Promise<ListResult>;
  /**
   * One page of the objects in `namespace` (undefined: all), in (namespace, name) order, from
   * `opts.after`, filtered, through the label index when `opts.index` is given
   * (src/store/d1/objects.ts `listPage`).
   * @throws ApiError 500 when an encrypted field cannot be opened
   */
  listPage(namespace: string | undefined, opts?: PageOptions): Promise<Page>;
  /** The objects named `name` in every namespace, sorted by namespace (one query: a replica set's works, a set's bindings). */
  listNamed(name: string): Promise<KubeObject[]>;
  /**
   * The first object whose JSON field at `path` (an SQLite JSON path, e.g. `$.status.webhookPath`)
   * equals `value`, or null: a scan of the kind's index rows, for kinds with few objects.
   */
  findByField(path: string, value: string): Promise<KubeObject | null>;
  /**
   * The objects in `namespace` whose names fall strictly between `from` and `to`, newest name
   * first (descending), at most `limit`: one range read of the key (an object's Events, named
   * `<object>.<time>`).
   */
  listNameRange(namespace: string, from: string, to: string, limit: number): Promise<KubeObject[]>;
  /**
   * {@link listNameRange} for several ranges at once (the D1 backend: one D1 call for all):
   * per range, in the order given, its objects newest name first.
   */
  listNameRanges(ranges: readonly NameRange[]): Promise<KubeObject[][]>;
  /**
   * The watch events of this kind after resourceVersion `afterRv` (exclusive), oldest first, at
   * most `limit` (default 500), in `namespace` or all, with the counter's value (`latest`).
   */
  events(namespace: string | undefined, afterRv: number, limit?: number): Promise<{ events: WatchEvent[]; latest: number }>;
  /** The object as its last event before `beforeRv` (exclusive) left it, or null (src/api/watch.ts). */
  eventBefore(namespace: string, name: string, beforeRv: number): Promise<KubeObject | null>;
  /**
   * Runs one write (the kind's strategy, validation, the commit, its after-commit hooks).
   * `name` may be undefined or "" for a create whose body names the object or asks for a
   * `generateName`.
   * @throws ApiError (4xx) as the write's own answer: 400/422 bad input, 404, 409; nothing is written then
   */
  write(namespace: string, name: string | undefined, req: WriteRequest, opts?: WriteOptions): Promise<WriteOutcome>;
  /**
   * Runs many writes at once, for a controller that writes across a fleet (a replica set's works,
   * a policy's replicas, Events): the D1 backend commits them in D1 batches, each with its own
   * precondition, then runs their hooks (src/store/d1/write.ts `writeStoredMany`). No write is
   * retried: one that lost a race answers `lost`, for the caller to compute again on a fresh read.
   * Returns the outcomes in the order of `writes`.
   * @throws ApiError (4xx) when a write is invalid (nothing of its batch is committed then)
   */
  writeMany(writes: ManyWrite[]): Promise<ManyOutcome[]>;
}
