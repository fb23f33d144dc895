/**
 * Strategic merge patch (`application/strategic-merge-patch+json`, apimachinery
 * `pkg/util/strategicpatch`) for the core kinds the hub serves (Namespace, Secret), which
 * kube-apiserver patches this way and client-side `kubectl apply`, `kubectl edit` and `kubectl
 * patch` send for them. It is a JSON merge patch (RFC 7386) except where the Go types carry a
 * patch strategy, which for these kinds are (`k8s.io/api/core/v1/types.go`, `metav1.ObjectMeta`):
 * `metadata.finalizers` (merge: a set of strings), `metadata.ownerReferences` (merge by `uid`) and
 * `status.conditions` (merge by `type`). It honours the directives kubectl writes:
 * `$setElementOrder/<list>` (the order of a merged list), `$deleteFromPrimitiveList/<list>`,
 * `$patch: delete|replace|merge` and `$retainKeys`. The built-in kinds stored as templates
 * (src/kinds/builtin) name their merged lists in their schemas (`x-kubernetes-patch-merge-key`,
 * from k8s.io/api's Go tags). Other lists are replaced, as their Go fields carry no strategy. Custom resources take no strategic merge patch (415), as in kube-apiserver.
 */
import { badRequest } from "./errors.ts";
import { isJsonObject, type JsonObject } from "./meta.ts";

/** The merged lists of the core kinds: path to merge key (`""` for a list of strings). */
const MERGE_LISTS: Record<string, string> = {
  "metadata.finalizers": "",
  "metadata.ownerReferences": "uid",
  "status.conditions": "type",
};

const SET_ORDER = "$setElementOrder/";
const DELETE_FROM = "$deleteFromPrimitiveList/";

/** Merges the list `patch` into `current` by `key` (`""`: strings), in `order` when given. */
function mergeList(current: unknown, patch: unknown[], key: string, order: unknown[] | undefined, path: string, mergeKeyOf?: MergeKeyOf): unknown[] {
  const out = Array.isArray(current) ? structuredClone(current) : [];
  const idOf = (x: unknown) => (key === "" ? x : isJsonObject(x) ? x[key] : undefined);
  for (const item of patch) {
    if (key !== "" && !isJsonObject(item)) throw badRequest(`${path}: an element of a list merged by ${key} must be an object`);
    const at = out.findIndex((x) => idOf(x) === idOf(item));
    if (key !== "" && isJsonObject(item) && item.$patch === "delete") {
      if (at >= 0) out.splice(at, 1);
    } else if (at < 0) out.push(key === "" ? item : strip(item));
    else if (key !== "") out[at] = merge(out[at], item, path, mergeKeyOf);
  }
  if (!order) return out;
  const rank = (x: unknown) => {
    const i = order.findIndex((o) => (key === "" ? o : isJsonObject(o) ? o[key] : undefined) === idOf(x));
    return i < 0 ? order.length : i;
  };
  return out
    .map((x, i) => ({ x, i }))
    .sort((a, b) => rank(a.x) - rank(b.x) || a.i - b.i)
    .map((e) => e.x);
}

/** A patch value with its directives removed (what is stored when the target has nothing there). */
function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip);
  if (!isJsonObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith("$") && x !== null) out[k] = strip(x);
  return out;
}

/** The merge key of the list at a dotted field path (no indices), from the kind's schema; undefined: not merged. */
export type MergeKeyOf = (field: string) => string | undefined;

function merge(target: unknown, patch: unknown, path: string, mergeKeyOf?: MergeKeyOf): unknown {
  if (!isJsonObject(patch)) return structuredClone(patch);
  if (patch.$patch === "replace") return strip(patch);
  if (patch.$patch === "delete") return undefined;
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    const field = path ? `${path}.${k}` : k;
    if (k === "$patch" || k === "$retainKeys" || k.startsWith(SET_ORDER)) continue;
    if (k.startsWith(DELETE_FROM)) {
      const name = k.slice(DELETE_FROM.length);
      if (Array.isArray(out[name]) && Array.isArray(v)) out[name] = (out[name] as unknown[]).filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const key = MERGE_LISTS[field] ?? mergeKeyOf?.(field);
    if (Array.isArray(v) && key !== undefined) {
      const order = patch[`${SET_ORDER}${k}`];
      out[k] = mergeList(out[k], v, key, Array.isArray(order) ? order : undefined, field, mergeKeyOf);
    } else if (isJsonObject(v)) {
      const merged = merge(out[k], v, field, mergeKeyOf);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = strip(v);
  }
  if (Array.isArray(patch.$retainKeys)) for (const k of Object.keys(out)) if (!patch.$retainKeys.includes(k)) delete out[k];
  return out;
}

/**
 * Applies a strategic merge patch to `target` (a built-in kind's object) and returns the result
 * (inputs are not mutated). See the module comment. `keys` names the merge key of the lists the
 * kind's schema marks `x-kubernetes-patch-merge-key` (a Deployment's containers by `name`, their
 * ports by `containerPort`, ...: the Go tags `patchStrategy:"merge"`, `patchMergeKey`); the lists
 * of the table above are merged whatever `keys` says.
 * @throws ApiError 400 when `patch` is not an object, or a merged list holds a non-object
 */
export function strategicMergePatch(target: unknown, patch: unknown, keys?: MergeKeyOf): unknown {
  if (!isJsonObject(patch)) throw badRequest("the strategic merge patch must be a JSON object");
  return merge(target, patch, "", keys) ?? {};
}
