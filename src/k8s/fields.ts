/**
 * Field selectors (`?fieldSelector=`) as apimachinery's `fields.ParseSelector` parses them:
 * comma-separated terms `field=value`, `field==value`, `field!=value`; the field is everything
 * before the first operator (no trimming, no escaping); in a value `\,`, `\=` and `\\` stand for
 * `,`, `=` and `\`, and an unescaped `,` or `=` or any other escape is an error. Terms are sorted.
 * Which fields a kind supports is the caller's business (kube-apiserver answers
 * `field label not supported: <field>`).
 */

/** One term of a field selector: `field` equals (`equals` true) or differs from `value`. */
export interface FieldRequirement {
  field: string;
  value: string;
  equals: boolean;
}

/** A field selector that does not parse; `message` is apimachinery's. */
export class FieldSelectorError extends Error {
  override readonly name = "FieldSelectorError";
}

function splitTerms(s: string): string[] {
  if (s === "") return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === "\\") inSlash = true;
    else if (c === ",") {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = "";
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== "\\" && c !== "," && c !== "=") throw new FieldSelectorError(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === "\\") inSlash = true;
    else if (c === "," || c === "=") throw new FieldSelectorError(`invalid field selector: unescaped character in value: ${c}`);
    else out += c;
  }
  if (inSlash) throw new FieldSelectorError("invalid field selector: invalid escape sequence: \\");
  return out;
}

/**
 * Parses a field selector (see module doc); an empty one has no requirements.
 * @throws FieldSelectorError `invalid selector: '<selector>'; can't understand '<term>'`, or an escape error
 * @example parseFieldSelector("status.phase!=Running,metadata.name=web") // two requirements, sorted
 */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  for (const term of splitTerms(selector).sort()) {
    if (term === "") continue;
    let hit: { i: number; op: string } | undefined;
    for (let i = 0; i < term.length && !hit; i++) {
      for (const op of ["!=", "==", "="]) {
        if (term.startsWith(op, i)) {
          hit = { i, op };
          break;
        }
      }
    }
    if (!hit) throw new FieldSelectorError(`invalid selector: '${selector}'; can't understand '${term}'`);
    out.push({ field: term.slice(0, hit.i), value: unescapeValue(term.slice(hit.i + hit.op.length)), equals: hit.op !== "!=" });
  }
  return out;
}

/** True when every requirement holds for `valueOf(field)` (the field's value as a string). */
export function matchesFields(reqs: readonly FieldRequirement[], valueOf: (field: string) => string): boolean {
  return reqs.every((r) => (valueOf(r.field) === r.value) === r.equals);
}
