/**
 * Canonical JSON text, for comparing JSON values by content (a work's spec against its template,
 * a policy template as delivered against as reported, an Event's immutable fields).
 */

/**
 * `v`'s JSON text with every object's keys sorted (array order kept), so that deeply equal
 * values give equal texts; as `JSON.stringify`, `undefined` properties are left out and
 * `canonicalJson(undefined)` is undefined.
 * @example canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] }) === '{"a":[2,{"c":4,"d":3}],"b":1}'
 */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, (x as Record<string, unknown>)[k]]),
        )
      : x,
  );
}

/** The characters Go's `encoding/json` escapes in strings (HTML-safe escaping, and U+2028/U+2029). */
const GO_ESCAPED = /[<>&\u2028\u2029]/g;

/**
 * `v`'s JSON text as Go's `json.Marshal` writes a map-shaped value (an `unstructured` object, a
 * `RawExtension` of one): compact, object keys sorted, and `<`, `>`, `&`, U+2028 and U+2029
 * escaped as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029` (those characters occur only inside
 * strings, so the escaping is done on the whole text). Numbers are written as JavaScript writes
 * them (Go writes the same for integers and for the floats Kubernetes objects carry).
 * @example goJson({ b: "<", a: 1 }) === '{"a":1,"b":"\\u003c"}'
 */
export function goJson(v: unknown): string {
  return canonicalJson(v).replace(GO_ESCAPED, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
