/**
 * Payload templates in a WebhookReceiver's patch: `{{ .a.b.c }}` in a string is replaced by the
 * value at `a.b.c` of the delivery's JSON payload (object keys, or decimal indexes into arrays),
 * after Flux's use of Go template field chains. A string that is exactly one template takes the
 * payload value as it is (number, boolean, object); a template inside a longer string is replaced
 * by the value's text (strings as they are, anything else as JSON). Pure: no I/O.
 */
import { isJsonObject } from "../k8s/meta.ts";

const SEGMENT = "[A-Za-z0-9_-]+";
const TEMPLATE = new RegExp(`\\{\\{\\s*\\.(${SEGMENT}(?:\\.${SEGMENT})*)\\s*\\}\\}`, "g");
const WHOLE = new RegExp(`^\\{\\{\\s*\\.(${SEGMENT}(?:\\.${SEGMENT})*)\\s*\\}\\}$`);

/** The outcome of resolving templates: the resolved value, or the first field the payload lacks (`.a.b.c`). */
export type Resolved = { ok: true; value: unknown } | { ok: false; missing: string };

/** True when `s` contains a template. */
export function hasTemplate(s: string): boolean {
  return new RegExp(TEMPLATE.source).test(s);
}

/**
 * The problem with the templates of `s`, or null when every `{{`/`}}` belongs to a well-formed
 * `{{ .field.chain }}`. @example templateError("v{{ .a }}") === null; templateError("{{ a }}") !== null
 */
export function templateError(s: string): string | null {
  const rest = s.replace(TEMPLATE, "");
  if (rest.includes("{{") || rest.includes("}}")) return "malformed template: use {{ .field.path }} with fields of [A-Za-z0-9_-] separated by dots";
  return null;
}

/** The payload value at a dotted chain (`release.tag`), or undefined when absent (own properties only). */
export function lookup(payload: unknown, chain: string): unknown {
  let cur: unknown = payload;
  for (const seg of chain.split(".")) {
    if (Array.isArray(cur) && /^(0|[1-9][0-9]*)$/.test(seg)) cur = cur[Number(seg)];
    else if (isJsonObject(cur) && Object.hasOwn(cur, seg)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

function resolveString(s: string, payload: unknown): Resolved {
  const whole = WHOLE.exec(s);
  if (whole) {
    const v = lookup(payload, whole[1]!);
    return v === undefined || v === null ? { ok: false, missing: `.${whole[1]}` } : { ok: true, value: structuredClone(v) };
  }
  let missing: string | null = null;
  const out = s.replace(TEMPLATE, (_m, chain: string) => {
    const v = lookup(payload, chain);
    if (v === undefined || v === null) {
      missing ??= `.${chain}`;
      return "";
    }
    return typeof v === "string" ? v : JSON.stringify(v);
  });
  return missing === null ? { ok: true, value: out } : { ok: false, missing };
}

/**
 * Resolves the templates in every string value of `value` (object keys are left alone), from
 * `payload`. Returns a new value; the input is not mutated. A template whose field is absent or
 * null gives `{ok: false, missing: ".a.b.c"}`.
 */
export function resolveTemplates(value: unknown, payload: unknown): Resolved {
  if (typeof value === "string") return resolveString(value, payload);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value) {
      const r = resolveTemplates(v, payload);
      if (!r.ok) return r;
      out.push(r.value);
    }
    return { ok: true, value: out };
  }
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = resolveTemplates(v, payload);
      if (!r.ok) return r;
      out[k] = r.value;
    }
    return { ok: true, value: out };
  }
  return { ok: true, value };
}

/** Every string inside `value` with the field path it sits at (`spec.action.patch[0].value`). */
export function stringsOf(value: unknown, path: string): { path: string; value: string }[] {
  if (typeof value === "string") return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsOf(v, `${path}[${i}]`));
  if (isJsonObject(value)) return Object.entries(value).flatMap(([k, v]) => stringsOf(v, `${path}.${k}`));
  return [];
}
