/**
 * The cluster-object backend of the store (src/store/store.ts), for ManagedClusters
 * (`storage: "cluster"`): each object lives in the Durable Object named by its name (the
 * `CLUSTERS` binding; durable-objects/cluster.ts), which serialises its writes, runs OCM's hub
 * controllers on them, holds the lease and commits to the D1 index through the D1 write path.
 * Lists, pages and the event log read that index.
 */
import { ApiError, badRequest, type Status } from "../../k8s/errors.ts";
import type { KindDefinition } from "../../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../../k8s/meta.ts";
import { computeWrite, generatedName, type WriteRequest } from "../../k8s/write.ts";
import type { Env } from "../../env.ts";
import type { ClusterTransition, Store, WriteOutcome } from "../types.ts";
import { d1Backend } from "../d1/backend.ts";
import { writeOneByOne } from "../one-by-one.ts";

/** An answer across the Durable Object's RPC boundary: the value, or the Status of the ApiError it threw. */
export type ObjectResult<T> = { ok: true; value: T } | { ok: false; status: Status };

/**
 * What this backend calls on a cluster's Durable Object (the leaf view of its RPC stub, so the
 * store imports no Durable Object type): `get` its ManagedCluster, `write` one request to it.
 */
export interface ClusterObjectStub {
  get(name: string): Promise<ObjectResult<KubeObject>>;
  write(name: string, req: WriteRequest, admitted?: ClusterTransition): Promise<ObjectResult<WriteOutcome>>;
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

/** The store of kind `def` whose objects live in the cluster Durable Objects of `env` (reads of the index: the D1 backend's). */
export function clusterObjectBackend(env: Env, def: KindDefinition): Store {
  const index = d1Backend(env, def);
  const stub = (name: string) => env.CLUSTERS.getByName(name) as unknown as ClusterObjectStub;
  const store: Store = {
    ...index,
    async get(_namespace, name) {
      const res = await stub(name).get(name);
      return res.ok ? res.value : null;
    },
    getMany: (keys) => Promise.all(keys.map((k) => store.get(k.namespace, k.name))),
    async write(_namespace, name, req, opts) {
      const target = name || nameOfCreate(def, req);
      const res = await stub(target).write(target, req, opts?.admitted);
      if (!res.ok) throw apiErrorOf(res.status);
      return res.value;
    },
    writeMany: (writes) => writeOneByOne(store, writes),
  };
  return store;
}
