/**
 * Kubernetes JSONPath (the syntax of `kubectl -o jsonpath`, CRD printer columns, OCM feedback
 * rules and ignoreFields: `.spec.replicas`, `{.status.readyReplicas}`,
 * `.spec.template.spec.containers[0].image`, `.status.conditions[?(@.type=="Ready")].status`,
 * `.metadata.labels.app\.kubernetes\.io/name`) evaluated with jsonpath-plus in its safe
 * evaluation mode (no `eval`, so it runs inside Workers). One implementation for the hub (printer
 * columns) and the agent (feedback, ignoreFields); the agent image copies this file.
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
  return select(obj, path, "value");
}

/**
 * The JSON Pointers (RFC 6901, e.g. `/spec/replicas`) of every value `path` selects in `obj`.
 *
 * @throws JsonPathError when the path cannot be parsed.
 */
export function pointers(obj: unknown, path: string): string[] {
  return select(obj, path, "pointer") as string[];
}

function select(obj: unknown, path: string, resultType: "value" | "pointer"): unknown[] {
  try {
    return (JSONPath({ path: toJsonPathPlus(path), json: obj as object, wrap: true, eval: "safe", resultType }) as unknown[] | undefined) ?? [];
  } catch (e) {
    if (e instanceof JsonPathError) throw e;
    throw new JsonPathError(`invalid JSONPath ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}
