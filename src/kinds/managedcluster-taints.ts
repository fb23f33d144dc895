/**
 * Taint arguments of `flotilla taint` and the dashboard's taint editor, and the edits they make
 * to a ManagedCluster's `spec.taints` (pure, no imports: the CLI and the dashboard bundle it).
 * New or changed taints never carry `timeAdded` (the hub stamps it and refuses a client-set one,
 * ./managedcluster.ts `stampTaints`); untouched taints are kept exactly as they are.
 */

/** A ManagedCluster taint as a client reads and writes it; `timeAdded` is set by the hub only. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string | null;
}

/** The taint effects of OCM (`api:cluster/v1` `TaintEffect`). */
export const TAINT_EFFECTS = ["NoSelect", "PreferNoSelect", "NoSelectIfNew"] as const;

/** A taint to add: key, optional value, effect. */
export interface TaintSpec {
  key: string;
  value?: string;
  effect: string;
}

/** A taint to remove: key, and effect when only that one should go. */
export interface TaintSelector {
  key: string;
  effect?: string;
}

function checkEffect(effect: string, text: string): void {
  if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
    throw new Error(`"${text}": the effect must be one of ${TAINT_EFFECTS.join(", ")}`);
  }
}

/**
 * Parses `KEY[=VALUE]:EFFECT`, e.g. `gpu=true:NoSelect`.
 *
 * @throws Error with a usage message when the text has no key or no valid effect.
 */
export function parseTaintSpec(text: string): TaintSpec {
  const colon = text.lastIndexOf(":");
  if (colon < 0) throw new Error(`"${text}" is not KEY[=VALUE]:EFFECT (effect: ${TAINT_EFFECTS.join(", ")})`);
  const effect = text.slice(colon + 1);
  checkEffect(effect, text);
  const kv = text.slice(0, colon);
  const eq = kv.indexOf("=");
  const key = eq < 0 ? kv : kv.slice(0, eq);
  if (!key) throw new Error(`"${text}" has no key`);
  return eq < 0 ? { key, effect } : { key, value: kv.slice(eq + 1), effect };
}

/**
 * Parses `KEY[:EFFECT]`, e.g. `gpu` or `gpu:NoSelect`.
 *
 * @throws Error with a usage message for an empty key or an unknown effect.
 */
export function parseTaintSelector(text: string): TaintSelector {
  const colon = text.lastIndexOf(":");
  const key = colon < 0 ? text : text.slice(0, colon);
  if (!key || key.includes("=")) throw new Error(`"${text}" is not KEY[:EFFECT]`);
  if (colon < 0) return { key };
  const effect = text.slice(colon + 1);
  checkEffect(effect, text);
  return { key, effect };
}

/** Renders a taint as `key[=value]:effect`. */
export function taintText(t: TaintSpec | Taint): string {
  return `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;
}

/** The result of an edit: the new list and what the edit did, as `key[=value]:effect` texts. */
export interface TaintEdit {
  taints: Taint[];
  /** Taints added or whose value changed. */
  changed: string[];
  /** Taints that were already there as asked (adds) or not there at all (removes). */
  unchanged: string[];
}

/**
 * Adds taints; a taint with the same key and effect but another value is replaced (without
 * `timeAdded`, so the hub stamps a new one).
 */
export function addTaints(existing: readonly Taint[], adds: readonly TaintSpec[]): TaintEdit {
  const taints = existing.map((t) => ({ ...t }));
  const out: TaintEdit = { taints, changed: [], unchanged: [] };
  for (const a of adds) {
    const i = taints.findIndex((t) => t.key === a.key && t.effect === a.effect);
    const fresh: Taint = a.value ? { key: a.key, value: a.value, effect: a.effect } : { key: a.key, effect: a.effect };
    if (i < 0) taints.push(fresh);
    else if ((taints[i]!.value ?? "") === (a.value ?? "")) {
      out.unchanged.push(taintText(a));
      continue;
    } else taints[i] = fresh;
    out.changed.push(taintText(a));
  }
  return out;
}

/** Removes the taints matching each selector (by key, and by effect when given). */
export function removeTaints(existing: readonly Taint[], removes: readonly TaintSelector[]): TaintEdit {
  let taints = existing.map((t) => ({ ...t }));
  const out: TaintEdit = { taints, changed: [], unchanged: [] };
  for (const r of removes) {
    const matches = (t: Taint): boolean => t.key === r.key && (r.effect === undefined || t.effect === r.effect);
    const gone = taints.filter(matches);
    if (gone.length === 0) out.unchanged.push(r.effect ? `${r.key}:${r.effect}` : r.key);
    out.changed.push(...gone.map(taintText));
    taints = taints.filter((t) => !matches(t));
  }
  out.taints = taints;
  return out;
}
