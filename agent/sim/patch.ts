/**
 * The three non-apply PATCH formats kube-apiserver accepts:
 * - JSON merge patch (RFC 7386, `application/merge-patch+json`),
 * - JSON patch (RFC 6902, `application/json-patch+json`),
 * - strategic merge patch (`application/strategic-merge-patch+json`), approximated: lists whose
 *   field name has a well-known Kubernetes merge key (`containers` by `name`, `ports` by port, ...)
 *   are merged element-wise; the `$patch`, `$setElementOrder/`, `$retainKeys` and
 *   `$deleteFromPrimitiveList/` directives kubectl sends are understood. Other lists are replaced.
 */
import { ApiError } from "./errors.ts";
import { clone, deepEqual, isObj, type Obj } from "./types.ts";

/**
 * Merge keys of the Kubernetes built-in list fields (from the `patchMergeKey` struct tags), keyed by
 * field name. Used by strategic merge patch and by server-side apply to treat these lists as
 * associative (elements identified by the key) instead of atomic.
 */
export const MERGE_KEYS: Record<string, string[]> = {
  containers: ["name"],
  initContainers: ["name"],
  ephemeralContainers: ["name"],
  volumes: ["name"],
  env: ["name"],
  imagePullSecrets: ["name"],
  volumeMounts: ["mountPath"],
  volumeDevices: ["devicePath"],
  ports: ["containerPort", "port"],
  conditions: ["type"],
  ownerReferences: ["uid"],
  hostAliases: ["ip"],
  topologySpreadConstraints: ["topologyKey"],
  resourceClaims: ["name"],
};

/**
 * The merge key for list field `field` holding `items`, or undefined when the list is atomic: the
 * field must be a known associative list and every element an object carrying the key.
 */
export function listMergeKey(field: string, items: unknown[]): string | undefined {
  const candidates = MERGE_KEYS[field];
  if (!candidates || items.length === 0) return undefined;
  return candidates.find((k) => items.every((it) => isObj(it) && it[k] !== undefined && it[k] !== null));
}

/** RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Obj = isObj(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function decodePointer(ptr: string): string[] {
  if (ptr === "") return [];
  if (!ptr.startsWith("/")) throw new ApiError(422, "Invalid", `invalid JSON pointer "${ptr}"`);
  return ptr
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function walk(doc: unknown, parts: string[]): unknown {
  let cur = doc;
  for (const p of parts) {
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isObj(cur)) cur = cur[p];
    else return undefined;
  }
  return cur;
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test). A failing operation gives 422. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new ApiError(400, "BadRequest", "json patch must be an array of operations");
  let doc = clone(target);
  const fail = (msg: string): never => {
    throw new ApiError(422, "Invalid", msg);
  };
  const setAt = (parts: string[], value: unknown, insert: boolean): void => {
    if (parts.length === 0) {
      doc = value;
      return;
    }
    const parent = walk(doc, parts.slice(0, -1));
    const last = parts[parts.length - 1] ?? "";
    if (Array.isArray(parent)) {
      const idx = last === "-" ? parent.length : Number(last);
      if (!Number.isInteger(idx) || idx < 0 || idx > parent.length) fail(`json patch: index ${last} out of range`);
      if (insert) parent.splice(idx, 0, value);
      else parent[idx] = value;
    } else if (isObj(parent)) {
      if (!insert && !(last in parent)) fail(`json patch: replace operation does not apply: doc is missing key: /${parts.join("/")}`);
      parent[last] = value;
    } else fail(`json patch: doc is missing path: /${parts.join("/")}`);
  };
  const removeAt = (parts: string[]): unknown => {
    const parent = walk(doc, parts.slice(0, -1));
    const last = parts[parts.length - 1] ?? "";
    if (Array.isArray(parent)) {
      const idx = Number(last);
      if (!Number.isInteger(idx) || idx < 0 || idx >= parent.length) fail(`json patch: index ${last} out of range`);
      return parent.splice(idx, 1)[0];
    }
    if (isObj(parent) && last in parent) {
      const v = parent[last];
      delete parent[last];
      return v;
    }
    return fail(`json patch: remove operation does not apply: doc is missing path: /${parts.join("/")}`);
  };
  for (const op of ops) {
    if (!isObj(op) || typeof op.op !== "string" || typeof op.path !== "string") fail("json patch: malformed operation");
    const o = op as { op: string; path: string; from?: string; value?: unknown };
    const parts = decodePointer(o.path);
    switch (o.op) {
      case "add":
        setAt(parts, clone(o.value), true);
        break;
      case "remove":
        removeAt(parts);
        break;
      case "replace":
        setAt(parts, clone(o.value), false);
        break;
      case "move":
        setAt(parts, removeAt(decodePointer(o.from ?? "")), true);
        break;
      case "copy":
        setAt(parts, clone(walk(doc, decodePointer(o.from ?? ""))), true);
        break;
      case "test":
        if (!deepEqual(walk(doc, parts), o.value)) fail(`json patch: testing value ${o.path} failed`);
        break;
      default:
        fail(`json patch: unexpected kind of operation "${o.op}"`);
    }
  }
  return doc;
}

function keyOf(item: unknown, key: string): string {
  return isObj(item) ? JSON.stringify(item[key]) : JSON.stringify(item);
}

function smpList(field: string, target: unknown[], patch: unknown[], order: unknown[] | undefined): unknown[] {
  if (patch.some((p) => isObj(p) && p.$patch === "replace")) return patch.filter((p) => !(isObj(p) && p.$patch === "replace")).map(clone);
  const key = listMergeKey(field, [...target, ...patch]);
  // Lists without a merge key (primitives, or objects of unknown fields) are atomic: replaced.
  if (!key) return patch.map(clone);
  const out = target.map(clone);
  for (const p of patch) {
    if (!isObj(p)) continue;
    const idx = out.findIndex((t) => keyOf(t, key) === keyOf(p, key));
    if (p.$patch === "delete") {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMergePatch(out[idx], p);
    else out.push(strategicMergePatch({}, p));
  }
  if (order) {
    const rank = new Map(order.map((o, i) => [keyOf(o, key), i]));
    out.sort((a, b) => (rank.get(keyOf(a, key)) ?? Infinity) - (rank.get(keyOf(b, key)) ?? Infinity));
  }
  return out;
}

/**
 * Strategic merge patch (approximation, see module doc): like a JSON merge patch, except that lists
 * with a known merge key merge element-wise and the `$`-directives are honoured.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === "delete") return undefined;
  let out: Obj = isObj(target) ? clone(target) : {};
  if (patch.$patch === "replace") out = {};
  const retain = Array.isArray(patch.$retainKeys) ? patch.$retainKeys.map(String) : undefined;
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch" || k === "$retainKeys" || k.startsWith("$setElementOrder/")) continue;
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const field = k.slice("$deleteFromPrimitiveList/".length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const cur = out[k];
    if (Array.isArray(v)) {
      const order = patch[`$setElementOrder/${k}`];
      out[k] = Array.isArray(cur) ? smpList(k, cur, v, Array.isArray(order) ? order : undefined) : v.filter((x) => !(isObj(x) && x.$patch)).map(clone);
    } else if (isObj(v)) {
      const merged = strategicMergePatch(cur, v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = clone(v);
  }
  if (retain) for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  return out;
}
