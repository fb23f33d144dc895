/**
 * How a ConfigurationPolicy's object template is compared with the live object, and what an
 * enforce writes, as OCM's config-policy-controller does (`handleSingleKey`, `mergeSpecs`,
 * `mergeArrays`, `deeplyEquivalent` in its controllers/): for each top-level key of the template
 * (but `apiVersion` and `kind`), the template's value is merged into the live one and the merged
 * value compared with the live value.
 *
 * - `musthave`: maps merge key by key (the live object's other keys stay); a list keeps the live
 *   items and adds each template item no live item matches (a live map item matches when the
 *   template item merged into it equals it, or when both carry the same `name`, as a Deployment's
 *   containers); so the template is a subset of the live object.
 * - `mustonlyhave`: at each key the template names, the template's value replaces the live one
 *   (maps and lists exactly as written: extra keys and items are removed on enforce); a
 *   top-level key the template does not name (but `metadata` and `status`) is extra too.
 * - `metadata` is compared on `labels` and `annotations` only (OCM's `formatMetadata`, without
 *   `kubectl.kubernetes.io/last-applied-configuration`), with `metadataComplianceType` when set.
 * - Equality ignores list order; a string that parses as a quantity equals the same quantity
 *   written another way (`1Gi` and `1024Mi`); scalars compare by their text (`1` and `"1"`).
 *
 * Pure functions over JSON values; nothing here talks to a cluster.
 */
import { parseQuantityExact } from "../../../src/k8s/quantity.ts";
import { isObj, type Obj } from "../work/types.ts";

/** OCM's compliance types (lowercase; the API accepts any case). */
export type ComplianceType = "musthave" | "mustonlyhave" | "mustnothave";

/** The last-applied annotation OCM leaves out of comparisons. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** Go's `fmt.Sprint` of a JSON scalar closely enough for equality (`true`, `1`, `a`, `<nil>`). */
function sprint(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "object") return JSON.stringify(sortedValue(v));
  return String(v);
}

/** A JSON value with its lists sorted by their items' text, for order-insensitive comparison. */
function sortedValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedValue).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  if (isObj(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortedValue(v[k])]),
    );
  return v;
}

/** Whether the two strings are the same Kubernetes quantity (both must parse). */
function sameQuantity(a: string, b: unknown): boolean | undefined {
  if (typeof b !== "string") return undefined;
  try {
    return parseQuantityExact(a).nanos === parseQuantityExact(b).nanos;
  } catch {
    return undefined;
  }
}

/**
 * Whether `merged` (the template merged into the live value) equals `live`, ignoring list order;
 * an absent live scalar equals its type's zero value within list items (OCM's
 * `zeroValueEqualsNil`).
 */
export function equivalent(merged: unknown, live: unknown, zeroValueEqualsNil = false): boolean {
  if (isObj(merged)) return isObj(live) && fieldsEquivalent(merged, live, zeroValueEqualsNil);
  if (Array.isArray(merged)) {
    if (merged.length === 0 && (live === undefined || live === null)) return true;
    return Array.isArray(live) && listsEquivalent(live, merged);
  }
  if (zeroValueEqualsNil && (live === undefined || live === null) && merged !== null && merged !== undefined) return sprint(zeroOf(merged)) === sprint(merged);
  return sprint(merged) === sprint(live);
}

function zeroOf(v: unknown): unknown {
  return typeof v === "string" ? "" : typeof v === "number" ? 0 : typeof v === "boolean" ? false : null;
}

function fieldsEquivalent(merged: Obj, live: Obj, zeroValueEqualsNil: boolean): boolean {
  if (Object.keys(merged).length < Object.keys(live).length) return false;
  for (const [k, m] of Object.entries(merged)) {
    const l = live[k];
    if (isObj(m)) {
      if (!isObj(l)) {
        if (zeroValueEqualsNil && Object.keys(m).length === 0) continue;
        return false;
      }
      if (!fieldsEquivalent(m, l, zeroValueEqualsNil)) return false;
    } else if (Array.isArray(m)) {
      if (!Array.isArray(l)) {
        if (m.length === 0) continue;
        return false;
      }
      if (m.length !== l.length || !listsEquivalent(l, m)) return false;
    } else if (typeof m === "string") {
      const q = sameQuantity(m, l);
      if (q === undefined ? !(k in live) || sprint(l) !== m : !q) return false;
    } else {
      const lv = (l === undefined || l === null) && m !== null ? zeroOf(m) : l;
      if (sprint(lv) !== sprint(m)) return false;
    }
  }
  return true;
}

function listsEquivalent(live: unknown[], merged: unknown[]): boolean {
  if (live.length !== merged.length) return false;
  const key = (v: unknown) => JSON.stringify(sortedValue(v));
  const l = [...live].sort((a, b) => (key(a) < key(b) ? -1 : 1));
  const m = [...merged].sort((a, b) => (key(a) < key(b) ? -1 : 1));
  return l.every((item, i) => (isObj(item) ? isObj(m[i]) && fieldsEquivalent(m[i] as Obj, item, true) : sprint(item) === sprint(m[i])));
}

/**
 * The template value `tmpl` merged into the live value `live` under `ctype` (OCM's `mergeSpecs`
 * for musthave; mustonlyhave takes the template's maps and lists as they are). Returns a new
 * value; neither input is changed.
 */
export function merge(tmpl: unknown, live: unknown, ctype: ComplianceType): unknown {
  if (isObj(tmpl)) {
    if (!isObj(live)) return structuredClone(tmpl);
    if (ctype === "mustonlyhave") return structuredClone(tmpl);
    const out: Obj = structuredClone(tmpl);
    for (const [k, v] of Object.entries(live)) out[k] = k in tmpl ? merge(tmpl[k], v, ctype) : structuredClone(v);
    return out;
  }
  if (Array.isArray(tmpl)) {
    if (!Array.isArray(live) || live.length === 0) return structuredClone(tmpl);
    return mergeArrays(tmpl, live, ctype);
  }
  if (tmpl === null || tmpl === undefined) return isObj(live) ? structuredClone(live) : tmpl;
  return tmpl;
}

/**
 * OCM's `mergeArrays`: mustonlyhave takes the template's list; musthave matches each live item
 * (duplicates counted) with a template item that merges into it unchanged or carries the same
 * `name`, writes the merged item there, and appends the live items no template item matched.
 */
function mergeArrays(desired: unknown[], live: unknown[], ctype: ComplianceType): unknown[] {
  if (ctype === "mustonlyhave") return structuredClone(desired);
  const out = structuredClone(desired);
  const written = new Set<number>();
  const counts = new Map<string, { value: unknown; count: number }>();
  for (const v of live) {
    const k = sprint(v);
    const e = counts.get(k);
    if (e) e.count++;
    else counts.set(k, { value: v, count: 1 });
  }
  for (const [, { value, count: wanted }] of counts) {
    let count = 0;
    for (let i = 0; i < desired.length && count < wanted; i++) {
      if (written.has(i)) continue;
      const d = desired[i];
      let mergedItem: unknown = d;
      let sameName = false;
      if (isObj(value) && isObj(d)) {
        sameName = typeof value.name === "string" && value.name !== "" && d.name === value.name;
        mergedItem = merge(d, value, ctype);
      }
      if (sameName || equivalent(mergedItem, value, true)) {
        count++;
        out[i] = mergedItem;
        written.add(i);
      }
    }
    for (let n = count; n < wanted; n++) out.push(structuredClone(value));
  }
  return out;
}

/** `labels` and `annotations` of a metadata object (OCM's `formatMetadata`). */
function formatMetadata(meta: unknown): Obj {
  const out: Obj = {};
  if (!isObj(meta)) return out;
  if ("labels" in meta) out.labels = meta.labels;
  if ("annotations" in meta) {
    const a = meta.annotations;
    out.annotations = isObj(a) ? Object.fromEntries(Object.entries(a).filter(([k]) => k !== LAST_APPLIED)) : a;
  }
  return out;
}

/** What comparing one object template with its live object found. */
export interface Comparison {
  /** Whether the live object differs from the template (an enforce would update it). */
  mismatch: boolean;
  /** The object an update writes: the live object with each mismatched key set to its merged value. */
  updated: Obj;
  /** A key whose template and live values are of different kinds (OCM's "object type of template and existing do not match"), else undefined. */
  typeError?: string;
}

/**
 * Compares the template `desired` with the live object `live` (OCM's `handleKeys`), key by key,
 * under `ctype` (`mustnothave` compares as `musthave`) and `metadataCtype` for `metadata` (OCM's
 * `metadataComplianceType`: `musthave` or `mustonlyhave` for the labels and annotations, whatever
 * `ctype` is; `ctype` when undefined). Under `mustonlyhave` (`ctype`, not `metadataCtype`) a
 * top-level key of `live` that `desired` lacks is a mismatch too, removed from `updated`, except
 * `metadata`, `status` and a v1 ServiceAccount's `secrets` and `imagePullSecrets` (OCM's rule).
 * A mismatch may still be one the API server would not write (its defaults): evaluate.ts asks it
 * with a dry-run update, as OCM does.
 */
export function compareObject(desired: Obj, live: Obj, ctype: ComplianceType, metadataCtype?: ComplianceType): Comparison {
  const updated: Obj = structuredClone(live);
  let mismatch = false;
  for (const key of Object.keys(desired)) {
    if (key === "apiVersion" || key === "kind" || key === "status") continue;
    const type: ComplianceType = (key === "metadata" && metadataCtype ? metadataCtype : ctype) === "mustonlyhave" ? "mustonlyhave" : "musthave";
    const want = key === "metadata" ? formatMetadata(desired.metadata) : desired[key];
    const have = key === "metadata" ? formatMetadata(live.metadata) : live[key];
    if (have !== undefined && have !== null && (Array.isArray(want) !== Array.isArray(have) || (isObj(want) && !isObj(have)))) {
      return { mismatch: true, updated, typeError: `Error merging changes into key "${key}": object type of template and existing do not match` };
    }
    const merged = merge(want, have, type);
    let left = have;
    if (key === "metadata" && isObj(merged) && isObj(have)) {
      // Labels or annotations the template does not name are not compared (OCM's fmtMetadataForCompare).
      left = { ...have };
      if (!("labels" in merged)) delete (left as Obj).labels;
      if (!("annotations" in merged)) delete (left as Obj).annotations;
      if (Object.keys(merged).length === 0) continue;
    }
    if (equivalent(merged, left)) continue;
    mismatch = true;
    if (key === "metadata" && isObj(merged)) {
      const meta = isObj(updated.metadata) ? updated.metadata : (updated.metadata = {});
      for (const k of ["labels", "annotations"] as const) if (k in merged) (meta as Obj)[k] = merged[k];
    } else updated[key] = merged;
  }
  if (ctype === "mustonlyhave") {
    // OCM's handleKeys: under mustonlyhave the live object's top-level keys the template does not
    // name make it differ (an enforce removes them), but metadata, status and, on a v1
    // ServiceAccount, the Kubernetes-managed secrets and imagePullSecrets.
    const serviceAccount = live.kind === "ServiceAccount" && live.apiVersion === "v1";
    for (const key of Object.keys(live)) {
      if (key in desired || key === "metadata" || key === "status") continue;
      if (serviceAccount && (key === "secrets" || key === "imagePullSecrets")) continue;
      delete updated[key];
      mismatch = true;
    }
  }
  return { mismatch, updated };
}
