/**
 * Kubernetes JSONPath (the syntax of `kubectl -o jsonpath`, OCM feedback rules and ignoreFields:
 * `.spec.replicas`, `{.status.readyReplicas}`, `.spec.template.spec.containers[0].image`,
 * `.status.conditions[?(@.type=="Ready")].status`, `.metadata.labels.app\.kubernetes\.io/name`)
 * evaluated with jsonpath-plus in its safe evaluation mode (no `eval`).
 *
 * The agent has its own copy of this small translation rather than importing the hub's
 * `src/k8s/jsonpath.ts`, because the agent image ships only `agent/src`.
 */
import { JSONPath } from "jsonpath-plus";

/** Raised for a path that cannot be parsed. */
export class JsonPathError extends Error {
  override name = "JsonPathError";
}

/**
 * Translates a Kubernetes JSONPath into jsonpath-plus syntax: strips `{…}`, roots it at `$`, and
 * turns dotted names holding escaped dots (`\.`) or characters other than letters, digits, `_`
 * and `-` into bracket notation (`['app.kubernetes.io/name']`).
 *
 * @example toJsonPathPlus("{.metadata.labels.app\\.kubernetes\\.io/name}") // "$.metadata.labels['app.kubernetes.io/name']"
 * @throws JsonPathError on an unterminated bracket.
 */
export function toJsonPathPlus(path: string): string {
  let p = path.trim();
  if (p.startsWith("{") && p.endsWith("}")) p = p.slice(1, -1).trim();
  if (p.startsWith("$")) p = p.slice(1);
  if (p === "" || p === ".") return "$";
  if (!p.startsWith(".") && !p.startsWith("[")) p = `.${p}`;
  let out = "$";
  let i = 0;
  while (i < p.length) {
    const c = p[i];
    if (c === "[") {
      // Copy a bracket expression verbatim, minding quotes and nested brackets (filters).
      let depth = 0;
      let quote: string | undefined;
      let j = i;
      for (; j < p.length; j++) {
        const d = p[j];
        if (quote) {
          if (d === "\\") j++;
          else if (d === quote) quote = undefined;
        } else if (d === '"' || d === "'") quote = d;
        else if (d === "[") depth++;
        else if (d === "]" && --depth === 0) break;
      }
      if (j >= p.length) throw new JsonPathError(`invalid JSONPath ${JSON.stringify(path)}: unterminated [`);
      out += p.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === "." && p[i + 1] === ".") {
      out += "..";
      i += 2;
      continue;
    }
    if (c === ".") i++;
    let name = "";
    while (i < p.length && p[i] !== "." && p[i] !== "[") {
      if (p[i] === "\\" && i + 1 < p.length) {
        name += p[i + 1];
        i += 2;
      } else name += p[i++];
    }
    if (name === "") continue;
    out += name === "*" || /^[A-Za-z0-9_-]+$/.test(name) ? `${out.endsWith("..") ? "" : "."}${name}` : `[${JSON.stringify(name)}]`;
  }
  return out;
}

/**
 * Every value `path` selects in `obj`, in document order (empty when nothing matches).
 *
 * @param obj the object to read (e.g. a live Kubernetes object).
 * @param path a Kubernetes JSONPath.
 * @throws JsonPathError when the path cannot be parsed.
 * @example evaluate({status: {replicas: 2}}, ".status.replicas") // [2]
 */
export function evaluate(obj: unknown, path: string): unknown[] {
  try {
    return (JSONPath({ path: toJsonPathPlus(path), json: obj as object, wrap: true, eval: "safe" }) as unknown[] | undefined) ?? [];
  } catch (e) {
    if (e instanceof JsonPathError) throw e;
    throw new JsonPathError(`invalid JSONPath ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}

/**
 * The JSON Pointers (RFC 6901, e.g. `/spec/replicas`) of every value `path` selects in `obj`.
 *
 * @throws JsonPathError when the path cannot be parsed.
 */
export function pointers(obj: unknown, path: string): string[] {
  try {
    return (JSONPath({ path: toJsonPathPlus(path), json: obj as object, wrap: true, eval: "safe", resultType: "pointer" }) as string[] | undefined) ?? [];
  } catch (e) {
    if (e instanceof JsonPathError) throw e;
    throw new JsonPathError(`invalid JSONPath ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}

function decodePointer(ptr: string): string[] {
  return ptr === "" ? [] : ptr.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The value at JSON Pointer `ptr` in `obj`, or `undefined` when a step is missing. */
export function getPointer(obj: unknown, ptr: string): unknown {
  let cur: unknown = obj;
  for (const seg of decodePointer(ptr)) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (typeof cur === "object" && cur !== null) cur = (cur as Record<string, unknown>)[seg];
    else return undefined;
  }
  return cur;
}

/**
 * Sets (or, with `value === undefined`, removes) the value at JSON Pointer `ptr` in `obj`,
 * creating missing objects on the way. Mutates `obj`. A removed array element is spliced out.
 */
export function setPointer(obj: Record<string, unknown>, ptr: string, value: unknown): void {
  const segs = decodePointer(ptr);
  const last = segs.pop();
  if (last === undefined) return;
  let cur: unknown = obj;
  for (const seg of segs) {
    const container = cur as Record<string, unknown>;
    let next = Array.isArray(cur) ? cur[Number(seg)] : container[seg];
    if (typeof next !== "object" || next === null) {
      if (value === undefined) return;
      next = {};
      if (Array.isArray(cur)) cur[Number(seg)] = next;
      else container[seg] = next;
    }
    cur = next;
  }
  if (Array.isArray(cur)) {
    if (value === undefined) cur.splice(Number(last), 1);
    else cur[Number(last)] = value;
  } else if (typeof cur === "object" && cur !== null) {
    const container = cur as Record<string, unknown>;
    if (value === undefined) delete container[last];
    else container[last] = value;
  }
}
