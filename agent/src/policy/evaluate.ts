/**
 * Evaluation of one ConfigurationPolicy against the member cluster, as OCM's
 * config-policy-controller evaluates it (`handleObjectTemplates`, `createStatus` in its
 * controllers/): each object template is looked up in the namespaces it applies to, compared
 * (compare.ts) and, when the remediation is `enforce`, the cluster is changed: a missing
 * `musthave`/`mustonlyhave` object is created, a mismatched one updated (merged, or replaced at
 * the template's keys for mustonlyhave) unless a dry-run update shows the API server would store
 * it unchanged, a `mustnothave` object deleted. The result is OCM's:
 * Compliant or NonCompliant per object template, with its message in OCM's words
 * (`namespaces [foo] not found`, `configmaps [a] found as specified in namespace b`,
 * `namespaces [foo] was created successfully`), and the compliance event's message of the whole
 * policy (`NonCompliant; violation - namespaces [foo] not found`).
 */
import { isNotFound, describeKubeError, KubeError } from "../kube.ts";
import { fromLabelSelector, toString } from "../../../src/k8s/labels.ts";
import { canonicalJson as canonical } from "../../../src/k8s/canonical-json.ts";
import type { DynamicClient, GroupVersionResource, ObjectRef } from "../work/dynamic.ts";
import { NoKindMatchError, type RestMapper } from "../work/discovery.ts";
import { isObj, type Obj } from "../work/types.ts";
import { compareObject, type ComplianceType } from "./compare.ts";

/** The annotation OCM leaves out of comparisons. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** The field manager of what an enforce writes on the member cluster. */
export const POLICY_FIELD_MANAGER = "config-policy-controller";

// OCM's reasons (controllers/configurationpolicy_controller.go), in the order its messages list them.
const FOUND = "Resource found as expected";
const CREATED = "K8s creation success";
const UPDATED = "K8s update success";
const DELETED = "K8s deletion success";
const NOT_FOUND = "Resource not found but should exist";
const NO_MATCH = "Resource found but does not match";
const MISSING_AS_EXPECTED = "Resource not found as expected";
const FOUND_UNWANTED = "Resource found but should not exist";
const ORDERED_REASONS = [FOUND, CREATED, UPDATED, DELETED, NOT_FOUND, NO_MATCH, MISSING_AS_EXPECTED, FOUND_UNWANTED];
const TEMPLATES: Record<string, string> = {
  [FOUND]: "found as specified",
  [CREATED]: "was created successfully",
  [UPDATED]: "was updated successfully",
  [DELETED]: "was deleted successfully",
  [NOT_FOUND]: "not found",
  [NO_MATCH]: "found but not as specified",
  [FOUND_UNWANTED]: "found",
  [MISSING_AS_EXPECTED]: "missing as expected",
};

/** `remediationAction`, lowercased (the API accepts `Inform`/`Enforce` too). */
export type Remediation = "inform" | "enforce";

/** One entry of `spec.object-templates`. */
export interface ObjectTemplate {
  complianceType?: string;
  metadataComplianceType?: string;
  objectDefinition?: Obj;
}

/** `spec.namespaceSelector` (OCM's Target): include/exclude patterns and a label selector. */
export interface NamespaceSelector {
  include?: string[];
  exclude?: string[];
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** The result of one object template. */
export interface ObjectTemplateResult {
  compliant: boolean;
  /** OCM's compliancy detail message, e.g. `namespaces [foo] not found`. */
  message: string;
}

/**
 * Told what an evaluation read, so that a change of it can be watched (OCM's dynamic watcher
 * for `evaluationInterval: watch`): the policy controller hands the agent's watch tracker
 * (agent/src/work/tracker.ts `LiveTracker`) through a recorder.
 */
export interface ReadObserver {
  /** Before a named object is read or written. */
  beginRead(ref: ObjectRef): void;
  /** After: the resourceVersion the read or write returned (undefined: the object does not exist). */
  note(ref: ObjectRef, resourceVersion: string | undefined): void;
  /** A whole collection was listed (`namespace` "" for a cluster-scoped kind). */
  collection(gvr: GroupVersionResource, namespace: string): void;
}

/** What the evaluator needs of the member cluster. */
export interface EvaluationContext {
  client: DynamicClient;
  mapper: RestMapper;
  /** Told each object and collection read, when the template is evaluated on watch. */
  observer?: ReadObserver;
}

const NAMESPACES: GroupVersionResource = { group: "", version: "v1", resource: "namespaces" };

function rvOf(obj: Obj | null | undefined): string | undefined {
  const meta = obj && isObj(obj.metadata) ? obj.metadata : {};
  return typeof meta.resourceVersion === "string" ? meta.resourceVersion : undefined;
}

/** One object's outcome before the messages are built. */
interface ObjectEvent {
  namespace: string;
  name: string;
  compliant: boolean;
  reason: string;
  /** The message of an error (a reason outside {@link ORDERED_REASONS}). */
  message?: string;
}

/** A complianceType as OCM reads it (case-insensitive), or undefined when it is none of the three. */
export function complianceTypeOf(v: unknown): ComplianceType | undefined {
  const s = typeof v === "string" ? v.toLowerCase() : "";
  return s === "musthave" || s === "mustonlyhave" || s === "mustnothave" ? s : undefined;
}

/**
 * Go's `filepath.Match` of a namespace name against a pattern with `*`, `?` and `[...]`, as OCM's
 * namespaceSelector include/exclude match (pkg/common `Matches`). A malformed pattern matches
 * nothing.
 */
export function wildcardMatch(pattern: string, name: string): boolean {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) return false;
      let body = pattern.slice(i + 1, end);
      if (body.startsWith("^")) body = `^${body.slice(1)}`;
      re += `[${body.replace(/\\/g, "\\\\")}]`;
      i = end;
    } else if (c === "\\" && i + 1 < pattern.length) re += `\\${pattern[++i]}`;
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  try {
    return new RegExp(`${re}$`).test(name);
  } catch {
    return false;
  }
}

/**
 * The label selector of a namespaceSelector as the `labelSelector` query parameter (the one
 * implementation of metav1.LabelSelector, src/k8s/labels.ts), or undefined for none.
 * @throws SelectorParseError for an invalid selector (the hub refuses those with 422 first)
 */
function labelSelectorQuery(sel: NamespaceSelector): string | undefined {
  if (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0) return undefined;
  return toString(fromLabelSelector({ matchLabels: sel.matchLabels, matchExpressions: sel.matchExpressions }));
}

/**
 * Whether a namespaceSelector selects anything at all (it has an `include` or a label selector),
 * i.e. whether its result depends on the member cluster's namespaces.
 */
export function selectsNamespaces(sel: NamespaceSelector | undefined): boolean {
  return sel !== undefined && ((sel.include ?? []).length > 0 || Boolean(sel.matchLabels) || Boolean(sel.matchExpressions));
}

/**
 * The namespaces a namespaceSelector selects on the member cluster (OCM's
 * NamespaceSelectorReconciler): none when it has neither `include` nor a label selector; else the
 * namespaces (not terminating) its labels select, kept when an `include` pattern matches (every one
 * when there is no `include`) and no `exclude` pattern does. Sorted.
 * @throws KubeError when the namespaces cannot be listed
 */
export async function selectNamespaces(client: DynamicClient, sel: NamespaceSelector | undefined): Promise<string[]> {
  if (!sel || !selectsNamespaces(sel)) return [];
  const include = sel.include ?? [];
  const exclude = sel.exclude ?? [];
  const labels = labelSelectorQuery(sel);
  const items = await client.list(NAMESPACES, "", labels);
  return items
    .filter((ns) => !(isObj(ns.metadata) && ns.metadata.deletionTimestamp))
    .map((ns) => (isObj(ns.metadata) ? String(ns.metadata.name) : ""))
    .filter((n) => n && (include.length === 0 || include.some((p) => wildcardMatch(p, n))) && !exclude.some((p) => wildcardMatch(p, n)))
    .sort();
}

/**
 * Evaluates one object template in the namespaces `selected` (the policy's namespaceSelector; used
 * only for a namespaced kind whose template names no namespace) and enforces it when `remediation`
 * is `enforce`. Never throws: a failure (a kind the cluster does not serve, a denied request) is a
 * NonCompliant result whose message says it.
 */
export async function evaluateObjectTemplate(
  ctx: EvaluationContext,
  tmpl: ObjectTemplate,
  remediation: Remediation,
  selected: string[],
): Promise<ObjectTemplateResult> {
  const def = isObj(tmpl.objectDefinition) ? tmpl.objectDefinition : {};
  const ctype = complianceTypeOf(tmpl.complianceType);
  if (!ctype)
    return { compliant: false, message: `the complianceType ${JSON.stringify(tmpl.complianceType ?? "")} is not one of musthave, mustonlyhave, mustnothave` };
  const metaCtype = complianceTypeOf(tmpl.metadataComplianceType);
  const apiVersion = typeof def.apiVersion === "string" ? def.apiVersion : "";
  const kind = typeof def.kind === "string" ? def.kind : "";
  const meta = isObj(def.metadata) ? def.metadata : {};
  const name = typeof meta.name === "string" ? meta.name : "";
  let mapping;
  try {
    mapping = await ctx.mapper.mapping(apiVersion, kind);
  } catch (e) {
    if (e instanceof NoKindMatchError)
      return {
        compliant: false,
        message: `couldn't find mapping resource with kind ${kind} in API version ${apiVersion}, please check if you have CRD deployed`,
      };
    return { compliant: false, message: describeKubeError(e) };
  }
  const gvr: GroupVersionResource = { group: mapping.group, version: mapping.version, resource: mapping.resource };
  let namespaces = [""];
  if (mapping.namespaced) {
    namespaces = typeof meta.namespace === "string" && meta.namespace ? [meta.namespace] : selected;
    if (namespaces.length === 0) {
      return {
        compliant: false,
        message: `namespaced object${name ? ` ${name}` : ""} of kind ${kind} has no namespace specified from the policy namespaceSelector nor the object metadata`,
      };
    }
  }
  const events: ObjectEvent[] = [];
  for (const ns of namespaces) {
    try {
      events.push(...(await evaluateIn(ctx, gvr, def, ns, name, ctype, metaCtype, remediation)));
    } catch (e) {
      events.push({
        namespace: ns,
        name,
        compliant: false,
        reason: "K8s error",
        message: `${mapping.resource} [${name}]${ns ? ` in namespace ${ns}` : ""}: ${describeKubeError(e)}`,
      });
    }
  }
  return statusOf(mapping.resource, events);
}

/** The events of one object template in one namespace ("" for a cluster-scoped kind). */
async function evaluateIn(
  ctx: EvaluationContext,
  gvr: GroupVersionResource,
  def: Obj,
  ns: string,
  name: string,
  ctype: ComplianceType,
  metaCtype: ComplianceType | undefined,
  remediation: Remediation,
): Promise<ObjectEvent[]> {
  const enforce = remediation === "enforce";
  const desired = withNamespace(def, ns);
  if (!name) {
    // An unnamed template matches any object of its kind there whose fields it has.
    ctx.observer?.collection(gvr, ns);
    const items = await ctx.client.list(gvr, ns);
    const matching = items.filter((o) => !compareObject(desired, o, "musthave", metaCtype).mismatch);
    const names = matching.map((o) => String((o.metadata as Obj).name));
    if (ctype === "mustnothave") {
      if (matching.length === 0) return [{ namespace: ns, name: "", compliant: true, reason: MISSING_AS_EXPECTED }];
      if (!enforce) return names.map((n) => ({ namespace: ns, name: n, compliant: false, reason: FOUND_UNWANTED }));
      for (const o of matching) await deleteObject(ctx, gvr, ns, o);
      return names.map((n) => ({ namespace: ns, name: n, compliant: true, reason: DELETED }));
    }
    if (matching.length > 0) return names.map((n) => ({ namespace: ns, name: n, compliant: true, reason: FOUND }));
    return [{ namespace: ns, name: "", compliant: false, reason: NOT_FOUND }];
  }
  const ref: ObjectRef = { ...gvr, namespace: ns, name };
  ctx.observer?.beginRead(ref);
  const live = await getOrNull(ctx.client, ref);
  ctx.observer?.note(ref, rvOf(live));
  if (ctype === "mustnothave") {
    if (!live) return [{ namespace: ns, name, compliant: true, reason: MISSING_AS_EXPECTED }];
    if (!enforce) return [{ namespace: ns, name, compliant: false, reason: FOUND_UNWANTED }];
    await deleteObject(ctx, gvr, ns, live);
    return [{ namespace: ns, name, compliant: true, reason: DELETED }];
  }
  if (!live) {
    if (!enforce) return [{ namespace: ns, name, compliant: false, reason: NOT_FOUND }];
    let created: Obj;
    try {
      created = await ctx.client.create(gvr, ns, desired, POLICY_FIELD_MANAGER);
    } catch (e) {
      // The namespace may be missing or terminating: a change of it is what can make this work
      // (OCM watches it too).
      if (ns && ctx.observer) {
        const nsRef: ObjectRef = { ...NAMESPACES, namespace: "", name: ns };
        ctx.observer.beginRead(nsRef);
        ctx.observer.note(nsRef, undefined);
      }
      throw e;
    }
    ctx.observer?.note(ref, rvOf(created));
    return [{ namespace: ns, name, compliant: true, reason: CREATED }];
  }
  return [await checkAndUpdate(ctx, ref, desired, live, ctype, metaCtype, enforce)];
}

/** OCM's message when a dry-run update is refused as invalid (an immutable field) in enforce. */
function cannotUpdate(ref: ObjectRef): string {
  return `${ref.resource} [${ref.name}]${ref.namespace ? ` in namespace ${ref.namespace}` : ""} cannot be updated, likely due to immutable fields not matching, you may set spec["object-templates"][].recreateOption to recreate the object`;
}

/**
 * OCM's `checkAndUpdateResource` for an existing object `live`: compares it with the template
 * (compare.ts); on a mismatch asks the API server with a dry-run update of the merged object
 * whether it would change anything (its defaults may put back what mustonlyhave removes, such as
 * a Secret's `type` or a Namespace's `spec`): when the answer equals `live` (managedFields,
 * generation and the last-applied annotation left out) the object is found as specified.
 * Otherwise inform reports it not as specified and enforce updates it. A dry run refused as
 * invalid (422: an immutable field) is NonCompliant, with OCM's message in enforce; a conflict
 * (409: the object changed meanwhile) reads it again, once.
 * @throws KubeError what the dry run or the update throws otherwise
 */
async function checkAndUpdate(
  ctx: EvaluationContext,
  ref: ObjectRef,
  desired: Obj,
  live: Obj,
  ctype: ComplianceType,
  metaCtype: ComplianceType | undefined,
  enforce: boolean,
  retried = false,
): Promise<ObjectEvent> {
  const at = { namespace: ref.namespace, name: ref.name };
  const cmp = compareObject(desired, live, ctype, metaCtype);
  if (cmp.typeError) return { ...at, compliant: false, reason: "K8s update template error", message: cmp.typeError };
  if (!cmp.mismatch) return { ...at, compliant: true, reason: FOUND };
  let dry: Obj;
  try {
    dry = await ctx.client.replace(ref, cmp.updated, POLICY_FIELD_MANAGER, { dryRun: true });
  } catch (e) {
    const code = e instanceof KubeError ? e.code : 0;
    if (code === 409 && !retried) {
      const again = await getOrNull(ctx.client, ref);
      ctx.observer?.note(ref, rvOf(again));
      if (again) return checkAndUpdate(ctx, ref, desired, again, ctype, metaCtype, enforce, true);
    }
    if (code === 422)
      return enforce
        ? { ...at, compliant: false, reason: "K8s update template error", message: cannotUpdate(ref) }
        : { ...at, compliant: false, reason: NO_MATCH };
    throw e;
  }
  if (canonical(forComparison(dry)) === canonical(forComparison(live))) return { ...at, compliant: true, reason: FOUND };
  if (!enforce) return { ...at, compliant: false, reason: NO_MATCH };
  const updated = await ctx.client.replace(ref, cmp.updated, POLICY_FIELD_MANAGER);
  ctx.observer?.note(ref, rvOf(updated));
  return { ...at, compliant: true, reason: UPDATED };
}

/** OCM's `removeFieldsForComparison`: `obj` without managedFields, generation and the last-applied annotation (nor empty annotations). */
function forComparison(obj: Obj): Obj {
  const out = structuredClone(obj);
  if (!isObj(out.metadata)) return out;
  const meta = out.metadata;
  delete meta.managedFields;
  delete meta.generation;
  if (isObj(meta.annotations)) {
    delete meta.annotations[LAST_APPLIED];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
  return out;
}

/** `def` with `metadata.namespace` set to `ns` (left out for a cluster-scoped kind). */
function withNamespace(def: Obj, ns: string): Obj {
  const out = structuredClone(def);
  if (!ns) return out;
  out.metadata = { ...(isObj(out.metadata) ? out.metadata : {}), namespace: ns };
  return out;
}

async function getOrNull(client: DynamicClient, ref: Parameters<DynamicClient["get"]>[0]): Promise<Obj | null> {
  try {
    return await client.get(ref);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

async function deleteObject(ctx: EvaluationContext, gvr: GroupVersionResource, ns: string, obj: Obj): Promise<void> {
  const meta = obj.metadata as Obj;
  try {
    await ctx.client.delete({ ...gvr, namespace: ns, name: String(meta.name) }, typeof meta.uid === "string" ? meta.uid : undefined);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/**
 * OCM's `createStatus`: the object template is compliant when every object is; its message lists
 * the objects by outcome (only the non-compliant ones when there is one), grouped by reason in
 * OCM's order, then by names, each with the namespaces it concerns.
 */
function statusOf(resource: string, events: ObjectEvent[]): ObjectTemplateResult {
  const compliant = events.every((e) => e.compliant);
  const kept = events.filter((e) => e.compliant === compliant);
  const reasons = [...new Set(kept.map((e) => e.reason))].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
  const parts: string[] = [];
  for (const reason of reasons) {
    const of = kept.filter((e) => e.reason === reason);
    const template = TEMPLATES[reason];
    if (!template) {
      parts.push(...of.map((e) => e.message ?? reason));
      continue;
    }
    // names string -> namespaces, as OCM groups an unnamed template's objects per namespace.
    const byNames = new Map<string, Set<string>>();
    for (const e of of) {
      const set = byNames.get(e.name) ?? new Set<string>();
      if (e.namespace) set.add(e.namespace);
      byNames.set(e.name, set);
    }
    // message template (with its namespaces) -> names
    const byTemplate = new Map<string, string[]>();
    for (const [names, nss] of byNames) {
      const list = [...nss].sort();
      const where = list.length === 0 ? "" : list.length === 1 ? ` in namespace ${list[0]}` : ` in namespaces: ${list.join(", ")}`;
      const key = `${template}${where}`;
      byTemplate.set(key, [...(byTemplate.get(key) ?? []), names]);
    }
    for (const key of [...byTemplate.keys()].sort()) {
      const names = byTemplate.get(key)!.filter(Boolean).sort();
      parts.push(`${resource}${names.length ? ` [${names.join(", ")}]` : ""} ${key}`);
    }
  }
  return { compliant, message: parts.join("; ") };
}

function rank(reason: string): number {
  const i = ORDERED_REASONS.indexOf(reason);
  return i < 0 ? ORDERED_REASONS.length : i;
}
