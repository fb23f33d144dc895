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
