/**
 * The one store every writer and reader of objects goes through (kube-apiserver's generic
 * `registry.Store`): `get`, `list` and `write` (create, update, patch, delete of the object or its
 * status: a `WriteRequest`) over a backend that the kind's definition chooses (`def.storage`):
 * - `d1`: the D1 store (src/store/d1/write.ts `writeStored`: the kind's strategy, the commit with its
 *   outbox row, the after-commit hooks);
 * - `cluster`: the cluster's Durable Object (durable-objects/cluster.ts), which serialises the
 *   writes of its ManagedCluster, runs OCM's hub controllers on them and holds the lease, and
 *   commits to D1 through the same write path. Lists read the D1 index it commits to.
 */
import { ApiError, badRequest, type Status } from "../k8s/errors.ts";
import type { KindDefinition, VersionConversion } from "../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { getObject, listObjects, type ListResult } from "./d1/objects.ts";
import { computeWrite, generatedName, type WriteRequest } from "../k8s/write.ts";
import type { Env } from "../env.ts";
import type { Result } from "../../durable-objects/cluster/types.ts";
import type { WaitUntil } from "./outbox.ts";
import { store as database, writeStored, type WriterMode } from "./d1/write.ts";
import { admitNamespace, admitsNamespace } from "../namespaces/lifecycle.ts";
import type { ClusterTransition } from "../auth/ocm-admission.ts";
import { clock } from "../clock.ts";

/** The outcome of a write: the object as stored (after a delete: as it was, or null once removed) and whether it was created. */
export interface WriteOutcome {
  object: KubeObject | null;
  created: boolean;
}

/**
 * Options of {@link Store.write}, for the D1 backend (the cluster backend takes none):
 * `extras` reach the kind's strategy (a BootstrapToken's secret hash); `known` is the object as
 * the caller just read it (its first attempt skips the read; a stale copy fails its
 * precondition); `waitUntil` lets the commit share a D1 batch with other small writes
 * (src/store/d1/write.ts `writeStored`); `mode` `"returns"` (with `waitUntil`), for an agent's
 * write: it answers once committed, and its after-commit hooks run after, under `waitUntil`
 * (src/store/d1/write.ts `WriterMode`).
 */
export interface WriteOptions {
  extras?: Record<string, unknown>;
  known?: KubeObject;
  waitUntil?: WaitUntil;
  mode?: WriterMode;
  /**
   * The cluster backend's one option: the ManagedCluster transition the API admitted for the
   * requesting user (src/auth/ocm-admission.ts); a write that would make another is refused with
   * 409 Conflict. Absent for the hub's own writers.
   */
  admitted?: ClusterTransition;
}

/** The objects of one kind, wherever they are stored. */
export interface Store {
  /** The kind this store serves. */
  readonly def: KindDefinition;
  /** The object at (namespace, name) (namespace "" for a cluster-scoped kind), or null. */
  get(namespace: string, name: string): Promise<KubeObject | null>;
  /** Every object in `namespace` (undefined: all namespaces), sorted, with the collection's resourceVersion. */
  list(namespace?: string): Promise<ListResult>;
  /**
   * Runs one write (the kind's strategy, validation, the commit, its after-commit hooks).
   * `name` may be undefined or "" for a create whose body names the object or asks for a
   * `generateName`.
   * @throws ApiError (4xx) as the write's own answer: 400/422 bad input, 404, 409; nothing is written then
   */
  write(namespace: string, name: string | undefined, req: WriteRequest, opts?: WriteOptions): Promise<WriteOutcome>;
}

/** The D1 backend. */
function d1Store(env: Env, def: KindDefinition): Store {
  return {
    def,
    get: (namespace, name) => getObject(database(env), def, { namespace, name }),
    list: (namespace) => listObjects(database(env), def, namespace),
    write: (namespace, name, req, opts = {}) => writeStored(env, def, namespace, name ?? "", req, opts.extras, opts.known, opts.waitUntil, opts.mode),
  };
}

/** A Status that crossed the Durable Object's RPC boundary, as the error it was. */
function apiErrorOf(status: Status): ApiError {
  return new ApiError(status.code, status.reason, status.message, status.details);
}

/**
 * The name a create addresses, which routes it to its object: the body's `metadata.name`, or one
 * made from its `generateName` (then written into the body).
 * @throws ApiError the answer the write itself gives a create without either
 */
function nameOfCreate(def: KindDefinition, req: WriteRequest): string {
  const meta = req.verb === "create" && isJsonObject(req.body) && isJsonObject(req.body.metadata) ? req.body.metadata : {};
  if (typeof meta.name === "string" && meta.name) return meta.name;
  if (req.verb === "create" && typeof meta.generateName === "string" && meta.generateName) {
    const name = generatedName(meta.generateName);
    (req.body as { metadata: Record<string, unknown> }).metadata = { ...meta, name };
    return name;
  }
  // The same refusal the generic validation gives.
  computeWrite(def, { namespace: "" }, null, req, { now: 0, newUid: () => "" });
  throw badRequest("metadata.name is required", "metadata.name");
}

/** The cluster backend: each object in the Durable Object named by its name (CLUSTERS). */
function clusterObjectStore(env: Env, def: KindDefinition): Store {
  return {
    def,
    async get(_namespace, name) {
      const res = (await env.CLUSTERS.getByName(name).get(name)) as Result<KubeObject>;
      return res.ok ? res.value : null;
    },
    list: (namespace) => listObjects(database(env), def, namespace),
    async write(_namespace, name, req, opts) {
      const target = name || nameOfCreate(def, req);
      const res = (await env.CLUSTERS.getByName(target).write(target, req, opts?.admitted)) as Result<WriteOutcome>;
      if (!res.ok) throw apiErrorOf(res.status);
      return res.value;
    },
  };
}

/** The backends, by `KindDefinition.storage`. */
const BACKENDS: Record<KindDefinition["storage"], (env: Env, def: KindDefinition) => Store> = {
  d1: d1Store,
  cluster: clusterObjectStore,
};

/**
 * The store of kind `def` in a Worker environment (its backend chosen by `def.storage`). Every
 * create (or apply) of a namespaced kind passes NamespaceLifecycle first
 * (src/namespaces/lifecycle.ts): its namespace must exist and not be terminating.
 */
export function storeOf(env: Env, def: KindDefinition): Store {
  if (def.conversion) return convertedStore(env, def, def.conversion);
  const backend = BACKENDS[def.storage](env, def);
  if (!def.namespaced) return backend;
  return {
    ...backend,
    async write(namespace, name, req, opts) {
      if (admitsNamespace(def, req))
        await admitNamespace(env, def, namespace, name, req, async () => name !== undefined && name !== "" && (await backend.get(namespace, name)) !== null);
      return backend.write(namespace, name, req, opts);
    },
  };
}

/** How many times a converted write is computed again when another writer committed first (without a precondition of its own). */
const CONVERTED_ATTEMPTS = 8;

/**
 * The store of a kind served from another kind's objects (`KindDefinition.conversion`, e.g.
 * events.k8s.io/v1 Events stored as core v1 ones, add-ons' v1beta1 stored as v1alpha1), as
 * kube-apiserver serves one storage in several versions: reads convert the stored objects; a
 * create, update or patch is computed on this kind's form (its schema, strategy and validation,
 * managedFields under its apiVersion) and stored converted, as an update (of the same subresource)
 * with the read object's resourceVersion (computed again on a fresh read when another writer came
 * first and the request carries no resourceVersion of its own); a delete is the stored kind's.
 * @throws ApiError as {@link Store.write}
 */
function convertedStore(env: Env, def: KindDefinition, conv: VersionConversion): Store {
  const stored = storeOf(env, conv.storage);
  const out = (o: KubeObject | null) => (o ? conv.fromStorage(o) : null);
  return {
    def,
    get: async (namespace, name) => out(await stored.get(namespace, name)),
    async list(namespace) {
      const r = await stored.list(namespace);
      return { ...r, items: r.items.map((o) => conv.fromStorage(o)) };
    },
    async write(namespace, name, req, opts) {
      if (req.verb === "delete") {
        const r = await stored.write(namespace, name, req, opts);
        return { ...r, object: out(r.object) };
      }
      const pinned = req.verb === "update" && isJsonObject(req.body) && isJsonObject(req.body.metadata) && Boolean(req.body.metadata.resourceVersion);
      for (let attempt = 1; ; attempt++) {
        const before = req.verb === "create" || !name ? null : await stored.get(namespace, name);
        const current = out(before);
        const { next, created } = computeWrite(def, { namespace, name }, current, req, {
          now: clock.now(),
          newUid: () => crypto.randomUUID(),
          extras: opts?.extras,
        });
        if (next === current || !next) return { object: current, created };
        const body = conv.toStorage(next);
        const subresource = req.verb === "update" || req.verb === "patch" ? req.subresource : undefined;
        try {
          const r = before
            ? await stored.write(
                namespace,
                name,
                { verb: "update", subresource, body: { ...body, metadata: { ...body.metadata, resourceVersion: before.metadata.resourceVersion } } },
                opts,
              )
            : await stored.write(namespace, next.metadata.name, { verb: "create", body }, opts);
          return { object: out(r.object), created };
        } catch (e) {
          if (!(e instanceof ApiError && e.reason === "Conflict" && before && !pinned && attempt < CONVERTED_ATTEMPTS)) throw e;
        }
      }
    },
  };
}
