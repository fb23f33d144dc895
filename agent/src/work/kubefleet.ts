/**
 * KubeFleet's work applier concepts (kubefleet-dev/kubefleet `pkg/controllers/workapplier`,
 * `apis/placement/v1beta1`), as the agent applies a ManifestWork that a KubeFleet placement
 * rendered. Pure: no I/O. The contract with the hub (docs/kubefleet.md "applyStrategy and
 * deleteStrategy in a work"): the work carries the annotation {@link APPLY_STRATEGY_ANNOTATION}
 * (the placement's `applyStrategy` as JSON, KubeFleet's defaults filled in) and
 * {@link UNAVAILABLE_PERIOD_ANNOTATION}; a work without the first is an ordinary OCM work.
 *
 * Here: the ApplyStrategy's shape and defaults, the annotations KubeFleet sets on applied objects
 * (`kubernetes-fleet.io/spec-hash`, `kubernetes-fleet.io/last-applied-configuration`), the
 * fields left out of a comparison (`discardFieldsIrrelevantInComparisonFrom`), the drift/diff
 * details (`preparePatchDetails`: a JSON diff hub → member, values printed as Go's `fmt.Sprint`
 * prints them) and the three-way JSON merge patch of a client-side apply
 * (`jsonmergepatch.CreateThreeWayJSONMergePatch`).
 */
import { createHash } from "node:crypto";
import { cloneJson, isObj, type Obj } from "./types.ts";

export {
  APPLY_STRATEGY_ANNOTATION,
  DEFAULT_APPLY_STRATEGY,
  DEFAULT_UNAVAILABLE_PERIOD_SECONDS,
  UNAVAILABLE_PERIOD_ANNOTATION,
  applyStrategyOf,
  unavailablePeriodOf,
  type ApplyStrategy,
} from "./kubefleet-strategy.ts";

/** KubeFleet's `ManifestHashAnnotation`: the hash of the manifest last applied, on the applied object. */
export const MANIFEST_HASH_ANNOTATION = "kubernetes-fleet.io/spec-hash";
/** KubeFleet's `LastAppliedConfigAnnotation`: the manifest last applied (client-side apply), on the applied object. */
export const LAST_APPLIED_ANNOTATION = "kubernetes-fleet.io/last-applied-configuration";
/** kubectl's last-applied annotation (`corev1.LastAppliedConfigAnnotation`), stripped from manifests as KubeFleet does. */
export const KUBECTL_LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";
/** At most this many drift or diff details are reported per object (KubeFleet's `patchDetailPerObjLimit`). */
export const PATCH_DETAIL_LIMIT = 100;
/** Total size limit of an object's annotations (apimachinery `TotalAnnotationSizeLimitB`, 256 KiB). */
export const ANNOTATIONS_SIZE_LIMIT = 256 * 1024;

/** Whether a label or annotation key is reserved to Kubernetes or Fleet (left out of comparisons, as KubeFleet). */
function reservedKey(k: string): boolean {
  return k.includes("kubernetes.io/") || k.includes("k8s.io/") || k.includes("kubernetes-fleet.io/");
}

function without(o: Obj, path: string[]): void {
  let cur: unknown = o;
  for (const p of path.slice(0, -1)) {
    if (!isObj(cur)) return;
    cur = cur[p];
  }
  if (isObj(cur)) delete cur[path[path.length - 1] ?? ""];
}

/**
 * A copy of `obj` without what KubeFleet leaves out of a comparison
 * (`discardFieldsIrrelevantInComparisonFrom`): name, namespace, generateName, labels and
 * annotations of the Kubernetes and Fleet domains, finalizers, managedFields, ownerReferences,
 * deletion timestamp and grace period, generation, resourceVersion, selfLink, uid, status and
 * every creationTimestamp (the object's and its pod templates').
 */
export function discardIrrelevantFields(obj: Obj): Obj {
  const c = cloneJson(obj);
  const meta: Obj = isObj(c.metadata) ? c.metadata : {};
  for (const k of [
    "name",
    "namespace",
    "generateName",
    "finalizers",
    "managedFields",
    "ownerReferences",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
    "uid",
    "creationTimestamp",
  ])
    delete meta[k];
  // As KubeFleet's unstructured setters leave them: labels and annotations always present (maybe
  // empty), so a label only one side has is reported by its own path.
  for (const k of ["labels", "annotations"]) {
    const m = meta[k];
    meta[k] = isObj(m) ? Object.fromEntries(Object.entries(m).filter(([key]) => !reservedKey(key))) : {};
  }
  c.metadata = meta;
  delete c.status;
  without(c, ["spec", "template", "metadata", "creationTimestamp"]);
  without(c, ["spec", "jobTemplate", "spec", "template", "metadata", "creationTimestamp"]);
  return c;
}

/** JSON with object keys sorted (as Go's encoding/json writes maps), the input of {@link hashOf}. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

/** SHA-256 hex of the canonical JSON of `v` (KubeFleet's `resource.HashOf`). */
export function hashOf(v: unknown): string {
  return createHash("sha256").update(canonicalJson(v)).digest("hex");
}

/** The {@link MANIFEST_HASH_ANNOTATION} value of a manifest: the hash of its comparable fields. */
export function manifestHash(manifest: Obj): string {
  return hashOf(discardIrrelevantFields(manifest));
}

/**
 * A manifest as KubeFleet writes it (`sanitizeManifestObject` + `setManifestHashAnnotation` +
 * `setFleetLastAppliedAnnotation`): its own last-applied, hash and deployment-revision
 * annotations, ownerReferences, managedFields, server-owned metadata and status removed; the
 * spec-hash annotation set; with `lastApplied`, the last-applied annotation set to the JSON of
 * the result (left empty when it would push the annotations over 256 KiB: the caller then falls
 * back to server-side apply, as KubeFleet does). `hash` overrides the hash (the agent hashes the
 * manifest without the work's trace labels, which it adds to what it writes).
 *
 * @returns the object to write and whether the last-applied annotation is set.
 */
export function prepareManifest(manifest: Obj, lastApplied: boolean, hash?: string): { object: Obj; lastAppliedSet: boolean } {
  const o = cloneJson(manifest);
  const meta: Obj = isObj(o.metadata) ? o.metadata : {};
  const annotations: Record<string, string> = isObj(meta.annotations) ? (meta.annotations as Record<string, string>) : {};
  for (const k of [MANIFEST_HASH_ANNOTATION, LAST_APPLIED_ANNOTATION, KUBECTL_LAST_APPLIED_ANNOTATION, "deployment.kubernetes.io/revision"])
    delete annotations[k];
  for (const k of [
    "ownerReferences",
    "managedFields",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
    "uid",
  ])
    delete meta[k];
  delete o.status;
  meta.annotations = annotations;
  o.metadata = meta;
  annotations[MANIFEST_HASH_ANNOTATION] = hash ?? manifestHash(o);
  if (!lastApplied) return { object: o, lastAppliedSet: false };
  const text = JSON.stringify(o);
  const size = Object.entries(annotations).reduce((n, [k, v]) => n + k.length + v.length, 0) + LAST_APPLIED_ANNOTATION.length + text.length;
  if (size > ANNOTATIONS_SIZE_LIMIT) {
    annotations[LAST_APPLIED_ANNOTATION] = "";
    return { object: o, lastAppliedSet: false };
  }
  annotations[LAST_APPLIED_ANNOTATION] = text;
  return { object: o, lastAppliedSet: true };
}

/**
 * The three-way JSON merge patch kubectl's client-side apply sends
 * (apimachinery `jsonmergepatch.CreateThreeWayJSONMergePatch`): the fields `modified` changes or
 * adds relative to `current`, plus `null` for the fields `original` (the last applied
 * configuration) had and `modified` no longer has. Maps merge key by key; lists and scalars are
 * replaced whole (a JSON merge patch cannot address list elements), except that a list the hub
 * did not change since the last apply is left alone while the live one still has every field of
 * each element. Returns `{}` when nothing changes.
 *
 * @example threeWayMergePatch({a: 1, b: 1}, {a: 2}, {a: 1, b: 1, c: 3}) // {a: 2, b: null}
 */
export function threeWayMergePatch(original: unknown, modified: unknown, current: unknown): Obj {
  const patch: Obj = {};
  const o: Obj = isObj(original) ? original : {};
  const m: Obj = isObj(modified) ? modified : {};
  const c: Obj = isObj(current) ? current : {};
  for (const [k, mv] of Object.entries(m)) {
    if (mv === undefined) continue;
    const cv = c[k];
    if (isObj(mv) && isObj(cv)) {
      const sub = threeWayMergePatch(o[k], mv, cv);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (Array.isArray(mv) && canonicalJson(o[k]) === canonicalJson(mv) && covers(mv, cv)) {
      // A list the hub did not change since the last apply, whose elements the live object still
      // has (the server's defaults added to them): nothing to send, as a strategic merge patch
      // of an unchanged list sends nothing.
    } else if (canonicalJson(mv) !== canonicalJson(cv)) {
      patch[k] = cloneJson(mv);
    }
  }
  for (const k of Object.keys(o)) if (o[k] !== undefined && !(k in m) && k in c) patch[k] = null;
  return patch;
}

/** Whether `live` has every field of `desired` with the same value (lists: same length, element by element). */
function covers(desired: unknown, live: unknown): boolean {
  if (Array.isArray(desired)) return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => covers(d, live[i]));
  if (isObj(desired)) return isObj(live) && Object.entries(desired).every(([k, v]) => v === undefined || covers(v, live[k]));
  return canonicalJson(desired) === canonicalJson(live);
}

/** One drifted or differing field (KubeFleet's `PatchDetail`): a JSON pointer and the values on each side. */
export interface PatchDetail {
  /** JSON pointer (RFC 6901) of the field, e.g. `/spec/replicas`. */
  path: string;
  /** The value on the member cluster (absent when the member lacks the field). */
  valueInMember?: string;
  /** The value in the hub's manifest (absent when the manifest lacks the field). */
  valueInHub?: string;
}

/**
 * `v` as Go's `fmt.Sprint` prints a decoded JSON value: strings bare, numbers as float64 `%v`,
 * `<nil>` for null, `[a b]` for lists, `map[k:v]` for objects (keys sorted).
 */
export function goSprint(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "string") return v;
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) >= 1e21 ? v.toExponential().replace(/e\+?/, "e+") : String(v);
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[${v.map(goSprint).join(" ")}]`;
  if (isObj(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goSprint(v[k])}`)
      .join(" ")}]`;
  return String(v);
}

function pointerToken(k: string): string {
  return k.replace(/~/g, "~0").replace(/\//g, "~1");
}

function diffInto(hub: unknown, member: unknown, path: string, out: PatchDetail[]): void {
  if (isObj(hub) && isObj(member)) {
    const keys = [...new Set([...Object.keys(hub), ...Object.keys(member)])].sort();
    for (const k of keys) {
      const p = `${path}/${pointerToken(k)}`;
      const inHub = hub[k] !== undefined;
      const inMember = member[k] !== undefined;
      if (inHub && !inMember) out.push({ path: p, valueInHub: goSprint(hub[k]) });
      else if (!inHub && inMember) out.push({ path: p, valueInMember: goSprint(member[k]) });
      else if (inHub && inMember) diffInto(hub[k], member[k], p, out);
    }
    return;
  }
  if (Array.isArray(hub) && Array.isArray(member)) {
    const n = Math.min(hub.length, member.length);
    for (let i = 0; i < n; i++) diffInto(hub[i], member[i], `${path}/${i}`, out);
    for (let i = n; i < member.length; i++) out.push({ path: `${path}/${i}`, valueInMember: goSprint(member[i]) });
    for (let i = n; i < hub.length; i++) out.push({ path: `${path}/${i}`, valueInHub: goSprint(hub[i]) });
    return;
  }
  if (canonicalJson(hub) !== canonicalJson(member)) out.push({ path: path || "/", valueInMember: goSprint(member), valueInHub: goSprint(hub) });
}

/**
 * The drifts or differences between the hub's side and the member's (KubeFleet
 * `preparePatchDetails`): both sides without the fields of {@link discardIrrelevantFields}, then
 * a JSON diff from `hub` to `member`, one detail per differing leaf (a field only the member has:
 * `valueInMember`; only the hub: `valueInHub`; both: both), keys in sorted order, at most
 * {@link PATCH_DETAIL_LIMIT}. Secret `data`/`stringData` values are redacted.
 *
 * @param hub the manifest (FullComparison), or the manifest applied in dry-run to the live object (PartialComparison).
 * @param member the live object.
 */
export function patchDetails(hub: Obj, member: Obj): PatchDetail[] {
  const out: PatchDetail[] = [];
  diffInto(discardIrrelevantFields(hub), discardIrrelevantFields(member), "", out);
  const details = out.slice(0, PATCH_DETAIL_LIMIT);
  if (hub.apiVersion === "v1" && hub.kind === "Secret") {
    for (const d of details) {
      if (!d.path.startsWith("/data") && !d.path.startsWith("/stringData")) continue;
      if (d.valueInHub) d.valueInHub = "(redacted for security reasons)";
      if (d.valueInMember) d.valueInMember = "(redacted for security reasons)";
    }
  }
  return details;
}
