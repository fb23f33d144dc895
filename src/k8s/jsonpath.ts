/**
 * Kubernetes JSONPath (as kubectl and CRD printer columns use it: `.spec.x`,
 * `.items[*].name`, `.status.conditions[?(@.type=="Ready")].status`, optionally wrapped in
 * `{...}`) evaluated with jsonpath-plus in its safe evaluation mode (no `eval`, so it runs inside
 * Workers).
 */
import { JSONPath } from "jsonpath-plus";

/** Raised for a path that is not valid JSONPath. */
export class JsonPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JsonPathError";
  }
}

/** Turns a Kubernetes JSONPath into jsonpath-plus syntax (`{.a.b}` and `.a.b` become `$.a.b`). */
export function toJsonPathPlus(path: string): string {
  let p = path.trim();
  if (p.startsWith("{") && p.endsWith("}")) p = p.slice(1, -1).trim();
  if (p.startsWith("$")) return p;
  if (p === "" || p === ".") return "$";
  return p.startsWith("[") ? `$${p}` : `$${p.startsWith(".") ? "" : "."}${p}`;
}

/**
 * Every value `path` selects in `obj` (an empty array when nothing matches).
 *
 * @example evaluate({ spec: { a: [1, 2] } }, ".spec.a[*]") // [1, 2]
 * @throws JsonPathError when the path cannot be parsed.
 */
export function evaluate(obj: unknown, path: string): unknown[] {
  try {
    const out = JSONPath({ path: toJsonPathPlus(path), json: obj as object, wrap: true, eval: "safe" }) as unknown[];
    return out ?? [];
  } catch (e) {
    throw new JsonPathError(`invalid JSONPath ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}
