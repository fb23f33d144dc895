/**
 * Field ownership and server-side apply, as kube-apiserver's field manager does them
 * (k8s.io/apimachinery `util/managedfields` over sigs.k8s.io/structured-merge-diff). One
 * implementation for the hub (src/k8s/write.ts) and the simulated member cluster (agent/sim).
 *
 * - A field set is a set of paths; a path is a sequence of FieldsV1 path elements: `f:<field>`,
 *   `k:<json of the key fields, sorted>` (an item of a `map` list), `v:<json value>` (an item of a
 *   `set` list). `metadata.managedFields[].fieldsV1` is the set as a tree (`{"f:spec":{"f:replicas":{}}}`),
 *   a member with children carrying `".": {}`.
 * - What an applier owns is the field set of its configuration (structured-merge-diff `ToFieldSet`):
 *   every leaf (a scalar, an atomic list or map) and every item of a `set` or `map` list.
 * - Every write compares the object before and after (structured-merge-diff `Compare`): leaves
 *   added, modified or removed, and maps, structs and lists that appear or disappear. An Update
 *   (create, PUT, non-apply PATCH) gives its manager what it added or modified and takes it from
 *   every other manager; what it removed leaves every manager. An Apply is an Update that fails with
 *   409 when it would change what another manager owns, unless forced (then it takes them over), and
 *   that first removes what the applier applied last time and no longer applies, unless another
 *   manager owns it (`prune`).
 * - Lists merge by the schema's `x-kubernetes-list-type` (`atomic`, the default; `set`; `map` keyed
 *   by `x-kubernetes-list-map-keys`), maps by `x-kubernetes-map-type` (`granular` by default) as
 *   {@link FieldType} reports them.
 * - Not tracked (apimachinery `stripMeta`): `apiVersion`, `kind`, and the server-set metadata
 *   (`name`, `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `selfLink`,
 *   `managedFields`; also `deletionTimestamp`, which no write sets). With a status subresource, a
 *   write to the main resource does not own `status` and a write to `/status` owns only `status`
 *   (the strategies' reset fields).
 * - Entries are kept sorted as kube-apiserver sorts them (operation, time, manager, apiVersion,
 *   subresource); at most 10 Update entries, older ones merged into `ancient-changes`.
 */
import { ApiError, type StatusCause } from "./errors.ts";

/** One entry of `metadata.managedFields` (metav1.ManagedFieldsEntry, FieldsV1 format). `time` is RFC 3339, seconds. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time?: string;
  fieldsType: "FieldsV1";
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

/** The object shape the field manager reads and writes (both the hub's and the simulator's objects fit). */
export interface ManagedObject {
  apiVersion: string;
  metadata: { managedFields?: unknown };
  [field: string]: unknown;
}

/** Which part of an object a write addresses: the main resource or its `status` subresource. */
export type Scope = "main" | "status";

/** How a list merges: atomic (replaced whole), a set of scalars, or a map of objects keyed by `keys`. */
export type ListKind = { type: "atomic" } | { type: "set" } | { type: "map"; keys: readonly string[] };

/**
 * The schema of a node, as the field manager needs it: the type of a struct field or map value
 * (`child`), of a list's items (`item`), how a list merges (`list`, given the items of both sides
 * so that a schema without keys may choose by what the items carry) and whether a map is atomic.
 */
export interface FieldType {
  child(name: string): FieldType;
  item(): FieldType;
  list(items: readonly unknown[]): ListKind;
  readonly atomicMap: boolean;
}

/** What every call needs besides the objects: the kind's schema, whether it has `/status`, the time (RFC 3339). */
export interface FieldManagerContext {
  type: FieldType;
  statusSubresource: boolean;
  now: string;
}

/** The most Update entries kept (apimachinery `DefaultMaxUpdateManagers`). */
export const MAX_UPDATE_MANAGERS = 10;
/** The manager older Update entries are merged into past {@link MAX_UPDATE_MANAGERS}. */
export const ANCIENT_CHANGES_MANAGER = "ancient-changes";
/** The longest field manager name (apimachinery `FieldManagerMaxLength`). */
export const FIELD_MANAGER_MAX_LENGTH = 128;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Whether two JSON values are equal as JSON (object keys in any order, object members whose value
 * is undefined left out, as JSON.stringify leaves them), without serialising either: it stops at
 * the first difference.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (!isObj(a) || !isObj(b)) return false;
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
}

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

const ATOMIC: ListKind = { type: "atomic" };

/** The type of a node without schema (structured-merge-diff's deduced type): maps granular, lists atomic. */
export const DEDUCED: FieldType = { child: () => DEDUCED, item: () => DEDUCED, list: () => ATOMIC, atomicMap: false };

const SCALAR_SET: FieldType = DEDUCED;

function fixedList(kind: ListKind, item: FieldType = DEDUCED): FieldType {
  return { child: () => DEDUCED, item: () => item, list: () => kind, atomicMap: false };
}

/** ObjectMeta's merge semantics (labels, annotations granular; finalizers a set; ownerReferences keyed by uid). */
const METADATA: FieldType = {
  child: (name) => (name === "finalizers" ? fixedList({ type: "set" }) : name === "ownerReferences" ? fixedList({ type: "map", keys: ["uid"] }) : DEDUCED),
  item: () => DEDUCED,
  list: () => ATOMIC,
  atomicMap: false,
};

/** A whole object's type: `metadata` as ObjectMeta, the rest from `root`. */
export function objectType(root: FieldType): FieldType {
  return { child: (name) => (name === "metadata" ? METADATA : root.child(name)), item: () => DEDUCED, list: () => ATOMIC, atomicMap: false };
}

/** An OpenAPI v3 / JSON schema node, as far as the field manager reads it. */
export type JsonSchemaNode = Record<string, unknown>;

function resolve(node: JsonSchemaNode | undefined): JsonSchemaNode | undefined {
  if (!node) return undefined;
  for (const k of ["anyOf", "oneOf", "allOf"]) {
    const alts = node[k];
    if (!Array.isArray(alts)) continue;
    const picked = alts.find((a) => isObj(a) && (a.type === "object" || a.type === "array" || isObj(a.properties) || isObj(a.items)));
    if (isObj(picked)) {
      const merged: JsonSchemaNode = { ...picked };
      for (const x of ["x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type"]) if (node[x] !== undefined) merged[x] = node[x];
      return merged;
    }
  }
  return node;
}

const schemaTypes = new WeakMap<JsonSchemaNode, FieldType>();

/**
 * The {@link FieldType} of an OpenAPI v3 schema node: `properties` and `additionalProperties` give
 * children, `items` the list items, `x-kubernetes-list-type` (`atomic` when absent, as for
 * CustomResourceDefinitions) with `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`. A node
 * without schema is {@link DEDUCED}. Cached per node.
 */
export function schemaType(raw: JsonSchemaNode | undefined): FieldType {
  if (!raw) return DEDUCED;
  const hit = schemaTypes.get(raw);
  if (hit) return hit;
  const node = resolve(raw) ?? {};
  const props = isObj(node.properties) ? node.properties : undefined;
  const extra = isObj(node.additionalProperties) ? node.additionalProperties : undefined;
  const items = isObj(node.items) ? node.items : undefined;
  const lt = node["x-kubernetes-list-type"];
  const keys = Array.isArray(node["x-kubernetes-list-map-keys"]) ? (node["x-kubernetes-list-map-keys"] as string[]) : [];
  const kind: ListKind = lt === "set" ? { type: "set" } : lt === "map" && keys.length > 0 ? { type: "map", keys } : ATOMIC;
  const t: FieldType = {
    child: (name) => {
      const c = props?.[name];
      return schemaType(isObj(c) ? c : extra);
    },
    item: () => schemaType(items),
    list: () => kind,
    atomicMap: node["x-kubernetes-map-type"] === "atomic",
  };
  schemaTypes.set(raw, t);
  return t;
}

/**
 * A type that knows lists by their field name only (for a cluster without schemas): a list field
 * named in `keys` is a `map` list keyed by the first candidate key that every item carries, else
 * atomic; every other list is atomic.
 */
export function fieldNameType(keys: Readonly<Record<string, readonly string[]>>, field = ""): FieldType {
  const candidates = keys[field];
  return {
    child: (name) => fieldNameType(keys, name),
    item: () => fieldNameType(keys, ""),
    list: (items) => {
      if (!candidates || items.length === 0) return ATOMIC;
      const k = candidates.find((c) => items.every((it) => isObj(it) && it[c] !== undefined && it[c] !== null));
      return k ? { type: "map", keys: [k] } : ATOMIC;
    },
    atomicMap: false,
  };
}

// ---------------------------------------------------------------------------------------------
// Paths and sets
// ---------------------------------------------------------------------------------------------

/** Separator of path elements inside a set's keys (never in a FieldsV1 element: JSON escapes it). */
const SEP = "\u0000";
const join = (parent: string, pe: string): string => (parent === "" ? pe : parent + SEP + pe);

function sortedKeyJson(el: Obj, keys: readonly string[]): string {
  const o: Obj = {};
  for (const k of [...keys].sort()) o[k] = el[k];
  return JSON.stringify(o);
}

function itemElement(el: unknown, kind: ListKind): string | undefined {
  if (kind.type === "set") return `v:${JSON.stringify(el)}`;
  if (kind.type === "map" && isObj(el)) return `k:${sortedKeyJson(el, kind.keys)}`;
  return undefined;
}

/** Adds the field set of `v` (ToFieldSet: leaves and set/map list items) under `path` to `out`. */
function toFieldSet(v: unknown, t: FieldType, path: string, out: Set<string>): void {
  if (Array.isArray(v)) {
    const kind = t.list(v);
    if (kind.type === "atomic") {
      out.add(path);
      return;
    }
    for (const el of v) {
      const pe = itemElement(el, kind);
      if (pe === undefined) continue;
      const p = join(path, pe);
      out.add(p);
      if (kind.type === "map") toFieldSet(el, t.item(), p, out);
    }
    return;
  }
  if (isObj(v)) {
    if (t.atomicMap) {
      out.add(path);
      return;
    }
    for (const [k, x] of Object.entries(v)) if (x !== undefined) toFieldSet(x, t.child(k), join(path, `f:${k}`), out);
    return;
  }
  if (path !== "") out.add(path);
}

/** The difference between two versions of an object (structured-merge-diff `Comparison`). */
interface Comparison {
  added: Set<string>;
  modified: Set<string>;
  removed: Set<string>;
}

const isEmpty = (v: unknown): boolean => v === undefined || (Array.isArray(v) ? v.length === 0 : isObj(v) && Object.keys(v).length === 0);

function leaf(l: unknown, r: unknown, path: string, c: Comparison): void {
  if (path === "") return;
  if (l === undefined) c.added.add(path);
  else if (r === undefined) c.removed.add(path);
  else if (!deepEqual(l, r)) c.modified.add(path);
}

function compare(l: unknown, r: unknown, t: FieldType, path: string, c: Comparison): void {
  if (l === undefined && r === undefined) return;
  if ((isObj(l) || l === undefined) && (isObj(r) || r === undefined)) {
    if (t.atomicMap || (isEmpty(l) && isEmpty(r))) return leaf(l, r, path, c);
    const lo = l ?? {};
    const ro = r ?? {};
    for (const k of Object.keys(lo)) compare(lo[k], ro[k], t.child(k), join(path, `f:${k}`), c);
    for (const k of Object.keys(ro)) if (lo[k] === undefined) compare(undefined, ro[k], t.child(k), join(path, `f:${k}`), c);
  } else if ((Array.isArray(l) || l === undefined) && (Array.isArray(r) || r === undefined)) {
    const la = l ?? [];
    const ra = r ?? [];
    const kind = t.list([...la, ...ra]);
    if (kind.type === "atomic" || (la.length === 0 && ra.length === 0)) return leaf(l, r, path, c);
    const index = (xs: unknown[]): Map<string, unknown> => {
      const m = new Map<string, unknown>();
      for (const x of xs) {
        const pe = itemElement(x, kind);
        if (pe !== undefined && !m.has(pe)) m.set(pe, x);
      }
      return m;
    };
    const lm = index(la);
    const rm = index(ra);
    const it = kind.type === "map" ? t.item() : SCALAR_SET;
    for (const [pe, x] of lm) compare(x, rm.get(pe), it, join(path, pe), c);
    for (const [pe, x] of rm) if (!lm.has(pe)) compare(undefined, x, it, join(path, pe), c);
  } else {
    return leaf(l, r, path, c);
  }
  if (path === "") return;
  if (l === undefined) c.added.add(path);
  else if (r === undefined) c.removed.add(path);
}

/** Merges an applied configuration into the live value (structured-merge-diff `Merge`: the config wins). */
function merge(l: unknown, r: unknown, t: FieldType): unknown {
  if (isObj(r)) {
    if (!isObj(l) || t.atomicMap) return structuredClone(r);
    const out: Obj = { ...l };
    for (const [k, v] of Object.entries(r)) if (v !== undefined) out[k] = merge(l[k], v, t.child(k));
    return out;
  }
  if (Array.isArray(r)) {
    if (!Array.isArray(l)) return structuredClone(r);
    const kind = t.list([...l, ...r]);
    if (kind.type === "atomic") return structuredClone(r);
    const applied = new Map<string, unknown>();
    for (const x of r) {
      const pe = itemElement(x, kind);
      if (pe !== undefined && !applied.has(pe)) applied.set(pe, x);
    }
    const out: unknown[] = [];
    const seen = new Set<string>();
    for (const x of l) {
      const pe = itemElement(x, kind);
      if (pe !== undefined && applied.has(pe)) {
        out.push(kind.type === "map" ? merge(x, applied.get(pe), t.item()) : x);
        seen.add(pe);
      } else out.push(x);
    }
    for (const [pe, x] of applied) if (!seen.has(pe)) out.push(structuredClone(x));
    return out;
  }
  return r;
}

function matches(el: unknown, pe: string): boolean {
  if (pe.startsWith("v:")) return deepEqual(el, JSON.parse(pe.slice(2)));
  if (!isObj(el)) return false;
  const want = JSON.parse(pe.slice(2)) as Obj;
  return Object.entries(want).every(([k, v]) => deepEqual(el[k], v));
}

/** Removes the field or list item at `path` from `obj` (in place); maps it leaves empty go too. */
function removePath(obj: Obj, path: string): void {
  const segs = path.split(SEP);
  const chain: unknown[] = [obj];
  let cur: unknown = obj;
  for (const s of segs.slice(0, -1)) {
    if (s.startsWith("f:") && isObj(cur)) cur = cur[s.slice(2)];
    else if (Array.isArray(cur)) cur = cur.find((el) => matches(el, s));
    else return;
    if (cur === undefined) return;
    chain.push(cur);
  }
  const last = segs[segs.length - 1] ?? "";
  const parent = chain[chain.length - 1];
  if (last.startsWith("f:") && isObj(parent)) delete parent[last.slice(2)];
  else if (Array.isArray(parent)) {
    const i = parent.findIndex((el) => matches(el, last));
    if (i >= 0) parent.splice(i, 1);
  }
  for (let i = chain.length - 1; i >= 1; i--) {
    const node = chain[i];
    const seg = segs[i - 1] ?? "";
    const up = chain[i - 1];
    if (!isObj(node) || Object.keys(node).length > 0 || !seg.startsWith("f:") || !isObj(up)) break;
    delete up[seg.slice(2)];
  }
}

/** Human form of a path, as structured-merge-diff prints it: `.spec.containers[name="c"].image`, `.metadata.finalizers[="f"]`. */
export function pathString(path: string): string {
  return path
    .split(SEP)
    .map((s) => {
      if (s.startsWith("f:")) return `.${s.slice(2)}`;
      if (s.startsWith("v:")) return `[=${s.slice(2)}]`;
      if (s.startsWith("k:")) {
        const kv = JSON.parse(s.slice(2)) as Obj;
        return `[${Object.entries(kv)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(",")}]`;
      }
      return s;
    })
    .join("");
}

interface TreeNode {
  member: boolean;
  children: Map<string, TreeNode>;
}

/** A set as FieldsV1 JSON: a leaf member is `{}`, a member with children carries `".": {}`. */
export function toFieldsV1(set: Iterable<string>): Record<string, unknown> {
  const root: TreeNode = { member: false, children: new Map() };
  for (const p of set) {
    let n = root;
    for (const s of p.split(SEP)) {
      let c = n.children.get(s);
      if (!c) {
        c = { member: false, children: new Map() };
        n.children.set(s, c);
      }
      n = c;
    }
    n.member = true;
  }
  const enc = (n: TreeNode): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    if (n.member && n.children.size > 0) o["."] = {};
    for (const k of [...n.children.keys()].sort()) o[k] = enc(n.children.get(k) as TreeNode);
    return o;
  };
  return enc(root);
}

/** The set a FieldsV1 JSON holds (inverse of {@link toFieldsV1}). @throws Error when it is not FieldsV1 */
export function fromFieldsV1(f: unknown): Set<string> {
  const out = new Set<string>();
  const rec = (n: unknown, path: string): void => {
    if (!isObj(n)) throw new Error("FieldsV1 must be an object");
    const keys = Object.keys(n);
    if (keys.length === 0 && path !== "") out.add(path);
    for (const k of keys) {
      if (k === ".") {
        if (path !== "") out.add(path);
        continue;
      }
      if (!/^[fkvi]:/.test(k)) throw new Error(`invalid FieldsV1 element ${JSON.stringify(k)}`);
      rec(n[k], join(path, k));
    }
  };
  rec(f, "");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Managers
// ---------------------------------------------------------------------------------------------

interface Manager {
  entry: ManagedFieldsEntry;
  set: Set<string>;
  /** True when `set` was changed and `entry.fieldsV1` must be encoded again. */
  dirty: boolean;
}

/** The identity kube-apiserver keys managers by: name, operation, subresource, and for Update the apiVersion. */
function identity(e: Pick<ManagedFieldsEntry, "manager" | "operation" | "apiVersion" | "subresource">): string {
  return JSON.stringify([e.manager, e.operation, e.operation === "Update" ? e.apiVersion : "", e.subresource ?? ""]);
}

function isEntry(v: unknown): v is ManagedFieldsEntry {
  return (
    isObj(v) &&
    typeof v.manager === "string" &&
    (v.operation === "Apply" || v.operation === "Update") &&
    isObj(v.fieldsV1) &&
    (v.fieldsType === undefined || v.fieldsType === "FieldsV1")
  );
}

/** Decodes stored entries. @throws Error when one is malformed */
function decodeManagers(raw: unknown): Manager[] {
  if (raw == null) return [];
  if (!Array.isArray(raw)) throw new Error("managedFields must be a list");
  return raw.map((e) => {
    if (!isEntry(e)) throw new Error("invalid managedFields entry");
    return { entry: { ...e, fieldsType: "FieldsV1" }, set: fromFieldsV1(e.fieldsV1), dirty: false };
  });
}

function compareEntries(p: ManagedFieldsEntry, q: ManagedFieldsEntry): number {
  if (p.operation !== q.operation) return p.operation < q.operation ? -1 : 1;
  const pt = p.time ? Date.parse(p.time) : 0;
  const qt = q.time ? Date.parse(q.time) : 0;
  if (pt !== qt) return pt - qt;
  if (p.manager !== q.manager) return p.manager < q.manager ? -1 : 1;
  if (p.apiVersion !== q.apiVersion) return p.apiVersion < q.apiVersion ? -1 : 1;
  const ps = p.subresource ?? "";
  const qs = q.subresource ?? "";
  return ps === qs ? 0 : ps < qs ? -1 : 1;
}

/** Encodes the managers back (empty ones dropped, Update entries capped, sorted), or undefined when none is left. */
function encodeManagers(managers: Manager[], now: string): ManagedFieldsEntry[] | undefined {
  let kept = managers.filter((m) => m.set.size > 0);
  const updates = kept.filter((m) => m.entry.operation === "Update").sort((a, b) => compareEntries(a.entry, b.entry));
  if (updates.length > MAX_UPDATE_MANAGERS) {
    let ancient = kept.find((m) => m.entry.manager === ANCIENT_CHANGES_MANAGER && m.entry.operation === "Update");
    const others = updates.filter((m) => m !== ancient);
    const excess = others.slice(0, others.length + 1 - MAX_UPDATE_MANAGERS);
    if (!ancient) {
      ancient = {
        entry: {
          manager: ANCIENT_CHANGES_MANAGER,
          operation: "Update",
          apiVersion: excess[0]?.entry.apiVersion ?? "",
          time: now,
          fieldsType: "FieldsV1",
          fieldsV1: {},
        },
        set: new Set(),
        dirty: true,
      };
      kept.push(ancient);
    }
    for (const m of excess) for (const p of m.set) ancient.set.add(p);
    ancient.dirty = true;
    kept = kept.filter((m) => !excess.includes(m));
  }
  if (kept.length === 0) return undefined;
  return kept
    .map((m) => {
      // Key order as kube-apiserver serialises an entry.
      const e = { manager: m.entry.manager, operation: m.entry.operation, apiVersion: m.entry.apiVersion } as ManagedFieldsEntry;
      if (m.entry.time) e.time = m.entry.time;
      e.fieldsType = "FieldsV1";
      e.fieldsV1 = m.dirty ? toFieldsV1(m.set) : m.entry.fieldsV1;
      if (m.entry.subresource) e.subresource = m.entry.subresource;
      return e;
    })
    .sort(compareEntries);
}

/** Server-owned metadata fields, never tracked (apimachinery `stripMeta`). */
const UNTRACKED_METADATA = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "selfLink",
  "managedFields",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "clusterName",
]);

/** The part of `obj` that `scope` tracks: no apiVersion/kind, no server metadata, status only for its subresource. */
function tracked(obj: Obj | undefined, scope: Scope, statusSubresource: boolean): Obj | undefined {
  if (!obj) return undefined;
  const out: Obj = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind" || v === undefined) continue;
    if (statusSubresource && (scope === "status") !== (k === "status")) continue;
    if (k === "metadata") {
      if (!isObj(v)) continue;
      const m: Obj = {};
      for (const [mk, mv] of Object.entries(v)) if (!UNTRACKED_METADATA.has(mk) && mv !== undefined) m[mk] = mv;
      if (Object.keys(m).length > 0) out.metadata = m;
      continue;
    }
    out[k] = v;
  }
  return out;
}

function diff(before: Obj | undefined, after: Obj | undefined, ctx: FieldManagerContext, scope: Scope): Comparison {
  const c: Comparison = { added: new Set(), modified: new Set(), removed: new Set() };
  compare(tracked(before, scope, ctx.statusSubresource) ?? {}, tracked(after, scope, ctx.statusSubresource) ?? {}, objectType(ctx.type), "", c);
  // `metadata` itself is never owned, only fields in it (stripMeta).
  for (const set of [c.added, c.removed]) set.delete("f:metadata");
  return c;
}

const subresourceOf = (scope: Scope): string | undefined => (scope === "status" ? "status" : undefined);

/** The other managers lose what the change modified or added, and every manager loses what it removed. */
function takeFromOthers(managers: Manager[], self: Manager | undefined, c: Comparison): void {
  for (const m of managers) {
    if (m === self) continue;
    for (const set of [c.added, c.modified, c.removed]) for (const p of set) if (m.set.delete(p)) m.dirty = true;
  }
}

/**
 * The `managedFields` client sent on an update (apimachinery `decodeLiveOrNew`): `[]` or `[{}]`
 * resets them; a valid non-empty list replaces them; anything else (absent, malformed) keeps
 * the live ones. Writes to `/status` always keep the live ones.
 */
export function requestedManagedFields(sent: unknown, live: unknown, scope: Scope): unknown {
  if (scope === "status" || sent === undefined || sent === null) return live;
  if (Array.isArray(sent) && (sent.length === 0 || (sent.length === 1 && isObj(sent[0]) && Object.keys(sent[0]).length === 0))) return [];
  try {
    return decodeManagers(sent).length > 0 ? sent : live;
  } catch {
    return live;
  }
}

/**
 * Records a non-apply write (create, PUT, PATCH of another type) by `manager`: compares `before`
 * (undefined on create) with `after` and sets `after.metadata.managedFields` (kube-apiserver's
 * Update: the manager takes what it added or modified, every manager loses what was removed;
 * `time` set when the manager took anything). `base` is the managedFields to start from (the live
 * ones, or those {@link requestedManagedFields} chose). When nothing tracked changed, `base` is kept
 * as it is.
 */
export function recordUpdate<T extends ManagedObject>(
  before: T | undefined,
  after: T,
  base: unknown,
  manager: string,
  scope: Scope,
  ctx: FieldManagerContext,
): void {
  if (before === undefined && (base == null || (Array.isArray(base) && base.length === 0))) {
    const created = createdFieldsV1(tracked(after, scope, ctx.statusSubresource), objectType(ctx.type));
    if (created) {
      if (created === NOTHING_TRACKED) setManagedFields(after, base);
      else setManagedFields(after, [createdEntry(manager, after.apiVersion, ctx.now, created, subresourceOf(scope))]);
      return;
    }
  }
  const c = diff(before, after, ctx, scope);
  const changed = c.added.size + c.modified.size + c.removed.size > 0;
  if (!changed) {
    setManagedFields(after, base);
    return;
  }
  let managers: Manager[];
  try {
    managers = decodeManagers(base);
  } catch {
    managers = [];
  }
  const id = identity({ manager, operation: "Update", apiVersion: after.apiVersion, subresource: subresourceOf(scope) });
  let self = managers.find((m) => identity(m.entry) === id);
  takeFromOthers(managers, self, c);
  const taken = c.added.size + c.modified.size > 0;
  if (!self && taken) {
    self = { entry: { manager, operation: "Update", apiVersion: after.apiVersion, fieldsType: "FieldsV1", fieldsV1: {} }, set: new Set(), dirty: true };
    if (scope === "status") self.entry.subresource = "status";
    managers.push(self);
  }
  if (self) {
    for (const p of c.removed) self.set.delete(p);
    for (const p of c.added) self.set.add(p);
    for (const p of c.modified) self.set.add(p);
    self.dirty = true;
    if (taken) self.entry.time = ctx.now;
  }
  setManagedFields(after, encodeManagers(managers, ctx.now));
}

/** {@link createdFieldsV1}'s answer for an object with no tracked field: its create takes nothing. */
const NOTHING_TRACKED: Record<string, unknown> = Object.freeze({});

/**
 * The FieldsV1 a create by one manager takes of `obj` (the part {@link tracked} keeps, of type
 * `t`), built in one walk: what {@link diff} of nothing against `obj` adds, encoded by
 * {@link toFieldsV1}, without the set of path strings between them (a Deployment's create spent
 * most of its field manager time there). {@link NOTHING_TRACKED} when it adds nothing; undefined
 * when a field name holds the set's separator (the general path then answers as it always did).
 */
function createdFieldsV1(obj: Obj | undefined, t: FieldType): Record<string, unknown> | undefined {
  if (!obj) return NOTHING_TRACKED;
  let odd = false;
  // The FieldsV1 of a value present at a member path (every present value but the root and `metadata`).
  const member = (v: unknown, type: FieldType): Record<string, unknown> => {
    const children = childrenOf(v, type);
    return children.length === 0 ? {} : encode([[".", {}], ...children]);
  };
  const childrenOf = (v: unknown, type: FieldType): [string, Record<string, unknown>][] => {
    const out: [string, Record<string, unknown>][] = [];
    if (isObj(v)) {
      if (type.atomicMap) return out;
      for (const k of Object.keys(v)) {
        const x = v[k];
        if (x === undefined) continue;
        if (k.includes(SEP)) odd = true;
        out.push([`f:${k}`, member(x, type.child(k))]);
      }
    } else if (Array.isArray(v) && v.length > 0) {
      const kind = type.list(v);
      if (kind.type === "atomic") return out;
      const seen = new Set<string>();
      const item = kind.type === "map" ? type.item() : SCALAR_SET;
      for (const x of v) {
        const pe = itemElement(x, kind);
        if (pe === undefined || seen.has(pe)) continue;
        seen.add(pe);
        if (pe.includes(SEP)) odd = true;
        out.push([pe, member(x, item)]);
      }
    }
    return out;
  };
  const encode = (entries: [string, Record<string, unknown>][]): Record<string, unknown> => {
    entries.sort((a, b) => (a[0] === "." ? -1 : b[0] === "." ? 1 : a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const o: Record<string, unknown> = {};
    for (const [k, v] of entries) o[k] = v;
    return o;
  };
  // `metadata` itself is never owned, only the fields in it (stripMeta): no "." of its own.
  const top = childrenOf(obj, t).map(([k, v]): [string, Record<string, unknown>] => {
    if (k !== "f:metadata") return [k, v];
    const { ".": _self, ...fields } = v;
    return [k, fields];
  });
  if (odd) return undefined;
  const fields = encode(top.filter(([k, v]) => k !== "f:metadata" || Object.keys(v).length > 0));
  return Object.keys(fields).length === 0 ? NOTHING_TRACKED : fields;
}

/** The one managedFields entry of a create by `manager`, in the key order {@link encodeManagers} gives. */
function createdEntry(
  manager: string,
  apiVersion: string,
  now: string,
  fieldsV1: Record<string, unknown>,
  subresource: string | undefined,
): ManagedFieldsEntry {
  const e = { manager, operation: "Update", apiVersion } as ManagedFieldsEntry;
  if (now) e.time = now;
  e.fieldsType = "FieldsV1";
  e.fieldsV1 = fieldsV1;
  if (subresource) e.subresource = subresource;
  return e;
}

function setManagedFields(obj: ManagedObject, entries: unknown): void {
  if (entries === undefined || (Array.isArray(entries) && entries.length === 0)) delete obj.metadata.managedFields;
  else obj.metadata.managedFields = entries;
}

/**
 * How kube-apiserver names a manager in a conflict (apimachinery `printManager` of the manager's
 * identifier, which carries no time): `"m"`, ` with subresource "status"`, and for Update
 * managers ` using apps/v1`.
 */
function printManager(e: ManagedFieldsEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === "Update") s += ` using ${e.apiVersion}`;
  return s;
}

/**
 * The 409 kube-apiserver answers an apply with conflicts (apimachinery `NewConflictError`):
 * reason Conflict, one cause of reason `FieldManagerConflict` a conflict (`conflict with "m"`, the
 * field path), the message `Apply failed with 1 conflict: conflict with "m": .spec.x` or, for
 * several, `Apply failed with N conflicts: conflicts with "m":\n- .a\n- .b` grouped by manager.
 */
export function conflictError(conflicts: ReadonlyArray<{ entry: ManagedFieldsEntry; path: string }>): ApiError {
  const sorted = [...conflicts].sort((a, b) => {
    const ia = identity(a.entry);
    const ib = identity(b.entry);
    return ia !== ib ? (ia < ib ? -1 : 1) : a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
  });
  const causes: StatusCause[] = sorted.map((c) => ({
    reason: "FieldManagerConflict",
    message: `conflict with ${printManager(c.entry)}`,
    field: pathString(c.path),
  }));
  const first = sorted[0];
  let message: string;
  if (sorted.length === 1 && first) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(first.entry)}: ${pathString(first.path)}`;
  } else {
    const lines: string[] = [];
    let last = "";
    for (const c of sorted) {
      const id = identity(c.entry);
      if (id !== last) lines.push(`conflicts with ${printManager(c.entry)}:`);
      last = id;
      lines.push(`- ${pathString(c.path)}`);
    }
    message = `Apply failed with ${sorted.length} conflicts: ${lines.join("\n")}`;
  }
  return new ApiError(409, "Conflict", message, { causes });
}

/** Input of {@link serverSideApply}. */
export interface ApplyRequest<T extends ManagedObject> {
  /** The live object, or undefined when the apply creates it. */
  current: T | undefined;
  /** The applied configuration (already checked for apiVersion, kind and name; no nulls). */
  applied: T;
  manager: string;
  force: boolean;
  scope: Scope;
}

/**
 * A server-side apply (kube-apiserver's `Apply`): merges `applied` into `current` by the schema,
 * removes what `manager` applied before and no longer applies unless another manager owns it,
 * checks conflicts with the other managers over what the apply changes, and returns the new object
 * with its `managedFields` (the applier's Apply entry holds its configuration's field set; `time`
 * is set when the object changes or the entry is new). On create (`current` undefined) the object
 * is the configuration. Server-owned metadata is `current`'s; the caller completes a create.
 * @throws ApiError 409 (reason Conflict, causes `FieldManagerConflict`) on conflicts without `force`
 */
export function serverSideApply<T extends ManagedObject>(req: ApplyRequest<T>, ctx: FieldManagerContext): T {
  const { current, applied, manager, force, scope } = req;
  const type = objectType(ctx.type);
  let managers: Manager[];
  try {
    managers = decodeManagers(current?.metadata.managedFields);
  } catch {
    managers = [];
  }
  const id = identity({ manager, operation: "Apply", apiVersion: applied.apiVersion, subresource: subresourceOf(scope) });
  const mine = managers.find((m) => identity(m.entry) === id);
  const config = tracked(applied, scope, ctx.statusSubresource) ?? {};
  const newSet = new Set<string>();
  toFieldSet(config, type, "", newSet);

  let result: T;
  if (!current) {
    result = structuredClone(applied);
    if (ctx.statusSubresource && scope === "main") delete result.status;
    delete result.metadata.managedFields;
  } else {
    const merged = merge(current, config, type) as T;
    result = { ...merged, metadata: { ...merged.metadata } };
    if (mine) {
      // Everything another manager or this configuration owns, with its ancestors.
      const owned = new Set<string>();
      for (const set of [...managers.filter((m) => m !== mine).map((m) => m.set), newSet]) for (const p of set) addWithAncestors(p, owned);
      const drop = [...mine.set].filter((p) => !newSet.has(p) && !owned.has(p) && !isKeyOfKeptItem(p, owned));
      if (drop.length > 0) {
        result = structuredClone(result);
        for (const p of drop.sort((a, b) => a.length - b.length)) removePath(result as Obj, p);
      }
    }
  }

  const c = diff(current, result, ctx, scope);
  const conflicts: Array<{ entry: ManagedFieldsEntry; path: string; owner: Manager }> = [];
  for (const m of managers) {
    if (m === mine) continue;
    for (const set of [c.added, c.modified]) for (const p of set) if (m.set.has(p)) conflicts.push({ entry: m.entry, path: p, owner: m });
  }
  if (conflicts.length > 0 && !force) throw conflictError(conflicts);
  takeFromOthers(managers, mine, c);
  const changed = c.added.size + c.modified.size + c.removed.size > 0;
  const entry: ManagedFieldsEntry = { manager, operation: "Apply", apiVersion: applied.apiVersion, fieldsType: "FieldsV1", fieldsV1: {} };
  if (changed || !mine?.entry.time) entry.time = ctx.now;
  else entry.time = mine.entry.time;
  if (scope === "status") entry.subresource = "status";
  const setUnchanged = mine !== undefined && mine.set.size === newSet.size && [...newSet].every((p) => mine.set.has(p));
  const next: Manager = { entry: setUnchanged && mine ? { ...entry, fieldsV1: mine.entry.fieldsV1 } : entry, set: newSet, dirty: !setUnchanged };
  const all = managers.filter((m) => m !== mine);
  all.push(next);
  setManagedFields(result, encodeManagers(all, ctx.now));
  return result;
}

function addWithAncestors(p: string, out: Set<string>): void {
  for (let i = p.indexOf(SEP); i >= 0; i = p.indexOf(SEP, i + 1)) out.add(p.slice(0, i));
  out.add(p);
}

/** True when `p` is a key field of a list item that stays (owned by someone): keys go with their item. */
function isKeyOfKeptItem(p: string, owned: Set<string>): boolean {
  const i = p.lastIndexOf(SEP);
  if (i < 0) return false;
  const parent = p.slice(0, i);
  const last = p.slice(i + 1);
  const item = parent.slice(parent.lastIndexOf(SEP) + 1);
  if (!item.startsWith("k:") || !last.startsWith("f:") || !owned.has(parent)) return false;
  return Object.hasOwn(JSON.parse(item.slice(2)) as Obj, last.slice(2));
}

/**
 * The field manager kube-apiserver uses when a write names none: the user agent up to its first
 * `/`, without unprintable characters, cut at 128 bytes (apiserver `prefixFromUserAgent`).
 */
export function managerFromUserAgent(userAgent: string | undefined): string {
  const head = (userAgent ?? "").split("/")[0] ?? "";
  let out = "";
  let bytes = 0;
  for (const ch of head) {
    if (!/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch)) continue;
    const n = new TextEncoder().encode(ch).length;
    if (bytes + n > FIELD_MANAGER_MAX_LENGTH) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * The errors of a `fieldManager` query parameter (apimachinery `ValidateFieldManager`): at most
 * 128 characters, printable only. Empty means none.
 */
export function fieldManagerErrors(fieldManager: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (fieldManager.length > FIELD_MANAGER_MAX_LENGTH)
    causes.push({ reason: "FieldValueTooLong", message: `Too long: may not be more than ${FIELD_MANAGER_MAX_LENGTH} bytes`, field: "fieldManager" });
  let i = 0;
  for (const ch of fieldManager) {
    if (!/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0;
      causes.push({
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(fieldManager)}: invalid character U+${cp.toString(16).toUpperCase().padStart(4, "0")} (at position ${i})`,
        field: "fieldManager",
      });
    }
    i += ch.length;
  }
  return causes;
}
