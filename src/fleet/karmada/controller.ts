/**
 * Karmada's PropagationPolicy and ClusterPropagationPolicy (docs/karmada.md), compiled onto the
 * engine of KubeFleet's placements (src/fleet/): one run per policy, serialised in its Durable
 * Object (the replica set object class, named `karmada:<namespace>/<name>`, as a placement's is
 * `placement:<namespace>/<name>`), that
 *
 * 1. claims resource templates as Karmada's resource detector does (src/fleet/karmada/select.ts:
 *    priority, preemption, its claim labels and annotations written on the template), over
 *    KubeFleet's resource selection rules (src/fleet/select.ts: what is never propagated, what is
 *    stripped, the apply order), the namespace of a namespaced template going with it (Karmada's
 *    namespace sync controller creates it on the member clusters);
 * 2. schedules the policy's placement onto the ManagedClusters (src/fleet/karmada/schedule.ts);
 * 3. renders the claimed templates into works per cluster with KubeFleet's renderer
 *    (src/fleet/render.ts: `conflictResolution: Abort` is the applier's `whenToTakeOver: Never`,
 *    `preserveResourcesOnDeletion` its `deleteStrategy: Abandon`), delivered over the channel as
 *    every ManifestWork is; all clusters at once (Karmada has no rolling update);
 * 4. writes one ResourceBinding (ClusterResourceBinding for a cluster-scoped template) per
 *    claimed template, `work.karmada.io/v1alpha2`, its status as Karmada's binding status
 *    controller aggregates it from the works the agents report: `aggregatedStatus` per cluster
 *    (`applied`, `appliedMessage`, `health`, `status` from the status feedback) and the
 *    conditions `Scheduled` and `FullyApplied`.
 *
 * Deleting the policy lets go of what it claimed as Karmada's detector does
 * (`handlePolicyDeletion`, pkg/detector/detector.go): the claim labels and annotations are
 * removed from each binding, then from its template (another policy may then claim it), and the
 * finalizer goes; the bindings and works stay, so the objects stay on the member clusters. A
 * released template's binding and its place in the works stay until another policy claims the
 * template (that policy's works then carry it) or the template is deleted (the garbage collector
 * deletes the binding, which the template owns; the works drop it, so the agents
 * remove it unless the works say `preserveResourcesOnDeletion`); a work left with nothing goes.
 * A released binding names the works still carrying its template
 * ({@link RELEASED_WORKS_ANNOTATION}), so that a change of it runs the deleted policy's object,
 * which keeps those works ({@link maintainReleased}).
 */
import { canonicalJson as canonical } from "../../k8s/canonical-json.ts";
import { deepEqual } from "../../k8s/fieldmanager.ts";
import type { KindDefinition } from "../../k8s/kind.ts";
import { matchesLabelSelector } from "../../k8s/labels.ts";
import { setCondition, type Condition, type KubeObject } from "../../k8s/meta.ts";
import { racing } from "../../k8s/racing.ts";
import { ApiError } from "../../k8s/errors.ts";
import { findKindByKind } from "../../kinds/index.ts";
import { syncCustomKinds } from "../../kinds/sync.ts";
import {
  ClusterPropagationPolicyKind,
  CPP_FINALIZER,
  CPP_NAME_ANNOTATION,
  CPP_PERMANENT_ID_LABEL,
  KARMADA_POLICY_GROUP,
  KarmadaClusterResourceBindingKind,
  KarmadaResourceBindingKind,
  PP_FINALIZER,
  PP_NAME_ANNOTATION,
  PP_NAMESPACE_ANNOTATION,
  PP_PERMANENT_ID_LABEL,
  PropagationPolicyKind,
  KARMADA_WORK_GROUP,
  type PropagationSpec,
} from "../../kinds/karmada.ts";
import type { RolloutStrategy } from "../../kinds/fleet-validation.ts";
import { ClusterOverridePolicyKind, OverridePolicyKind, type OverrideSpec } from "../../kinds/karmada-override.ts";
import { compileKarmadaOverrides, type KarmadaOverrides } from "../../overrides/karmada.ts";
import { ManagedClusterKind } from "../../kinds/managedcluster.ts";
import { ManifestWorkKind } from "../../kinds/manifestwork.ts";
import { NamespaceKind } from "../../kinds/namespace.ts";
import type { Env } from "../../env.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { AfterCommitHook, Change, CounterAt } from "../../store/hooks.ts";
import { PLACEMENT_CHANGE_COUNTER } from "../../kinds/fleet.ts";
import type { ManyWrite } from "../../store/types.ts";
import { compareSelected, isKindDisabled, shouldPropagate, stripForDispatch, type Selected } from "../select.ts";
import { workName, type Manifest, type RenderedWork } from "../render.ts";
import { APPLIED_OVERRIDE_ANNOTATIONS, karmadaClusterRenderer } from "./overrides.ts";
import { karmadaClusterOf, scheduleKarmada } from "./schedule.ts";
import {
  apiVersionOf,
  CLAIM_ANNOTATIONS,
  CLAIM_LABELS,
  claimerOf,
  claimMetadata,
  claimOf,
  selectorPriority,
  type PolicyRef,
  type PolicyView,
} from "./select.ts";
import { ownChangeRun } from "../own-change.ts";
import { cachedPlacementLists, inNamespace, placementLists } from "../placement-lists.ts";
import { heldFromBirth } from "../../work/deletion.ts";

export type { PolicyRef } from "./select.ts";

/**
 * The override policies that may concern `manifests`: every ClusterOverridePolicy and the
 * OverridePolicies of their namespaces, compiled.
 * @throws errors of D1
 */
export async function karmadaOverridesFor(env: Env, manifests: readonly Manifest[]): Promise<KarmadaOverrides> {
  const namespaces = [...new Set(manifests.map((m) => m.object.metadata.namespace).filter((n): n is string => !!n))].sort();
  const cops = (await admittedStoreOf(env, ClusterOverridePolicyKind).list()).items;
  const ops: KubeObject[] = [];
  for (const ns of namespaces) ops.push(...(await admittedStoreOf(env, OverridePolicyKind).list(ns)).items);
  return compileKarmadaOverrides([
    ...cops.map((o) => ({ kind: "ClusterOverridePolicy" as const, namespace: "", name: o.metadata.name, spec: (o.spec ?? {}) as OverrideSpec })),
    ...ops.map((o) => ({
      kind: "OverridePolicy" as const,
      namespace: o.metadata.namespace ?? "",
      name: o.metadata.name,
      spec: (o.spec ?? {}) as OverrideSpec,
    })),
  ]);
}

/** The outcome of a run: `rerun` when a write lost a race (run again at once), `gone` when nothing of the policy remains. */
export interface KarmadaRunOutcome {
  rerun?: boolean;
  gone?: boolean;
}

const policyKindOf = (ref: PolicyRef) => (ref.namespace ? PropagationPolicyKind : ClusterPropagationPolicyKind);
const idLabelOf = (ref: PolicyRef) => (ref.namespace ? PP_PERMANENT_ID_LABEL : CPP_PERMANENT_ID_LABEL);

/** The base of a policy's work names: `pp.<namespace>.<name>` or `cpp.<name>` (works `<base>-work`, `<base>-1`, ...). */
export function workBase(ref: PolicyRef): string {
  return ref.namespace ? `pp.${ref.namespace}.${ref.name}` : `cpp.${ref.name}`;
}

/** The policy whose {@link workBase} `base` is, or null (a namespace holds no '.'). */
export function refOfWorkBase(base: string): PolicyRef | null {
  if (base.startsWith("cpp.") && base.length > 4) return { namespace: "", name: base.slice(4) };
  const rest = base.startsWith("pp.") ? base.slice(3) : "";
  const dot = rest.indexOf(".");
  return dot > 0 && dot < rest.length - 1 ? { namespace: rest.slice(0, dot), name: rest.slice(dot + 1) } : null;
}

/**
 * Flotilla's annotation on a binding whose policy was deleted (Karmada keeps the binding, without
 * its claim): the {@link workBase} of the deleted policy's works, which still carry its template.
 * Removed when another policy claims the template.
 */
export const RELEASED_WORKS_ANNOTATION = "flotilla.dev/karmada-released-works";

/** Karmada's `GenerateBindingName`: `<name>-<kind>`, lower case. */
export function karmadaBindingName(kind: string, name: string): string {
  return `${name}-${kind}`.toLowerCase().replace(/:/g, ".");
}

/** Whether `o` (a work or binding) carries `ref`'s claim annotations. */
function isOf(o: KubeObject, ref: PolicyRef): boolean {
  const a = o.metadata.annotations ?? {};
  return ref.namespace ? a[PP_NAMESPACE_ANNOTATION] === ref.namespace && a[PP_NAME_ANNOTATION] === ref.name : a[CPP_NAME_ANNOTATION] === ref.name;
}

/** `record` without `keys`. */
function without(record: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  const out = { ...(record ?? {}) };
  for (const k of keys) delete out[k];
  return out;
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** The works of a policy, by cluster (one query per chunk name). */
async function worksOf(env: Env, ref: PolicyRef): Promise<Map<string, KubeObject[]>> {
  const base = workBase(ref);
  const out = new Map<string, KubeObject[]>();
  for (let i = 0; ; i++) {
    const found = (await admittedStoreOf(env, ManifestWorkKind).listNamed(workName(base, i))).filter((w) => isOf(w, ref));
    if (found.length === 0) break;
    for (const w of found) out.set(w.metadata.namespace!, [...(out.get(w.metadata.namespace!) ?? []), w]);
  }
  return out;
}

/** The bindings of a policy: a PropagationPolicy's ResourceBindings in its namespace; a ClusterPropagationPolicy's in every namespace and its ClusterResourceBindings. */
async function bindingsOf(env: Env, ref: PolicyRef): Promise<{ def: KindDefinition; binding: KubeObject }[]> {
  const out: { def: KindDefinition; binding: KubeObject }[] = [];
  for (const b of (await admittedStoreOf(env, KarmadaResourceBindingKind).list(ref.namespace || undefined)).items)
    if (isOf(b, ref)) out.push({ def: KarmadaResourceBindingKind, binding: b });
  if (!ref.namespace)
    for (const b of (await admittedStoreOf(env, KarmadaClusterResourceBindingKind).list()).items)
      if (isOf(b, ref)) out.push({ def: KarmadaClusterResourceBindingKind, binding: b });
  return out;
}

/** The served kind an `apiVersion` and `kind` name, if it may be propagated. */
function propagatableKind(apiVersion: string, kind: string): KindDefinition | undefined {
  const [g, v] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  const def = findKindByKind(g ?? "", v ?? "", kind);
  if (!def || def.storage !== "d1" || def.conversion || isKindDisabled(def)) return undefined;
  if (def.group === KARMADA_POLICY_GROUP || def.group === KARMADA_WORK_GROUP) return undefined;
  return def;
}

/** Namespaces whose objects Karmada never propagates (kube-*, its own), and the member clusters' namespaces on this hub. */
function namespaceSkipped(name: string, ns: KubeObject | null): boolean {
  if (name.startsWith("kube-") || name === "karmada-system" || name === "karmada-cluster" || name.startsWith("karmada-es-")) return true;
  return ns?.metadata.labels?.["open-cluster-management.io/cluster-name"] !== undefined;
}

/** Sets `next` into `current` conditions, keeping transition times. */
function mergeConditions(current: Condition[] | undefined, next: Omit<Condition, "lastTransitionTime">[], now: string): Condition[] {
  const out = structuredClone(current ?? []).filter((c) => next.some((n) => n.type === c.type));
  for (const n of next) setCondition(out, n, now);
  return next.map((n) => out.find((c) => c.type === n.type)!);
}

/** The object with `ref`'s claim replaced by `claimer`'s (null: no claim), or null when it already says so. */
function withClaim(obj: KubeObject, claimer: PolicyView | null): KubeObject | null {
  const want = claimMetadata(claimer);
  const labels = { ...(obj.metadata.labels ?? {}) };
  const annotations = { ...(obj.metadata.annotations ?? {}) };
  for (const k of CLAIM_LABELS) delete labels[k];
  for (const k of CLAIM_ANNOTATIONS) delete annotations[k];
  Object.assign(labels, want.labels);
  Object.assign(annotations, want.annotations);
  if (deepEqual(labels, obj.metadata.labels ?? {}) && deepEqual(annotations, obj.metadata.annotations ?? {})) return null;
  const metadata = { ...obj.metadata, labels, annotations };
  if (Object.keys(annotations).length === 0) delete (metadata as { annotations?: unknown }).annotations;
  if (Object.keys(labels).length === 0) delete (metadata as { labels?: unknown }).labels;
  return { ...obj, metadata };
}

/**
 * A controller write that may also be refused (a namespace terminating: 403; an object that no
 * longer validates: 422): `"refused"` (logged) instead of thrown, so that one template cannot
 * stop a policy's run; a lost race is `"lost"`.
 */
async function tolerant(what: string, write: () => Promise<{ object: KubeObject | null }>): Promise<KubeObject | null | "lost" | "refused"> {
  try {
    return await racing(write);
  } catch (e) {
    if (e instanceof ApiError && e.code >= 400 && e.code < 500) {
      console.warn(`karmada: ${what} refused: ${e.message}`);
      return "refused";
    }
    throw e;
  }
}

/** Writes `claimer`'s claim on a template (nothing when it says so already); the template as stored, or `lost`. */
async function writeClaim(env: Env, def: KindDefinition, obj: KubeObject, claimer: PolicyView | null): Promise<KubeObject | "lost"> {
  const body = withClaim(obj, claimer);
  if (!body) return obj;
  const where = `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
  const r = await tolerant(`the claim on ${def.kind} ${where}`, () =>
    admittedStoreOf(env, def).write(obj.metadata.namespace ?? "", obj.metadata.name, { verb: "update", body }, { known: obj }),
  );
  if (r === "refused") return obj;
  return r === null ? "lost" : r;
}

/**
 * A policy deleted (being deleted, or gone): lets go of its claims as Karmada's
 * `handlePolicyDeletion` does (each binding's claim labels and annotations removed, the binding
 * marked with {@link RELEASED_WORKS_ANNOTATION}, then the template's claim removed), removes the
 * finalizer, and once the policy is gone keeps its works ({@link maintainReleased}).
 */
async function cleanUp(env: Env, ref: PolicyRef, policy: KubeObject | null): Promise<KarmadaRunOutcome> {
  let raced = false;
  for (const { def, binding } of await bindingsOf(env, ref)) {
    const ns = binding.metadata.namespace ?? "";
    const annotations = { ...without(binding.metadata.annotations, CLAIM_ANNOTATIONS), [RELEASED_WORKS_ANNOTATION]: workBase(ref) };
    const labels = without(binding.metadata.labels, CLAIM_LABELS);
    const metadata = { ...binding.metadata, labels, annotations };
    if (Object.keys(labels).length === 0) delete (metadata as { labels?: unknown }).labels;
    const r = await tolerant(`the release of ${def.kind} ${ns}/${binding.metadata.name}`, () =>
      admittedStoreOf(env, def).write(ns, binding.metadata.name, { verb: "update", body: { ...binding, metadata } }, { known: binding }),
    );
    if (r === "lost") raced = true;
    const res = (binding.spec as { resource?: { apiVersion: string; kind: string; namespace?: string; name: string } } | undefined)?.resource;
    const tdef = res ? propagatableKind(res.apiVersion, res.kind) : undefined;
    const template = tdef && res ? await admittedStoreOf(env, tdef).get(res.namespace ?? "", res.name) : null;
    const claim = claimOf(template);
    if (tdef && template && claim && claim.namespace === ref.namespace && claim.name === ref.name) {
      if ((await writeClaim(env, tdef, template, null)) === "lost") raced = true;
    }
  }
  if (policy) {
    const fin = ref.namespace ? PP_FINALIZER : CPP_FINALIZER;
    const finalizers = (policy.metadata.finalizers ?? []).filter((f) => f !== fin);
    if (!raced && finalizers.length !== (policy.metadata.finalizers ?? []).length) {
      const r = await racing(() =>
        admittedStoreOf(env, policyKindOf(ref)).write(
          ref.namespace,
          ref.name,
          { verb: "update", body: { ...policy, metadata: { ...policy.metadata, finalizers } } },
          { known: policy },
        ),
      );
      if (r === "lost") raced = true;
    }
    return raced ? { rerun: true } : {};
  }
  return raced ? { rerun: true } : maintainReleased(env, ref);
}

/** `apiVersion/kind/namespace/name` of a template, a binding's `spec.resource` or a work's manifest. */
const objectKey = (apiVersion: string, kind: string, namespace: string | undefined, name: string) => `${apiVersion}/${kind}/${namespace ?? ""}/${name}`;

/**
 * The works of a deleted policy, as Karmada keeps a released template's works: each keeps the
 * manifests of the templates it released that still exist and no policy claims (their
 * bindings still marked {@link RELEASED_WORKS_ANNOTATION} with its base), and the namespaces
 * those live in; the rest are dropped (the agents remove them from the members, as their
 * `deleteOption` says) and a work left with nothing is deleted. The manifests stay as they were
 * rendered (no policy propagates a released template's changes). `gone` once no work is left.
 */
async function maintainReleased(env: Env, ref: PolicyRef): Promise<KarmadaRunOutcome> {
  const works = [...(await worksOf(env, ref)).values()].flat().filter((w) => !w.metadata.deletionTimestamp);
  if (works.length === 0) return { gone: true };
  const base = workBase(ref);
  const released: KubeObject[] = [];
  for (const b of (await admittedStoreOf(env, KarmadaResourceBindingKind).list(ref.namespace || undefined)).items) released.push(b);
  if (!ref.namespace) for (const b of (await admittedStoreOf(env, KarmadaClusterResourceBindingKind).list()).items) released.push(b);
  const kept = new Set<string>();
  const keptNamespaces = new Set<string>();
  for (const b of released) {
    if (b.metadata.annotations?.[RELEASED_WORKS_ANNOTATION] !== base || b.metadata.deletionTimestamp) continue;
    const res = (b.spec as { resource?: { apiVersion: string; kind: string; namespace?: string; name: string } } | undefined)?.resource;
    const tdef = res ? propagatableKind(res.apiVersion, res.kind) : undefined;
    const template = tdef && res ? await admittedStoreOf(env, tdef).get(res.namespace ?? "", res.name) : null;
    if (!res || !template || template.metadata.deletionTimestamp || claimOf(template) !== null) continue;
    kept.add(objectKey(res.apiVersion, res.kind, res.namespace, res.name));
    if (res.namespace) keptNamespaces.add(res.namespace);
  }
  const writes: ManyWrite[] = [];
  for (const w of works) {
    const manifests = ((w.spec as { workload?: { manifests?: KubeObject[] } } | undefined)?.workload?.manifests ?? []) as KubeObject[];
    const keep = manifests.filter(
      (m) =>
        kept.has(objectKey(m.apiVersion, m.kind, m.metadata?.namespace, m.metadata?.name)) ||
        (m.apiVersion === "v1" && m.kind === "Namespace" && keptNamespaces.has(m.metadata?.name)),
    );
    if (keep.length === manifests.length) continue;
    const where = { namespace: w.metadata.namespace!, name: w.metadata.name, known: w };
    if (keep.length === 0) writes.push({ ...where, req: { verb: "delete", preconditions: { uid: w.metadata.uid } } });
    else {
      const spec = w.spec as { workload: { manifests: KubeObject[] } };
      writes.push({ ...where, req: { verb: "update", body: { ...w, spec: { ...spec, workload: { ...spec.workload, manifests: keep } } } } });
    }
  }
  const results = await admittedStoreOf(env, ManifestWorkKind).writeMany(writes);
  return results.includes("lost") ? { rerun: true } : {};
}

/** The live policies a claim is decided among: every PropagationPolicy (of `namespace`, when given) and every ClusterPropagationPolicy. */
async function livePolicies(env: Env, namespace: string | undefined): Promise<PolicyView[]> {
  const pps = (await admittedStoreOf(env, PropagationPolicyKind).list(namespace)).items;
  const cpps = (await admittedStoreOf(env, ClusterPropagationPolicyKind).list()).items;
  return [...pps, ...cpps]
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => {
      const ref = { namespace: p.metadata.namespace ?? "", name: p.metadata.name };
      return { ref, id: p.metadata.labels?.[idLabelOf(ref)] ?? "", spec: (p.spec ?? {}) as PropagationSpec };
    });
}

interface ManifestStatus {
  resourceMeta?: { group?: string; version?: string; kind?: string; name?: string; namespace?: string };
  conditions?: { type: string; status: string; message?: string }[];
  statusFeedback?: { values?: { name: string; fieldValue?: Record<string, unknown> }[] };
}

/** One cluster's `aggregatedStatus[]` item for `obj`, from the cluster's works (Karmada's `assembleWorkStatus`). */
function aggregatedItem(cluster: string, works: KubeObject[], def: KindDefinition, obj: KubeObject): Record<string, unknown> {
  const forObj = (m: ManifestStatus) =>
    (m.resourceMeta?.group ?? "") === def.group &&
    m.resourceMeta?.kind === def.kind &&
    m.resourceMeta?.name === obj.metadata.name &&
    (m.resourceMeta?.namespace ?? "") === (obj.metadata.namespace ?? "");
  for (const w of works) {
    const manifests = ((w.status as { resourceStatus?: { manifests?: ManifestStatus[] } } | undefined)?.resourceStatus?.manifests ?? []) as ManifestStatus[];
    const m = manifests.find(forObj);
    const inWork = ((w.spec as { workload?: { manifests?: KubeObject[] } } | undefined)?.workload?.manifests ?? []).some(
      (o) => o.kind === def.kind && o.metadata?.name === obj.metadata.name && (o.metadata?.namespace ?? "") === (obj.metadata.namespace ?? ""),
    );
    if (!m && !inWork) continue;
    const workApplied = ((w.status?.conditions ?? []) as { type: string; status: string; message?: string; observedGeneration?: number }[]).find(
      (c) => c.type === "Applied" && (c.observedGeneration === undefined || c.observedGeneration === (w.metadata.generation ?? 1)),
    );
    const applied = m?.conditions?.find((c) => c.type === "Applied") ?? workApplied;
    if (applied?.status !== "True") {
      return { clusterName: cluster, applied: false, ...(applied?.message ? { appliedMessage: applied.message } : {}), health: "Unknown" };
    }
    const available = m?.conditions?.find((c) => c.type === "Available")?.status;
    const values = m?.statusFeedback?.values ?? [];
    const status: Record<string, unknown> = {};
    for (const v of values) {
      const fv = v.fieldValue ?? {};
      const value = fv.integer ?? fv.string ?? fv.boolean ?? fv.jsonRaw;
      if (value !== undefined) status[v.name] = typeof value === "string" && fv.jsonRaw !== undefined ? safeJson(value) : value;
    }
    return {
      clusterName: cluster,
      ...(Object.keys(status).length > 0 ? { status } : {}),
      applied: true,
      health: available === "True" ? "Healthy" : available === "False" ? "Unhealthy" : "Unknown",
    };
  }
  return { clusterName: cluster, applied: false, health: "Unknown" };
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/**
 * Reconciles one policy at `nowMs` (epoch ms). Idempotent: every run reads the current state.
 * @throws errors of D1 or an unexpected write failure (the policy's object retries later); lost
 *   write races are reported as `rerun`
 */
export async function runKarmadaPolicy(env: Env, ref: PolicyRef, nowMs: number): Promise<KarmadaRunOutcome> {
  // A selector (or a binding) may name a CRD's custom resources: the isolate's custom kinds are brought up to date first.
  await syncCustomKinds(env);
  const pdef = policyKindOf(ref);
  const pstore = admittedStoreOf(env, pdef);
  let policy = await pstore.get(ref.namespace, ref.name);
  if (!policy || policy.metadata.deletionTimestamp) return cleanUp(env, ref, policy);
  const fin = ref.namespace ? PP_FINALIZER : CPP_FINALIZER;
  if (!(policy.metadata.finalizers ?? []).includes(fin)) {
    const body = { ...policy, metadata: { ...policy.metadata, finalizers: [...(policy.metadata.finalizers ?? []), fin] } };
    const r = await racing(() => pstore.write(ref.namespace, ref.name, { verb: "update", body }, { known: policy! }));
    if (r === "lost" || r === null) return { rerun: true };
    policy = r;
  }
  const spec = (policy.spec ?? {}) as PropagationSpec;
  const now = stamp(nowMs);
  let raced = false;

  // 1. The templates the policy's selectors match, and those its bindings name (to release them).
  const live = await livePolicies(env, ref.namespace || undefined);
  const isMe = (p: PolicyView | null) => p !== null && p.ref.namespace === ref.namespace && p.ref.name === ref.name;
  const me: PolicyView = live.find(isMe) ?? { ref, id: policy.metadata.labels?.[idLabelOf(ref)] ?? "", spec };
  if (!live.some(isMe)) live.push(me);
  const namespaces = new Map<string, Promise<KubeObject | null>>();
  const namespaceOf = (name: string) => {
    let p = namespaces.get(name);
    if (!p) namespaces.set(name, (p = admittedStoreOf(env, NamespaceKind).get("", name)));
    return p;
  };
  const candidates = new Map<string, { def: KindDefinition; obj: KubeObject }>();
  const keyOf = (def: KindDefinition, o: KubeObject) => `${def.group}/${def.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const serviceDef = findKindByKind("", "v1", "Service");
  for (const s of spec.resourceSelectors ?? []) {
    const def = propagatableKind(s.apiVersion, s.kind);
    if (!def) continue;
    const ns = def.namespaced ? ref.namespace || s.namespace || undefined : undefined;
    const objs = s.name
      ? [await admittedStoreOf(env, def).get(ns ?? "", s.name)].filter((o): o is KubeObject => o !== null)
      : (await admittedStoreOf(env, def).list(ns)).items;
    for (const obj of objs) {
      if (selectorPriority(def, obj, s) === 0) continue;
      const objNs = obj.metadata.namespace;
      if (objNs && namespaceSkipped(objNs, await namespaceOf(objNs))) continue;
      if (def.group === "" && def.kind === "Namespace" && namespaceSkipped(obj.metadata.name, obj)) continue;
      const exists = async () => (serviceDef ? (await admittedStoreOf(env, serviceDef).get(objNs ?? "", obj.metadata.name)) !== null : false);
      if (!(await shouldPropagate(def, obj, exists))) continue;
      candidates.set(keyOf(def, obj), { def, obj });
    }
  }
  const bindings = await bindingsOf(env, ref);
  for (const { binding } of bindings) {
    const res = (binding.spec as { resource?: { apiVersion: string; kind: string; namespace?: string; name: string } } | undefined)?.resource;
    const def = res ? propagatableKind(res.apiVersion, res.kind) : undefined;
    if (!def || !res) continue;
    const obj = await admittedStoreOf(env, def).get(res.namespace ?? "", res.name);
    if (obj && !candidates.has(keyOf(def, obj))) candidates.set(keyOf(def, obj), { def, obj });
  }

  // 2. Claims: who claims each template (written on it when it changes).
  const claimed: Selected[] = [];
  for (const { def, obj } of candidates.values()) {
    // An object being deleted is not claimed anew (its binding goes).
    if (obj.metadata.deletionTimestamp) continue;
    const claimer = claimerOf(def, obj, live);
    const r = await writeClaim(env, def, obj, claimer);
    if (r === "lost") {
      raced = true;
      continue;
    }
    if (isMe(claimer)) claimed.push({ def, object: r });
  }
  claimed.sort(compareSelected);

  // The namespaces of the claimed namespaced templates go with them (Karmada's namespace sync).
  const withNamespaces: Selected[] = [...claimed];
  const claimedNamespaces = new Set(claimed.filter((s) => s.def.group === "" && s.def.kind === "Namespace").map((s) => s.object.metadata.name));
  for (const ns of new Set(claimed.map((s) => s.object.metadata.namespace).filter((n): n is string => !!n && n !== "default"))) {
    if (claimedNamespaces.has(ns)) continue;
    const o = await namespaceOf(ns);
    if (o && !o.metadata.deletionTimestamp) withNamespaces.push({ def: NamespaceKind, object: o });
  }
  withNamespaces.sort(compareSelected);
  const manifests = withNamespaces.map((s) => ({ object: stripForDispatch(s.def, s.object), resource: s.def.plural }));

  // 3. Scheduling.
  const works = await worksOf(env, ref);
  const current = new Set([...works].filter(([, ws]) => ws.some((w) => !w.metadata.deletionTimestamp)).map(([c]) => c));
  const clusters = (await admittedStoreOf(env, ManagedClusterKind).list()).items.map(karmadaClusterOf);
  const placement = spec.placement ?? {};
  const sched = scheduleKarmada(placement, clusters, current);
  const leaving = new Set(clusters.filter((c) => c.leaving).map((c) => c.name));
  const known = new Set(clusters.map((c) => c.name));
  // A failed scheduling keeps the clusters the resources are on (Karmada does not patch the binding).
  const picked = new Set(sched.error ? [...current].filter((c) => known.has(c) && !leaving.has(c)) : sched.clusters);

  // 4. Works, every picked cluster at once.
  const strategy: RolloutStrategy = {
    applyStrategy: { whenToTakeOver: "Never" },
    ...(spec.preserveResourcesOnDeletion ? { deleteStrategy: { propagationPolicy: "Abandon" } } : {}),
  };
  const base = workBase(ref);
  // Each cluster's objects through Karmada's override policies (all or nothing per cluster).
  const renderFor = karmadaClusterRenderer(base, manifests, strategy, await karmadaOverridesFor(env, manifests));
  const byName = new Map(clusters.map((c) => [c.name, c]));
  const overrideErrors = new Map<string, string>();
  const claimAnnotations = claimMetadata(me).annotations;
  const idLabel = idLabelOf(ref);
  const writes: ManyWrite[] = [];
  for (const c of picked) {
    const ws = works.get(c) ?? [];
    const cluster = byName.get(c) ?? { name: c, labels: {}, zones: [], taints: [], leaving: false };
    const { works: rendered, error } = renderFor(cluster);
    if (error !== undefined) {
      // A failed override: the cluster keeps the works it has, and its bindings say why.
      overrideErrors.set(c, error);
      continue;
    }
    for (const r of rendered as RenderedWork[]) {
      const w = ws.find((x) => x.metadata.name === r.name);
      if (w?.metadata.deletionTimestamp) continue;
      const annotations = { ...without(w?.metadata.annotations, APPLIED_OVERRIDE_ANNOTATIONS), ...r.annotations, ...claimAnnotations };
      const labels = { ...(w?.metadata.labels ?? {}), [idLabel]: me.id };
      if (
        w &&
        canonical(w.spec ?? {}) === canonical(r.spec) &&
        deepEqual(w.metadata.annotations ?? {}, annotations) &&
        deepEqual(w.metadata.labels ?? {}, labels)
      )
        continue;
      const body = {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        // Born held for its agent, as OCM's agent would hold it at its first sight (src/work/deletion.ts).
        metadata: { ...(w?.metadata ?? {}), ...(w ? {} : { finalizers: heldFromBirth() }), name: r.name, namespace: c, labels, annotations },
        spec: structuredClone(r.spec),
      };
      writes.push({ namespace: c, name: r.name, req: w ? { verb: "update", body } : { verb: "create", body }, known: w ?? null });
    }
    for (const w of ws)
      if (!rendered.some((r) => r.name === w.metadata.name) && !w.metadata.deletionTimestamp)
        writes.push({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w });
  }
  for (const [c, ws] of works) {
    if (picked.has(c)) continue;
    for (const w of ws)
      if (!w.metadata.deletionTimestamp)
        writes.push({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w });
  }
  const results = await admittedStoreOf(env, ManifestWorkKind).writeMany(writes);
  results.forEach((r, i) => {
    const wr = writes[i]!;
    if (r === "lost") {
      raced = true;
      return;
    }
    const list = (works.get(wr.namespace) ?? []).filter((w) => w.metadata.name !== wr.name);
    if (r) list.push(r);
    works.set(wr.namespace, list);
  });

  // 5. Bindings: one per claimed template.
  const targetClusters = [...picked].sort();
  const wanted = new Set<string>();
  for (const { def, object: obj } of claimed) {
    const bdef = obj.metadata.namespace ? KarmadaResourceBindingKind : KarmadaClusterResourceBindingKind;
    const ns = obj.metadata.namespace ?? "";
    const name = karmadaBindingName(def.kind, obj.metadata.name);
    wanted.add(`${bdef.kind}/${ns}/${name}`);
    const replicas = (obj.spec as { replicas?: unknown } | undefined)?.replicas;
    const hasReplicas = typeof replicas === "number" && replicas > 0;
    const bspec = {
      resource: {
        apiVersion: apiVersionOf(def),
        kind: def.kind,
        ...(ns ? { namespace: ns } : {}),
        name: obj.metadata.name,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
      ...(hasReplicas ? { replicas } : {}),
      clusters: targetClusters.map((c) => ({ name: c, ...(hasReplicas ? { replicas } : {}) })),
      placement: structuredClone(placement),
      schedulerName: spec.schedulerName ?? "default-scheduler",
      conflictResolution: spec.conflictResolution ?? "Abort",
      ...(spec.preserveResourcesOnDeletion !== undefined ? { preserveResourcesOnDeletion: spec.preserveResourcesOnDeletion } : {}),
    };
    const old = bindings.find((b) => b.def === bdef && (b.binding.metadata.namespace ?? "") === ns && b.binding.metadata.name === name)?.binding;
    const store = admittedStoreOf(env, bdef);
    let stored: KubeObject | null | "lost" = old ?? null;
    if (!old || !deepEqual(old.spec ?? null, bspec) || !isOf(old, ref) || old.metadata.labels?.[idLabel] !== me.id) {
      const existing = old ?? (await store.get(ns, name));
      const body = {
        apiVersion: `${KARMADA_WORK_GROUP}/v1alpha2`,
        kind: bdef.kind,
        metadata: {
          ...(existing?.metadata ?? {}),
          name,
          ...(ns ? { namespace: ns } : {}),
          labels: { ...without(existing?.metadata.labels, CLAIM_LABELS), [idLabel]: me.id },
          annotations: { ...without(existing?.metadata.annotations, [...CLAIM_ANNOTATIONS, RELEASED_WORKS_ANNOTATION]), ...claimAnnotations },
          ownerReferences: [
            { apiVersion: apiVersionOf(def), kind: def.kind, name: obj.metadata.name, uid: obj.metadata.uid, controller: true, blockOwnerDeletion: true },
          ],
        },
        spec: bspec,
      };
      const r = await tolerant(`${bdef.kind} ${ns}/${name}`, () =>
        store.write(ns, name, existing ? { verb: "update", body } : { verb: "create", body }, existing ? { known: existing } : {}),
      );
      if (r === "refused") continue;
      stored = r;
    }
    if (stored === "lost" || stored === null) {
      raced = true;
      continue;
    }
    const binding: KubeObject = stored;
    // Status, as Karmada's scheduler and binding status controller write it.
    const oldStatus = (binding.status ?? {}) as { lastScheduledTime?: string; conditions?: Condition[] };
    const aggregatedStatus = targetClusters
      .filter((c) => overrideErrors.has(c) || (works.get(c) ?? []).some((w) => !w.metadata.deletionTimestamp))
      .map((c) =>
        overrideErrors.has(c)
          ? { clusterName: c, applied: false, appliedMessage: `failed to apply override policies: ${overrideErrors.get(c)!}`, health: "Unknown" }
          : aggregatedItem(
              c,
              (works.get(c) ?? []).filter((w) => !w.metadata.deletionTimestamp),
              def,
              obj,
            ),
      );
    const fully = targetClusters.length > 0 && aggregatedStatus.length === targetClusters.length && aggregatedStatus.every((i) => i.applied === true);
    const clustersChanged = !old || !deepEqual((old.spec as { clusters?: unknown } | undefined)?.clusters ?? null, bspec.clusters);
    const status = {
      schedulerObservedGeneration: binding.metadata.generation ?? 1,
      lastScheduledTime: clustersChanged || !oldStatus.lastScheduledTime ? now : oldStatus.lastScheduledTime,
      conditions: mergeConditions(
        oldStatus.conditions,
        [
          sched.error
            ? { type: "Scheduled", status: "False", reason: sched.error.reason, message: sched.error.message }
            : { type: "Scheduled", status: "True", reason: "Success", message: "Binding has been scheduled successfully." },
          fully
            ? { type: "FullyApplied", status: "True", reason: "FullyAppliedSuccess", message: "All works have been successfully applied" }
            : {
                type: "FullyApplied",
                status: "False",
                reason: "FullyAppliedFailed",
                message: "Failed to apply all works, see status.aggregatedStatus for details",
              },
        ],
        now,
      ),
      ...(aggregatedStatus.length > 0 ? { aggregatedStatus } : {}),
    };
    // lastScheduledTime moves only with the clusters: compare without it.
    const { lastScheduledTime: _a, ...cmpNew } = status;
    const { lastScheduledTime: _b, ...cmpOld } = oldStatus as Record<string, unknown>;
    if (canonical(cmpNew) === canonical(cmpOld) && !clustersChanged) continue;
    const r = await racing(() => store.write(ns, name, { verb: "update", subresource: "status", body: { ...binding, status } }, { known: binding }));
    if (r === "lost") raced = true;
  }
  for (const { def, binding } of bindings) {
    if (wanted.has(`${def.kind}/${binding.metadata.namespace ?? ""}/${binding.metadata.name}`)) continue;
    const r = await racing(() =>
      admittedStoreOf(env, def).write(binding.metadata.namespace ?? "", binding.metadata.name, {
        verb: "delete",
        preconditions: { uid: binding.metadata.uid },
      }),
    );
    if (r === "lost") raced = true;
  }
  return raced ? { rerun: true } : {};
}

// ---------------------------------------------------------------------------------------------
// What wakes a policy.

/** What a change owes the Karmada policies. */
export type KarmadaOwed =
  | { namespace: string; name: string; now?: true }
  | { object: { apiVersion: string; kind: string; namespace: string; name: string; labels: (Record<string, string> | null)[]; claims: PolicyRef[] } }
  | { clusters: true }
  /** An override policy changed: the propagation policies of its namespace (null: every namespace) and every ClusterPropagationPolicy. */
  | { overrides: string | null };

const isPolicyKind = (def: KindDefinition) => def === PropagationPolicyKind || def === ClusterPropagationPolicyKind;

/** The ManagedCluster fields Karmada's scheduler reads: labels, provider/region/zone, taints, acceptance, deletion. */
function clusterView(mc: KubeObject | null): unknown {
  if (!mc) return null;
  const c = karmadaClusterOf(mc);
  return { labels: c.labels, provider: c.provider ?? null, region: c.region ?? null, zones: c.zones, taints: c.taints, leaving: c.leaving };
}

/** The object without what never reaches a member cluster (a status-only change wakes no policy). */
function stripped(o: KubeObject): unknown {
  const { status: _s, metadata, ...rest } = o as KubeObject & { status?: unknown };
  const { resourceVersion: _r, managedFields: _m, generation: _g, ...meta } = metadata as unknown as Record<string, unknown>;
  return { ...rest, metadata: meta };
}

/**
 * What a committed change owes the Karmada policies: a policy created, its spec changed or its
 * deletion started: its run, awaited (removed or its finalizer removed: a run shortly after); a
 * ManifestWork of a policy whose status changed or that was deleted: its run shortly after; a
 * ManagedCluster whose scheduling view changed: every policy shortly after; any other object of
 * a kind a policy may select: the policies that may claim it or did, shortly after.
 */
export function planKarmada(change: Change): KarmadaOwed | null {
  const { def, namespace, name, before, after } = change;
  if (isPolicyKind(def)) return ownChangeRun(namespace, name, before, after, namespace ? PP_FINALIZER : CPP_FINALIZER);
  if (def === ManifestWorkKind) {
    const w = after ?? before;
    const a = w?.metadata.annotations ?? {};
    const l = w?.metadata.labels ?? {};
    let ref: PolicyRef | null = null;
    if (l[PP_PERMANENT_ID_LABEL] && a[PP_NAME_ANNOTATION] && a[PP_NAMESPACE_ANNOTATION])
      ref = { namespace: a[PP_NAMESPACE_ANNOTATION]!, name: a[PP_NAME_ANNOTATION]! };
    else if (l[CPP_PERMANENT_ID_LABEL] && a[CPP_NAME_ANNOTATION]) ref = { namespace: "", name: a[CPP_NAME_ANNOTATION]! };
    if (!ref) return null;
    if (!after || (after.metadata.deletionTimestamp && !before?.metadata.deletionTimestamp)) return ref;
    if (before && !deepEqual(before.status ?? null, after.status ?? null)) return ref;
    return null;
  }
  if (def === ManagedClusterKind) return deepEqual(clusterView(before), clusterView(after)) ? null : { clusters: true };
  // An override policy's change: the propagation policies re-render (those of its namespace, and every cluster-wide one).
  if (def === OverridePolicyKind || def === ClusterOverridePolicyKind)
    return deepEqual(before?.spec ?? null, after?.spec ?? null) ? null : { overrides: namespace || null };
  if (def === KarmadaResourceBindingKind || def === KarmadaClusterResourceBindingKind) {
    // A released binding claimed by another policy, or deleted with its template: the deleted policy's works drop it.
    const was = before?.metadata.annotations?.[RELEASED_WORKS_ANNOTATION];
    const is = after && !after.metadata.deletionTimestamp ? after.metadata.annotations?.[RELEASED_WORKS_ANNOTATION] : undefined;
    const ref = was && was !== is ? refOfWorkBase(was) : null;
    return ref ? { namespace: ref.namespace, name: ref.name } : null;
  }
  if (isKindDisabled(def) || def.conversion || def.storage !== "d1") return null;
  if (before && after && deepEqual(before.metadata.labels ?? {}, after.metadata.labels ?? {}) && deepEqual(stripped(before), stripped(after))) return null;
  const claims = [claimOf(before), claimOf(after)].filter((c): c is PolicyRef => c !== null);
  return {
    object: {
      apiVersion: apiVersionOf(def),
      kind: def.kind,
      namespace,
      name,
      labels: [before ? (before.metadata.labels ?? {}) : null, after ? (after.metadata.labels ?? {}) : null],
      claims,
    },
  };
}

/**
 * An object's change that no policy of the isolate's lists may concern (src/fleet/placement-lists.ts
 * `cachedPlacementLists`, judged by {@link mayConcern} over the policies the hook's run would look
 * at) and that claims none: the placements' change counter and the value the lists were read at,
 * under which the hook's run would notify nobody (`AfterCommitHook.quiet`). Null otherwise.
 */
export function quietPolicies(owed: KarmadaOwed): CounterAt | null {
  const cached = cachedPlacementLists();
  if (!cached || !("object" in owed) || owed.object.claims.length > 0) return null;
  const ns = owed.object.namespace || undefined;
  const ppNamespace = owed.object.kind !== "Namespace" ? ns : undefined;
  const pps = ppNamespace === undefined ? cached.lists.pps : inNamespace(cached.lists.pps, ppNamespace);
  if ([...pps, ...cached.lists.cpps].some((p) => mayConcern(p, owed.object))) return null;
  return { counter: PLACEMENT_CHANGE_COUNTER, value: cached.counter };
}

/** Whether a policy's selectors may match the changed object (before or after), or its claim names the policy, or (a Namespace) the policy propagates in it. */
function mayConcern(p: KubeObject, owed: Extract<KarmadaOwed, { object: unknown }>["object"]): boolean {
  const ref = { namespace: p.metadata.namespace ?? "", name: p.metadata.name };
  if (owed.claims.some((c) => c.namespace === ref.namespace && c.name === ref.name)) return true;
  const selectors = ((p.spec ?? {}) as PropagationSpec).resourceSelectors ?? [];
  if (owed.apiVersion === "v1" && owed.kind === "Namespace") {
    if (ref.namespace === owed.name) return true;
    if (!ref.namespace && selectors.some((s) => !s.namespace || s.namespace === owed.name)) return true;
  }
  if (ref.namespace && ref.namespace !== owed.namespace) return false;
  return selectors.some((s) => {
    if (s.apiVersion !== owed.apiVersion || s.kind !== owed.kind) return false;
    if (s.namespace && s.namespace !== owed.namespace) return false;
    if (s.name) return s.name === owed.name;
    if (!s.labelSelector) return true;
    try {
      return owed.labels.some((l) => l !== null && matchesLabelSelector(s.labelSelector, l));
    } catch {
      return false; // a label selector that does not parse matches nothing (Karmada's ResourceSelectorPriority)
    }
  });
}

/** The prefix of a Karmada policy's target namespace in its object (a namespace never holds ':'). */
export const KARMADA_TARGET_PREFIX = "karmada:";

/** The Durable Object of a policy: the replica set object class, named `karmada:<namespace>/<name>`. */
function stub(env: Env, ref: PolicyRef) {
  return env.REPLICASETS.getByName(`${KARMADA_TARGET_PREFIX}${ref.namespace}/${ref.name}`);
}

async function reconcileSoon(env: Env, ref: PolicyRef): Promise<void> {
  await stub(env, ref).notifyMany(`${KARMADA_TARGET_PREFIX}${ref.namespace}`, ref.name, [{}]);
}

async function reconcileNow(env: Env, ref: PolicyRef): Promise<void> {
  try {
    await stub(env, ref).reconcile(`${KARMADA_TARGET_PREFIX}${ref.namespace}`, ref.name);
  } catch (e) {
    console.error(`karmada policy ${ref.namespace}/${ref.name}: could not run it; asking for a later run`, e);
    await reconcileSoon(env, ref);
  }
}

/**
 * The Karmada policies' after-commit hook ({@link planKarmada}): runs the policy a write of it
 * calls for before the write returns, and notifies the policies an object's, a cluster's or a
 * work's change may concern. Idempotent: a run reads the current state.
 */
export const karmadaHook: AfterCommitHook<KarmadaOwed> = {
  name: "karmada-policies",
  plan: planKarmada,
  quiet: quietPolicies,
  async run(env, owed, target) {
    if ("namespace" in owed) {
      const ref = { namespace: owed.namespace, name: owed.name };
      if (!owed.now) return reconcileSoon(env, ref);
      await reconcileNow(env, ref);
      const plural = policyKindOf(ref).plural;
      return { rewrote: target.resource === `${KARMADA_POLICY_GROUP}/${plural}` && target.namespace === owed.namespace && target.name === owed.name };
    }
    const ns = "object" in owed ? owed.object.namespace || undefined : "overrides" in owed ? (owed.overrides ?? undefined) : undefined;
    // The isolate's lists, checked by one read of the placements' change counter (src/fleet/placement-lists.ts).
    const lists = await placementLists(env, target);
    const ppNamespace = ("object" in owed && owed.object.kind !== "Namespace") || "overrides" in owed ? ns : undefined;
    const pps = ppNamespace === undefined ? lists.pps : inNamespace(lists.pps, ppNamespace);
    const cpps = lists.cpps;
    const refs = [...pps, ...cpps]
      .filter((p) => !("object" in owed) || mayConcern(p, owed.object))
      .map((p) => ({ namespace: p.metadata.namespace ?? "", name: p.metadata.name }));
    const results = await Promise.allSettled(refs.map((r) => reconcileSoon(env, r)));
    for (const r of results) if (r.status === "rejected") console.error("karmada policy notification failed", r.reason);
  },
};
