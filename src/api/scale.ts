/**
 * The `scale` subresource of a kind that declares one (`KindDefinition.scale`: a CRD version's
 * `subresources.scale`), as apiextensions-apiserver's `ScaleREST`
 * (`pkg/registry/customresource/etcd.go`): `GET .../{name}/scale` answers an `autoscaling/v1`
 * Scale (`spec.replicas` read at `specReplicasPath`, `status.replicas` at `statusReplicasPath`,
 * `status.selector` at `labelSelectorPath`, 0 and "" when absent); `PUT` takes a Scale and
 * `PATCH` a merge or JSON patch of one, and writes its `spec.replicas` into the object at
 * `specReplicasPath` (an update of the object, through its kind's validation; the Scale's
 * `metadata.resourceVersion`, when set, is a precondition).
 */
import { ApiError, badRequest, methodNotAllowed, notFound } from "../k8s/errors.ts";
import type { KindDefinition, ScaleSubresource } from "../k8s/kind.ts";
import { isJsonObject, type KubeObject } from "../k8s/meta.ts";
import { mergePatch } from "../k8s/write.ts";
import { applyJsonPatch } from "../k8s/jsonpatch.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { ApiContext } from "./context.ts";
import { parseJson, readBody } from "./request.ts";

/** The path segments of a simple JSON path (`.spec.replicas` → `["spec", "replicas"]`). */
function segments(path: string): string[] {
  return path.split(".").filter((s) => s !== "");
}

function read(obj: KubeObject, path: string | undefined): unknown {
  if (!path) return undefined;
  let v: unknown = obj;
  for (const s of segments(path)) v = isJsonObject(v) ? v[s] : undefined;
  return v;
}

/** The Scale of `obj` (see the module comment). */
export function scaleOf(obj: KubeObject, scale: ScaleSubresource): KubeObject {
  const spec = read(obj, scale.specReplicasPath);
  const status = read(obj, scale.statusReplicasPath);
  const selector = read(obj, scale.labelSelectorPath);
  const m = obj.metadata;
  return {
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: {
      name: m.name,
      ...(m.namespace ? { namespace: m.namespace } : {}),
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: typeof spec === "number" ? spec : 0 },
    status: { replicas: typeof status === "number" ? status : 0, ...(typeof selector === "string" ? { selector } : {}) },
  };
}

/** `obj` with `replicas` at `specReplicasPath` (a copy; intermediate objects made as needed). */
function withReplicas(obj: KubeObject, scale: ScaleSubresource, replicas: number): KubeObject {
  const out = structuredClone(obj);
  const path = segments(scale.specReplicasPath);
  let node = out as unknown as Record<string, unknown>;
  for (const s of path.slice(0, -1)) {
    if (!isJsonObject(node[s])) node[s] = {};
    node = node[s] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = replicas;
  return out;
}

/** The replicas a Scale asks for. @throws ApiError 400 (not a Scale), 422 (negative or not an integer) */
function replicasOf(name: string, scale: unknown): number {
  if (!isJsonObject(scale)) throw badRequest("the request body must be a JSON object");
  if (scale.kind !== undefined && scale.kind !== "Scale")
    throw badRequest(`the kind in the data (${String(scale.kind)}) does not match the expected kind (Scale)`, "kind");
  const r = isJsonObject(scale.spec) ? scale.spec.replicas : undefined;
  const replicas = r === undefined ? 0 : r;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    const message = `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`;
    throw new ApiError(422, "Invalid", `Scale.autoscaling "${name}" is invalid: spec.replicas: ${message}`, {
      name,
      group: "autoscaling",
      kind: "Scale",
      causes: [{ reason: "FieldValueInvalid", message, field: "spec.replicas" }],
    });
  }
  return replicas;
}

/**
 * Serves one request on `.../{name}/scale` of kind `def` (see the module comment).
 * @throws ApiError 404 (no such object), 405 (another method), 409 (stale resourceVersion), 400, 422
 */
export async function serveScale(c: ApiContext, def: KindDefinition, namespace: string, name: string): Promise<Response> {
  const scale = def.scale!;
  const store = admittedStoreOf(c.env, def);
  const current = await store.get(namespace, name);
  if (!current) throw notFound({ group: def.group, plural: def.plural, name });
  const method = c.req.method;
  if (method === "GET") return Response.json(scaleOf(current, scale));
  let asked: unknown;
  if (method === "PUT") asked = parseJson(await readBody(c));
  else if (method === "PATCH") {
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
    const patch = parseJson(await readBody(c));
    const now = scaleOf(current, scale);
    if (type === "application/merge-patch+json" || type === "application/strategic-merge-patch+json") asked = mergePatch(now, patch);
    else if (type === "application/json-patch+json") {
      if (!Array.isArray(patch)) throw badRequest("the JSON patch must be a list of operations");
      const out = applyJsonPatch(now, patch);
      if (!out.ok) throw new ApiError(422, "Invalid", out.message);
      asked = out.value;
    } else
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json`,
      );
  } else throw methodNotAllowed(`${method} is not allowed on the scale subresource`);
  const replicas = replicasOf(name, asked);
  const rv =
    isJsonObject(asked) && isJsonObject(asked.metadata) && typeof asked.metadata.resourceVersion === "string" ? asked.metadata.resourceVersion : undefined;
  const body = withReplicas(current, scale, replicas);
  if (method === "PUT" && rv) body.metadata.resourceVersion = rv;
  const outcome = await store.write(namespace, name, { verb: "update", body }, {});
  return Response.json(scaleOf(outcome.object ?? current, scale));
}
