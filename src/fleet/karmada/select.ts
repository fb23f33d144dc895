/**
 * Which propagation policy claims a resource template, after Karmada's resource detector
 * (karmada-io/karmada `pkg/detector/detector.go` `LookForMatchedPolicy`, `compare.go`
 * `getHighestPriority(Cluster)PropagationPolicy`, `preemption.go`; `pkg/util/selector.go`
 * `ResourceSelectorPriority`). Pure.
 *
 * - A selector matches an object of its `apiVersion` and `kind` (and `namespace` when set): by
 *   `name` (its label selector then ignored), by `labelSelector`, or all of them; the implicit
 *   priority is name > label selector > all.
 * - An unclaimed object goes to the matching PropagationPolicy of its namespace with the highest
 *   `priority`, then the highest implicit priority, then the smallest name; only when none
 *   matches, to the matching ClusterPropagationPolicy chosen alike.
 * - A claimed object (the policy named by its claim annotations, still there, not being deleted
 *   and still matching) stays with it: a policy created later, even of higher priority, does not
 *   take it, unless it has `preemption: Always` and outranks the claimer (a PropagationPolicy
 *   outranks any ClusterPropagationPolicy; within a kind, a higher `priority`).
 *
 * The claim is written on the template as Karmada writes it: the label
 * `propagationpolicy.karmada.io/permanent-id` and the annotations
 * `propagationpolicy.karmada.io/{namespace,name}` (a ClusterPropagationPolicy's:
 * `clusterpropagationpolicy.karmada.io/permanent-id` and `clusterpropagationpolicy.karmada.io/name`).
 */
import type { KindDefinition } from "../../k8s/kind.ts";
import { matchesLabelSelector } from "../../k8s/labels.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import {
  CPP_NAME_ANNOTATION,
  CPP_PERMANENT_ID_LABEL,
  PP_NAME_ANNOTATION,
  PP_NAMESPACE_ANNOTATION,
  PP_PERMANENT_ID_LABEL,
  type KarmadaResourceSelector,
  type PropagationSpec,
} from "../../kinds/karmada.ts";

/** A propagation policy: `namespace` "" for a ClusterPropagationPolicy. */
export interface PolicyRef {
  namespace: string;
  name: string;
}

/** A policy as the detector reads it. */
export interface PolicyView {
  ref: PolicyRef;
  /** Its permanent id (the label set on create). */
  id: string;
  spec: PropagationSpec;
}

/** `apps/v1`, or `v1` for the core group: the apiVersion a selector names a kind's objects by. */
export const apiVersionOf = (def: { group: string; version: string }) => (def.group ? `${def.group}/${def.version}` : def.version);

/** Karmada's `ResourceSelectorPriority`: 0 no match, 1 all, 2 by label selector, 3 by name (a label selector that does not parse: 0). */
export function selectorPriority(def: KindDefinition, obj: KubeObject, s: KarmadaResourceSelector): number {
  if (s.apiVersion !== apiVersionOf(def) || s.kind !== def.kind) return 0;
  if (s.namespace && (obj.metadata.namespace ?? "") !== s.namespace) return 0;
  if (s.name) return s.name === obj.metadata.name ? 3 : 0;
  if (!s.labelSelector) return 1;
  try {
    return matchesLabelSelector(s.labelSelector, obj.metadata.labels ?? {}) ? 2 : 0;
  } catch {
    return 0;
  }
}

/** The highest priority among a policy's selectors for `obj` (0: it does not match); a PropagationPolicy only matches objects of its namespace. */
export function policyPriority(def: KindDefinition, obj: KubeObject, p: PolicyView): number {
  if (p.ref.namespace && (obj.metadata.namespace ?? "") !== p.ref.namespace) return 0;
  return Math.max(0, ...(p.spec.resourceSelectors ?? []).map((s) => selectorPriority(def, obj, s)));
}

/** The policy whose claim `obj` carries (its annotations), or null. */
export function claimOf(obj: KubeObject | null | undefined): PolicyRef | null {
  const a = obj?.metadata.annotations ?? {};
  const l = obj?.metadata.labels ?? {};
  if (a[PP_NAME_ANNOTATION] && a[PP_NAMESPACE_ANNOTATION] && l[PP_PERMANENT_ID_LABEL])
    return { namespace: a[PP_NAMESPACE_ANNOTATION]!, name: a[PP_NAME_ANNOTATION]! };
  if (a[CPP_NAME_ANNOTATION] && l[CPP_PERMANENT_ID_LABEL]) return { namespace: "", name: a[CPP_NAME_ANNOTATION]! };
  return null;
}

/** The claim metadata of `p` (labels and annotations to set) and the keys of every claim (to clear). */
export function claimMetadata(p: PolicyView | null): { labels: Record<string, string>; annotations: Record<string, string> } {
  if (!p) return { labels: {}, annotations: {} };
  return p.ref.namespace
    ? { labels: { [PP_PERMANENT_ID_LABEL]: p.id }, annotations: { [PP_NAMESPACE_ANNOTATION]: p.ref.namespace, [PP_NAME_ANNOTATION]: p.ref.name } }
    : { labels: { [CPP_PERMANENT_ID_LABEL]: p.id }, annotations: { [CPP_NAME_ANNOTATION]: p.ref.name } };
}

/** The label and annotation keys of a claim. */
export const CLAIM_LABELS = [PP_PERMANENT_ID_LABEL, CPP_PERMANENT_ID_LABEL] as const;
/** The annotation keys of a claim. */
export const CLAIM_ANNOTATIONS = [PP_NAMESPACE_ANNOTATION, PP_NAME_ANNOTATION, CPP_NAME_ANNOTATION] as const;

const sameRef = (a: PolicyRef, b: PolicyRef) => a.namespace === b.namespace && a.name === b.name;

/** Karmada's `getHighestPriority(Cluster)PropagationPolicy` among `candidates` (one kind): priority, implicit priority, then the smallest name. */
function highest(def: KindDefinition, obj: KubeObject, candidates: PolicyView[]): PolicyView | null {
  let best: PolicyView | null = null;
  let bestExplicit = -Infinity;
  let bestImplicit = 0;
  for (const p of candidates) {
    const implicit = policyPriority(def, obj, p);
    if (implicit === 0) continue;
    const explicit = p.spec.priority ?? 0;
    if (
      explicit > bestExplicit ||
      (explicit === bestExplicit && (implicit > bestImplicit || (implicit === bestImplicit && best && p.ref.name < best.ref.name)))
    ) {
      best = p;
      bestExplicit = explicit;
      bestImplicit = implicit;
    }
  }
  return best;
}

/** Whether `q` may preempt `current`'s claim (Karmada's preemption rules). */
function outranks(q: PolicyView, current: PolicyView): boolean {
  if (q.ref.namespace && !current.ref.namespace) return true;
  if (!q.ref.namespace && current.ref.namespace) return false;
  return (q.spec.priority ?? 0) > (current.spec.priority ?? 0);
}

/**
 * The policy that claims `obj` among `policies` (every PropagationPolicy of its namespace and
 * every ClusterPropagationPolicy, none being deleted), or null when none matches.
 */
export function claimerOf(def: KindDefinition, obj: KubeObject, policies: readonly PolicyView[]): PolicyView | null {
  const matching = policies.filter((p) => policyPriority(def, obj, p) > 0);
  const claim = claimOf(obj);
  const current = claim ? matching.find((p) => sameRef(p.ref, claim)) : undefined;
  const pick = (list: PolicyView[]) =>
    highest(
      def,
      obj,
      list.filter((p) => p.ref.namespace),
    ) ??
    highest(
      def,
      obj,
      list.filter((p) => !p.ref.namespace),
    );
  if (current) {
    const preemptors = matching.filter((q) => q !== current && q.spec.preemption === "Always" && outranks(q, current));
    return preemptors.length > 0 ? pick(preemptors) : current;
  }
  return pick(matching);
}
