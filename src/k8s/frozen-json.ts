/**
 * Rendered subtrees that many objects share: a controller that writes the same spec into many
 * objects (a KubeFleet placement's works: the same 51 manifests for each of 1,000 clusters,
 * src/fleet/controller.ts) renders it once, deep-freezes it here and keeps its JSON text, so that
 * the write path neither schema-checks, validates, serialises nor copies those bytes per object:
 * {@link stringifyObject} splices the text into each object's JSON (the D1 row body, the delivery
 * to the cluster's object), and the schema check and the kinds' validation remember a frozen
 * subtree they passed ({@link rememberChecked}, {@link checkedBy}). A frozen subtree cannot change
 * in place (a write to it throws), so what was checked and serialised once stays true.
 */

/** The JSON text of each frozen subtree. */
const texts = new WeakMap<object, string>();
/** Where each top-level field's value lies in its frozen object's JSON text ({@link FieldSpans}). */
const spans = new WeakMap<object, FieldSpans>();

/**
 * The places of a frozen object's top-level fields in its JSON text, in the text's order: for
 * each field its key and the value's text as `[start, end)` (UTF-16 offsets, as `String.slice`).
 */
export type FieldSpans = [key: string, start: number, end: number][];
/** The schemas (or validators: any key object) each frozen subtree passed. */
const checked = new WeakMap<object, Set<object>>();
/** The trees deep-frozen by {@link freezeTree}, whose text is not kept. */
const trees = new WeakSet<object>();

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

/**
 * Deep-freezes `tree` (a JSON value: objects, arrays, strings, numbers, booleans, null) and keeps
 * its JSON text (`JSON.stringify`, key order as built). Returns `tree`.
 */
export function freezeRendered<T extends object>(tree: T): T {
  if (texts.has(tree)) return tree;
  deepFreeze(tree);
  texts.set(tree, Array.isArray(tree) ? JSON.stringify(tree) : textWithSpans(tree as Record<string, unknown>));
  return tree;
}

/**
 * `JSON.stringify(obj)` (a JSON object), built field by field so that each top-level value's
 * place in the text is known: kept as the object's {@link FieldSpans}. The same text, at the same
 * cost (one serialisation of each value).
 */
function textWithSpans(obj: Record<string, unknown>): string {
  const fields: FieldSpans = [];
  let out = "{";
  for (const k of Object.keys(obj)) {
    const v = JSON.stringify(obj[k]);
    // JSON.stringify leaves out what has no JSON (undefined, a function, a symbol).
    if (v === undefined) continue;
    if (fields.length > 0) out += ",";
    out += `${JSON.stringify(k)}:`;
    fields.push([k, out.length, out.length + v.length]);
    out += v;
  }
  out += "}";
  spans.set(obj, fields);
  return out;
}

/** The {@link FieldSpans} of a frozen object made by {@link freezeRendered} or {@link lazyFrozen}, or undefined. */
export function fieldSpans(value: unknown): FieldSpans | undefined {
  return value !== null && typeof value === "object" ? spans.get(value) : undefined;
}

/**
 * A frozen object known by its JSON text `text` (an object's, exactly) and its top-level fields'
 * places in it (`fields`, as {@link fieldSpans} gives them on the side that serialised it), whose
 * fields' values are parsed only when first read: each field is a getter that parses its slice
 * of the text once and deep-freezes it. It serialises as `text` ({@link stringifyObject} splices
 * it; `JSON.stringify`, `structuredClone` and a Workers RPC read the getters and give the same
 * JSON), it cannot change (frozen; the fields have no setters), and a reader sees the same values
 * as in `JSON.parse(text)`. For a work's 30 KB spec handed to a cluster's object, which the object
 * keeps, pushes to its agent and carries into the agent's status writes without reading it.
 */
export function lazyFrozen(text: string, fields: FieldSpans): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  for (const [key, start, end] of fields) {
    let parsed = false;
    let value: unknown;
    Object.defineProperty(tree, key, {
      enumerable: true,
      get() {
        if (!parsed) {
          value = JSON.parse(text.slice(start, end));
          deepFreeze(value);
          parsed = true;
        }
        return value;
      },
    });
  }
  Object.freeze(tree);
  texts.set(tree, text);
  spans.set(tree, fields);
  return tree;
}

/**
 * Deep-freezes `tree`, parsed from `text` (exactly: `JSON.parse(text)`), and keeps `text` as its
 * JSON text: a subtree that came as text (a work's spec handed to a cluster's object) is spliced
 * into what is serialised with it, as a rendered one is. Returns `tree`.
 */
export function adoptFrozen<T extends object>(tree: T, text: string): T {
  if (texts.has(tree)) return tree;
  deepFreeze(tree);
  texts.set(tree, text);
  return tree;
}

/** The JSON text of a subtree made by {@link freezeRendered}, or undefined for any other value. */
export function frozenJson(value: unknown): string | undefined {
  return value !== null && typeof value === "object" ? texts.get(value) : undefined;
}

/**
 * Deep-freezes `tree` (a JSON value) without keeping its text: a value a controller writes again
 * and again unchanged (a placement's `placementStatuses` entry of a cluster whose state did not
 * move), so that the write path may remember it passed a schema ({@link rememberChecked}) and
 * not check it again. Returns `tree`.
 */
export function freezeTree<T extends object>(tree: T): T {
  deepFreeze(tree);
  trees.add(tree);
  return tree;
}

/**
 * Remembers that frozen subtree `value` ({@link freezeRendered}, {@link lazyFrozen},
 * {@link freezeTree}) passed `by` (a schema, a validator); nothing for another value.
 */
export function rememberChecked(value: unknown, by: object): void {
  if (frozenJson(value) === undefined && !(value !== null && typeof value === "object" && trees.has(value))) return;
  let s = checked.get(value as object);
  if (!s) checked.set(value as object, (s = new Set()));
  s.add(by);
}

/** Whether `value` is a frozen subtree that passed `by` before ({@link rememberChecked}). */
export function checkedBy(value: unknown, by: object): boolean {
  return value !== null && typeof value === "object" && (checked.get(value)?.has(by) ?? false);
}

/** A marker no object's own string can hold (a random part per isolate, made at first use: not in the global scope). */
let mark: string | undefined;

/**
 * `JSON.stringify(obj)` for an object whose top-level values may be frozen subtrees
 * ({@link freezeRendered}): their kept text is spliced in at their place (a string copy, not a
 * walk of the tree). The result is exactly what `JSON.stringify(obj)` gives. `raw` gives the JSON
 * text of top-level keys the caller serialised itself (their values in `obj` are then ignored).
 */
export function stringifyObject(obj: Record<string, unknown>, raw?: Record<string, string>): string {
  let copy: Record<string, unknown> | undefined;
  let splices: [string, string][] | undefined;
  for (const k of Object.keys(obj)) {
    const text = raw?.[k] ?? frozenJson(obj[k]);
    if (text === undefined) continue;
    copy ??= { ...obj };
    const marker = `${(mark ??= `\u0000frozen-json:${crypto.randomUUID()}:`)}${k}`;
    copy[k] = marker;
    (splices ??= []).push([JSON.stringify(marker), text]);
  }
  if (!copy) return JSON.stringify(obj);
  let out = JSON.stringify(copy);
  for (const [marker, text] of splices!) {
    const at = out.indexOf(marker);
    out = out.slice(0, at) + text + out.slice(at + marker.length);
  }
  return out;
}
