/**
 * Label and field selectors of `?labelSelector=` and `?fieldSelector=`, parsed by the hub's
 * modules (src/k8s/labels.ts, src/k8s/fields.ts: apimachinery's `labels.Parse` and
 * `fields.ParseSelector`). Fields are any dotted path of the object (`metadata.name`,
 * `spec.nodeName`, `status.phase`, ...). A malformed selector throws ApiError 400 with
 * apimachinery's message.
 */
import { FieldSelectorError, matchesFields, parseFieldSelector as parseFields } from "../../src/k8s/fields.ts";
import { matches, parseSelector, SelectorParseError } from "../../src/k8s/labels.ts";
import { badRequest } from "./errors.ts";
import { isObj, type KubeObject } from "./types.ts";

/** A compiled selector: true when the object matches. */
export type Matcher = (obj: KubeObject) => boolean;

/** Compiles a label selector; empty/undefined matches everything. @throws ApiError 400 */
export function parseLabelSelector(sel: string | undefined | null): Matcher {
  if (!sel) return () => true;
  try {
    const s = parseSelector(sel);
    return (obj) => matches(s, obj.metadata.labels);
  } catch (e) {
    throw e instanceof SelectorParseError ? badRequest(e.message) : e;
  }
}

function fieldValue(obj: KubeObject, path: string): string {
  let cur: unknown = obj;
  for (const p of path.split(".")) cur = isObj(cur) ? cur[p] : undefined;
  if (cur === undefined || cur === null) return "";
  return typeof cur === "string" ? cur : JSON.stringify(cur);
}

/** Compiles a field selector; empty/undefined matches everything. @throws ApiError 400 */
export function parseFieldSelector(sel: string | undefined | null): Matcher {
  if (!sel) return () => true;
  try {
    const reqs = parseFields(sel);
    return (obj) => matchesFields(reqs, (f) => fieldValue(obj, f));
  } catch (e) {
    throw e instanceof FieldSelectorError ? badRequest(e.message) : e;
  }
}
