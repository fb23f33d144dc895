/**
 * JSON Pointer (RFC 6901) reads and writes for the paths a Kubernetes JSONPath selects
 * (`ignoreFields` of ServerSideApply). The JSONPath evaluation itself is the hub's
 * `src/k8s/jsonpath.ts`, re-exported here; the agent image copies that one file.
 */
export { evaluate, JsonPathError, pointers, toJsonPathPlus } from "../../../src/k8s/jsonpath.ts";

function decodePointer(ptr: string): string[] {
  return ptr === ""
    ? []
    : ptr
        .slice(1)
        .split("/")
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
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
