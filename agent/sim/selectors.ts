/**
 * Label and field selectors as kube-apiserver parses them from `?labelSelector=` and
 * `?fieldSelector=` (apimachinery `labels.Parse`, `fields.ParseSelector`).
 *
 * Labels: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist),
 * comma-separated (all must match). Fields: `path=v`, `path==v`, `path!=v` on any dotted path of
 * the object (`metadata.name`, `metadata.namespace`, `spec.nodeName`, `status.phase`, ...).
 * A malformed selector throws ApiError 400.
 */
import { badRequest } from "./errors.ts";
import { isObj, type KubeObject } from "./types.ts";

/** A compiled selector: true when the object matches. */
export type Matcher = (obj: KubeObject) => boolean;

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((x) => x.trim()).filter((x) => x.length > 0);
}

/** Compiles a label selector string (see module doc); empty/undefined matches everything. */
export function parseLabelSelector(sel: string | undefined | null): Matcher {
  if (!sel) return () => true;
  const reqs = splitTopLevel(sel).map((r): ((l: Record<string, string>) => boolean) => {
    let m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(r);
    if (m) {
      const key = m[1] ?? "";
      const vals = (m[3] ?? "").split(",").map((v) => v.trim());
      return m[2] === "in" ? (l) => key in l && vals.includes(l[key] ?? "") : (l) => !(key in l) || !vals.includes(l[key] ?? "");
    }
    m = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)$/.exec(r);
    if (m) {
      const key = m[1] ?? "";
      const val = m[3] ?? "";
      return m[2] === "!=" ? (l) => l[key] !== val : (l) => l[key] === val;
    }
    m = /^(!?)([A-Za-z0-9][-A-Za-z0-9_./]*)$/.exec(r);
    if (m) {
      const key = m[2] ?? "";
      return m[1] === "!" ? (l) => !(key in l) : (l) => key in l;
    }
    throw badRequest(`unable to parse requirement: found '${r}', expected: a valid label selector`);
  });
  return (obj) => {
    const labels = obj.metadata.labels ?? {};
    return reqs.every((f) => f(labels));
  };
}

function fieldValue(obj: KubeObject, path: string): string {
  let cur: unknown = obj;
  for (const p of path.split(".")) cur = isObj(cur) ? cur[p] : undefined;
  if (cur === undefined || cur === null) return "";
  return typeof cur === "string" ? cur : JSON.stringify(cur);
}

/** Compiles a field selector string (see module doc); empty/undefined matches everything. */
export function parseFieldSelector(sel: string | undefined | null): Matcher {
  if (!sel) return () => true;
  const reqs = splitTopLevel(sel).map((r): Matcher => {
    const m = /^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$/.exec(r);
    if (!m) throw badRequest(`invalid selector: '${sel}'; can't understand '${r}'`);
    const path = m[1] ?? "";
    const val = m[3] ?? "";
    return m[2] === "!=" ? (o) => fieldValue(o, path) !== val : (o) => fieldValue(o, path) === val;
  });
  return (obj) => reqs.every((f) => f(obj));
}
