/**
 * The one store every writer and reader of objects goes through (kube-apiserver's generic
 * `registry.Store`, `k8s.io/apiserver/pkg/registry/generic/registry/store.go`): `get`, `list`,
 * pages, the event log and `write` (create, update, patch, delete of the object or its status: a
 * `WriteRequest`), one at a time or many in batches, over a backend that the kind's definition
 * chooses (`def.storage`), one folder per backend (as workers-oauth-provider's
 * `src/storage/{backend}`):
 * - `d1`: src/store/d1 (the D1 index: the kind's strategy, the commit with its outbox row, the
 *   after-commit hooks);
 * - `cluster`: src/store/cluster-object (the cluster's Durable Object, which serialises the
 *   writes of its ManagedCluster, runs OCM's hub controllers on them and holds the lease, and
 *   commits to D1 through the same write path). Lists, pages and the event log read the D1 index
 *   it commits to.
 *
 * Admission (NamespaceLifecycle, OCM's checks) sits above the store: src/admission/store.ts wraps
 * the backends through {@link storeOf}'s `around`. Cross-kind reads and the commit below the
 * backends (resourceVersions, the owner index, change counters, commit groups) are the
 * {@link Storage} of src/store/storage.ts.
 */
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition, VersionConversion } from "../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { computeWrite } from "../k8s/write.ts";
import type { Env } from "../env.ts";
import type { Store } from "./types.ts";
import { clock } from "../clock.ts";
import { d1Backend } from "./d1/backend.ts";
import { clusterObjectBackend } from "./cluster-object/backend.ts";
import { writeOneByOne } from "./one-by-one.ts";

export type { LabelIndexRequirement, ListResult, Page, PageOptions, StoreKey, WatchEvent } from "./d1/objects.ts";
export { EVENT_RETENTION, FUTURE_RESOURCE_VERSION_POLL_MS, FUTURE_RESOURCE_VERSION_WAIT_MS, LIST_CHUNK_ROWS, parseResourceVersion } from "./d1/objects.ts";
export type { ClusterTransition, ManyOutcome, ManyWrite, Store, WriteOptions, WriteOutcome, WriterMode } from "./types.ts";

/** The backends, by `KindDefinition.storage`. */
const BACKENDS: Record<KindDefinition["storage"], (env: Env, def: KindDefinition) => Store> = {
  d1: d1Backend,
  cluster: clusterObjectBackend,
};

/**
 * The store of kind `def` in a Worker environment: its backend chosen by `def.storage`, and for
 * a kind served from another kind's objects (`def.conversion`) the conversion around the storage
 * kind's store. `around`, given, wraps the backend's store (for a converted kind, the storage
 * kind's), as admission does (src/admission/store.ts `admittedStoreOf`, what routes and
 * controllers write through); without it, the store admits nothing.
 */
export function storeOf(env: Env, def: KindDefinition, around?: (store: Store) => Store): Store {
  if (def.conversion) return convertedStore(def, def.conversion, storeOf(env, def.conversion.storage, around));
  const backend = BACKENDS[def.storage](env, def);
  return around ? around(backend) : backend;
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
 * Many writes are written one by one (a conflict answers `lost`).
 * @throws ApiError as {@link Store.write}
 */
function convertedStore(def: KindDefinition, conv: VersionConversion, stored: Store): Store {
  const out = (o: KubeObject | null) => (o ? conv.fromStorage(o) : null);
  const store: Store = {
    def,
    get: async (namespace, name) => out(await stored.get(namespace, name)),
    getCommitted: async (namespace, name) => out(await stored.getCommitted(namespace, name)),
    getMany: async (keys) => (await stored.getMany(keys)).map(out),
    async list(namespace) {
      const r = await stored.list(namespace);
      return { ...r, items: r.items.map((o) => conv.fromStorage(o)) };
    },
    async listPage(namespace, opts) {
      const r = await stored.listPage(namespace, opts && { ...opts, filter: opts.filter && ((o) => opts.filter!(conv.fromStorage(o))) });
      return { ...r, items: r.items.map((o) => conv.fromStorage(o)) };
    },
    listNamed: async (name) => (await stored.listNamed(name)).map((o) => conv.fromStorage(o)),
    findByField: async (path, value) => out(await stored.findByField(path, value)),
    listNameRange: async (namespace, from, to, limit) => (await stored.listNameRange(namespace, from, to, limit)).map((o) => conv.fromStorage(o)),
    listNameRanges: async (ranges) => (await stored.listNameRanges(ranges)).map((list) => list.map((o) => conv.fromStorage(o))),
    async events(namespace, afterRv, limit) {
      const r = await stored.events(namespace, afterRv, limit);
      return { ...r, events: r.events.map((e) => ({ ...e, object: conv.fromStorage(e.object) })) };
    },
    eventBefore: async (namespace, name, beforeRv) => out(await stored.eventBefore(namespace, name, beforeRv)),
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
    writeMany: (writes) => writeOneByOne(store, writes),
  };
  return store;
}
