/**
 * Server-side apply and field-ownership tracking (`metadata.managedFields`), simplified from
 * Kubernetes' structured-merge-diff:
 *
 * - A manager's field set is the set of *leaf paths* of what it wrote. Maps are walked, lists with
 *   a known merge key (see {@link listMergeKey}) are associative (elements addressed as
 *   `k:{"name":"c"}`), every other list is atomic (one leaf). Server-owned metadata (name, uid,
 *   resourceVersion, ...) and `apiVersion`/`kind` are not tracked; `status` belongs to the `status`
 *   subresource when the type has one.
 * - Apply: conflicts with any other manager (Apply or Update) owning an applied path whose current
 *   value differs → 409 in the kube-apiserver conflict format, unless `force`, which takes the
 *   fields over. Fields this manager applied before but no longer applies are removed unless another
 *   manager owns them. Same value = shared ownership, no conflict.
 * - Update (create/PUT/non-apply PATCH): the writer takes every path it changed; paths that no
 *   longer exist are dropped from every manager.
 * Sets are stored in `managedFields[].fieldsV1` in the real FieldsV1 format (`{"f:spec":{"f:replicas":{}}}`).
 */
import { ApiError, type StatusCause } from "./errors.ts";
import { listMergeKey } from "./patch.ts";
import { clone, deepEqual, isObj, nowRfc3339, type KubeObject, type ManagedFieldsEntry, type Obj } from "./types.ts";

/** Which part of an object a write addresses: the main resource or the `status` subresource. */
export type Scope = "main" | "status";

const TRACKED_METADATA = ["labels", "annotations", "ownerReferences", "finalizers"];

function walkValue(v: unknown, field: string, path: string[], out: Set<string>): void {
  if (isObj(v)) {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined);
    if (keys.length === 0) out.add(JSON.stringify(path));
    for (const k of keys) walkValue(v[k], k, [...path, `f:${k}`], out);
    return;
  }
  if (Array.isArray(v)) {
    const key = listMergeKey(field, v);
    if (!key) {
      out.add(JSON.stringify(path));
      return;
    }
    for (const el of v) {
      const elObj = el as Obj;
      const ep = [...path, `k:${JSON.stringify({ [key]: elObj[key] })}`];
      out.add(JSON.stringify(ep));
      walkValue(el, "", ep, out);
    }
    return;
  }
  out.add(JSON.stringify(path));
}

/**
 * The leaf paths (each a JSON-encoded segment array) of `obj` within `scope`. With
 * `statusSubresource` false, `status` is part of the main resource.
 */
export function fieldPaths(obj: Obj, scope: Scope, statusSubresource: boolean): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind" || v === undefined) continue;
    const isStatus = k === "status" && statusSubresource;
    if ((scope === "status") !== isStatus) continue;
    if (k === "metadata") {
      if (!isObj(v)) continue;
      for (const mk of TRACKED_METADATA) if (v[mk] !== undefined) walkValue(v[mk], mk, ["f:metadata", `f:${mk}`], out);
      continue;
    }
    walkValue(v, k, [`f:${k}`], out);
  }
  return out;
}

/** Converts a path set to the FieldsV1 JSON form (`"."` marks a node that is itself owned). */
export function toFieldsV1(paths: Set<string>): Obj {
  const root: Obj = {};
  const sorted = [...paths].map((p) => JSON.parse(p) as string[]).sort((a, b) => a.length - b.length);
  for (const segs of sorted) {
    let node = root;
    for (const s of segs) {
      if (!isObj(node[s])) node[s] = {};
      node = node[s] as Obj;
    }
    node["."] = {};
  }
  // A leaf written as {".": {}} is serialised as {} (kube-apiserver writes leaves as empty objects).
  const tidy = (n: Obj): void => {
    for (const [k, v] of Object.entries(n)) {
      if (!isObj(v)) continue;
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === ".") n[k] = {};
      else tidy(v);
    }
  };
  tidy(root);
  return root;
}

/** Parses FieldsV1 JSON back into a path set (inverse of {@link toFieldsV1}). */
export function fromFieldsV1(f: Obj): Set<string> {
  const out = new Set<string>();
  const rec = (n: Obj, path: string[]): void => {
    for (const [k, v] of Object.entries(n)) {
      if (k === ".") {
        out.add(JSON.stringify(path));
        continue;
      }
      const child = [...path, k];
      if (!isObj(v) || Object.keys(v).length === 0) out.add(JSON.stringify(child));
      else rec(v, child);
    }
  };
  rec(f, []);
  return out;
}

function matchKey(el: unknown, seg: string): boolean {
  if (!isObj(el)) return false;
  const want = JSON.parse(seg.slice(2)) as Obj;
  return Object.entries(want).every(([k, v]) => deepEqual(el[k], v));
}

/** The value at `path` (segment array) in `obj`, or undefined. */
export function valueAt(obj: unknown, path: string[]): unknown {
  let cur = obj;
  for (const s of path) {
    if (s.startsWith("f:") && isObj(cur)) cur = cur[s.slice(2)];
    else if (s.startsWith("k:") && Array.isArray(cur)) cur = cur.find((el) => matchKey(el, s));
    else return undefined;
  }
  return cur;
}

/** Removes the field or list element at `path` from `obj` (in place), pruning maps left empty by it. */
export function removeAt(obj: Obj, path: string[]): void {
  const chain: unknown[] = [obj];
  let cur: unknown = obj;
  for (const s of path.slice(0, -1)) {
    cur = valueAt(cur, [s]);
    if (cur === undefined) return;
    chain.push(cur);
  }
  const last = path[path.length - 1] ?? "";
  const parent = chain[chain.length - 1];
  if (last.startsWith("f:") && isObj(parent)) delete parent[last.slice(2)];
  else if (last.startsWith("k:") && Array.isArray(parent)) {
    const i = parent.findIndex((el) => matchKey(el, last));
    if (i >= 0) parent.splice(i, 1);
  }
  // Prune now-empty maps on the way up (never the top-level sections themselves).
  for (let i = chain.length - 1; i >= 2; i--) {
    const node = chain[i];
    const seg = path[i - 1] ?? "";
    if (isObj(node) && Object.keys(node).length === 0 && seg.startsWith("f:")) {
      const p = chain[i - 1];
      if (isObj(p)) delete p[seg.slice(2)];
    } else break;
  }
}

/** Human form of a path, as Kubernetes prints it: `.spec.containers[name="c"].image`. */
export function pathString(path: string[]): string {
  return path
    .map((s) => {
      if (s.startsWith("f:")) return `.${s.slice(2)}`;
      if (s.startsWith("k:")) {
        const kv = JSON.parse(s.slice(2)) as Obj;
        return `[${Object.entries(kv).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}]`;
      }
      return s;
    })
    .join("");
}

/** Apply-style merge: maps merge, associative lists merge by key, everything else is replaced. */
export function applyMerge(target: unknown, applied: unknown, field = ""): unknown {
  if (isObj(applied)) {
    const out: Obj = isObj(target) ? clone(target) : {};
    for (const [k, v] of Object.entries(applied)) {
      if (v === null || v === undefined) delete out[k];
      else out[k] = applyMerge(out[k], v, k);
    }
    return out;
  }
  if (Array.isArray(applied) && Array.isArray(target)) {
    const key = listMergeKey(field, [...target, ...applied]);
    if (!key) return clone(applied);
    const out = target.map(clone);
    for (const el of applied) {
      const i = out.findIndex((t) => isObj(t) && isObj(el) && deepEqual(t[key], el[key]));
      if (i >= 0) out[i] = applyMerge(out[i], el, "");
      else out.push(clone(el));
    }
    return out;
  }
  return clone(applied);
}

interface Entry {
  meta: ManagedFieldsEntry;
  paths: Set<string>;
}

function readEntries(obj: KubeObject | undefined): Entry[] {
  return (obj?.metadata.managedFields ?? []).map((m) => ({ meta: { ...m }, paths: fromFieldsV1(m.fieldsV1) }));
}

function writeEntries(obj: KubeObject, entries: Entry[]): void {
  const kept = entries.filter((e) => e.paths.size > 0);
  if (kept.length === 0) {
    delete obj.metadata.managedFields;
    return;
  }
  obj.metadata.managedFields = kept.map((e) => {
    const m: ManagedFieldsEntry = { manager: e.meta.manager, operation: e.meta.operation, apiVersion: e.meta.apiVersion, time: e.meta.time, fieldsType: "FieldsV1", fieldsV1: toFieldsV1(e.paths) };
    if (e.meta.subresource) m.subresource = e.meta.subresource;
    return m;
  });
}

function sameEntry(e: ManagedFieldsEntry, manager: string, operation: string, scope: Scope): boolean {
  return e.manager === manager && e.operation === operation && (e.subresource ?? "") === (scope === "status" ? "status" : "");
}

/**
 * How kube-apiserver names a manager in conflict messages (apimachinery `printManager`): the quoted
 * name, ` with subresource "x"`, and for Update managers ` using <apiVersion>`. The manager
 * identifier the server compares carries no timestamp, so live messages have no ` at <time>`
 * (e.g. `conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`).
 */
function printManager(e: ManagedFieldsEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === "Update") s += ` using ${e.apiVersion}`;
  return s;
}

/** The 409 Status kube-apiserver returns for apply conflicts (apimachinery `NewConflictError`). */
function conflictError(conflicts: Array<{ entry: ManagedFieldsEntry; path: string[] }>): ApiError {
  const causes: StatusCause[] = conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with ${printManager(c.entry)}`, field: pathString(c.path) }));
  let message: string;
  const first = conflicts[0];
  if (conflicts.length === 1 && first) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(first.entry)}: ${pathString(first.path)}`;
  } else {
    const byManager = new Map<string, { entry: ManagedFieldsEntry; paths: string[] }>();
    for (const c of conflicts) {
      const cur = byManager.get(c.entry.manager) ?? { entry: c.entry, paths: [] };
      cur.paths.push(pathString(c.path));
      byManager.set(c.entry.manager, cur);
    }
    const parts: string[] = [];
    for (const name of [...byManager.keys()].sort()) {
      const g = byManager.get(name);
      if (!g) continue;
      parts.push(`conflicts with ${printManager(g.entry)}:`, ...g.paths.map((p) => `- ${p}`));
    }
    message = `Apply failed with ${conflicts.length} conflicts: ${parts.join("\n")}`;
  }
  return new ApiError(409, "Conflict", message, { causes });
}

/** Input of {@link serverSideApply}. */
export interface ApplyRequest {
  /** The stored object, or undefined when the apply creates it. */
  current: KubeObject | undefined;
  /** The applied configuration (already checked for apiVersion/kind/name). */
  applied: KubeObject;
  manager: string;
  force: boolean;
  scope: Scope;
  statusSubresource: boolean;
}

/**
 * Computes the object resulting from a server-side apply (see module doc), including its new
 * `managedFields`. Server-owned metadata is taken from `current` (the caller fills it for creates).
 * Throws ApiError 409 (reason Conflict, causes of reason FieldManagerConflict) on conflicts
 * without `force`.
 */
export function serverSideApply(req: ApplyRequest): KubeObject {
  const { current, applied, manager, force, scope, statusSubresource } = req;
  const entries = readEntries(current);
  const newPaths = fieldPaths(applied, scope, statusSubresource);
  const mine = entries.find((e) => sameEntry(e.meta, manager, "Apply", scope));
  const others = entries.filter((e) => e !== mine);

  const conflicts: Array<{ entry: ManagedFieldsEntry; path: string[]; owner: Entry }> = [];
  if (current) {
    for (const o of others) {
      for (const p of newPaths) {
        if (!o.paths.has(p)) continue;
        const segs = JSON.parse(p) as string[];
        if (!deepEqual(valueAt(applied, segs), valueAt(current, segs))) conflicts.push({ entry: o.meta, path: segs, owner: o });
      }
    }
  }
  if (conflicts.length > 0 && !force) throw conflictError(conflicts);
  for (const c of conflicts) c.owner.paths.delete(JSON.stringify(c.path));

  const result: KubeObject = current ? clone(current) : clone(applied);
  if (current) {
    // Drop what this manager applied before and no longer applies, unless someone else owns it.
    const dropped = [...(mine?.paths ?? [])].filter((p) => !newPaths.has(p));
    for (const p of dropped.sort((a, b) => b.length - a.length)) {
      const owned = others.some((o) => [...o.paths].some((q) => q === p || q.startsWith(p.slice(0, -1) + ",")));
      if (!owned) removeAt(result, JSON.parse(p) as string[]);
    }
    const merged = result as Obj;
    for (const [k, v] of Object.entries(applied)) {
      if (k === "apiVersion" || k === "kind") continue;
      const isStatus = k === "status" && statusSubresource;
      if ((scope === "status") !== isStatus) continue;
      if (k === "metadata") {
        if (!isObj(v)) continue;
        for (const mk of TRACKED_METADATA) {
          if (v[mk] !== undefined) (merged.metadata as Obj)[mk] = applyMerge((merged.metadata as Obj)[mk], v[mk], mk);
        }
        continue;
      }
      merged[k] = applyMerge(merged[k], v, k);
    }
  } else if (scope === "main" && statusSubresource) {
    delete result.status;
  }
  const now = nowRfc3339();
  const meta: ManagedFieldsEntry = { manager, operation: "Apply", apiVersion: applied.apiVersion, time: now, fieldsType: "FieldsV1", fieldsV1: {} };
  if (scope === "status") meta.subresource = "status";
  const next = [...others, { meta, paths: newPaths }];
  // Keep the original order: replace this manager's entry in place when it existed.
  if (mine) {
    const idx = entries.indexOf(mine);
    next.splice(next.length - 1, 1);
    next.splice(idx, 0, { meta, paths: newPaths });
  }
  writeEntries(result, next);
  return result;
}

/**
 * Records an Update-operation write by `manager` (create, PUT or non-apply PATCH): the manager takes
 * ownership of every path whose value changed between `before` and `after` in `scope`; paths that
 * no longer exist leave every manager. Mutates `after.metadata.managedFields`.
 */
export function recordUpdate(before: KubeObject | undefined, after: KubeObject, manager: string, scope: Scope, statusSubresource: boolean): void {
  const entries = readEntries(before);
  const afterPaths = fieldPaths(after, scope, statusSubresource);
  const changed = new Set<string>();
  for (const p of afterPaths) {
    const segs = JSON.parse(p) as string[];
    if (!before || !deepEqual(valueAt(before, segs), valueAt(after, segs))) changed.add(p);
  }
  const scopedPrefix = scope === "status" ? '["f:status"' : undefined;
  for (const e of entries) {
    const inScope = (e.meta.subresource ?? "") === (scope === "status" ? "status" : "");
    if (!inScope) continue;
    for (const p of [...e.paths]) {
      if (changed.has(p) || !afterPaths.has(p)) {
        if (!scopedPrefix || p.startsWith(scopedPrefix)) e.paths.delete(p);
      }
    }
  }
  if (changed.size > 0) {
    let mine = entries.find((e) => sameEntry(e.meta, manager, "Update", scope));
    if (!mine) {
      const meta: ManagedFieldsEntry = { manager, operation: "Update", apiVersion: after.apiVersion, time: "", fieldsType: "FieldsV1", fieldsV1: {} };
      if (scope === "status") meta.subresource = "status";
      mine = { meta, paths: new Set() };
      entries.push(mine);
    }
    mine.meta.time = nowRfc3339();
    mine.meta.apiVersion = after.apiVersion;
    for (const p of changed) mine.paths.add(p);
  }
  writeEntries(after, entries);
}
