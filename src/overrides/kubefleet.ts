/**
 * KubeFleet's ClusterResourceOverrides and ResourceOverrides as a source of the patch engine
 * (src/overrides/engine.ts; docs/overrides.md), on their snapshots, as KubeFleet resolves them
 * (kubefleet-dev/kubefleet `pkg/utils/overrider/overrider.go`,
 * `pkg/controllers/workgenerator/override.go`):
 *
 * - **for a placement** ({@link overridesForPlacement}, `FetchAllMatchingOverridesForResourceSnapshot`):
 *   the latest snapshots whose `placement` is unset or names the placement (a
 *   ClusterResourceOverride's names a ClusterResourcePlacement; a ResourceOverride's a
 *   ClusterResourcePlacement, or with scope Namespaced a ResourcePlacement of its namespace) and
 *   one of whose selectors names a selected object by group, version, kind and name (a
 *   ClusterResourceOverride's Namespace selector names every namespaced object in it; objects in
 *   envelopes count as themselves);
 * - **for a cluster** ({@link KubeFleetOverrides.forCluster}, `PickFromResourceMatchedOverridesForTargetCluster`):
 *   those with a rule whose `clusterSelector` matches the cluster's labels (absent: no cluster;
 *   no terms: every cluster; terms ORed, label selectors only), ClusterResourceOverride
 *   snapshots by name, ResourceOverride snapshots by namespace then name: the binding's
 *   `clusterResourceOverrideSnapshots` and `resourceOverrideSnapshots`, the placement status'
 *   `applicableClusterResourceOverrides` and `applicableResourceOverrides`;
 * - **for an object in the cluster** (`applyOverrides`): the ClusterResourceOverrides selecting it
 *   (a cluster-scoped object by its own name, a namespaced one by its namespace), then the
 *   ResourceOverrides selecting it (so a ResourceOverride wins on a field both set), each rule
 *   that matches the cluster in order: its JSON patches as one step, or Delete (the object is not
 *   placed there, and what follows does nothing). A failure is KubeFleet's user error:
 *   `ClusterResourceOverrideSnapshot "<name>" failed to apply on Deployment "web" in namespace "app": <why>`.
 *
 * The outcome for an object depends only on the rules that match the cluster and the values of
 * the variables they use: {@link ClusterOverrides.key} says so, for a renderer to reuse one
 * cluster's objects for every cluster with the same key. Pure.
 */
import { fromLabelSelector, matches, type LabelSelectorRequirementSet } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { ClusterResourceOverrideSpec, OverridePlacementRef, OverrideRule, ResourceOverrideSpec } from "../kinds/fleet-override.ts";
import { ADDON_SCOPE, goLabelSelector, REPLICA_SET_SCOPE } from "../kinds/fleet-override.ts";
import {
  applyOverrideSteps,
  compileOperations,
  variablesOf,
  type CompiledOperation,
  type CompiledStep,
  type OverrideCluster,
  type OverrideOutcome,
} from "./engine.ts";

/** A ClusterResourceOverrideSnapshot as the source reads it. */
export interface CroSnapshot {
  name: string;
  spec: ClusterResourceOverrideSpec;
}

/** A ResourceOverrideSnapshot as the source reads it. */
export interface RoSnapshot {
  name: string;
  namespace: string;
  spec: ResourceOverrideSpec;
}

/** A placement: its namespace ("" for a ClusterResourcePlacement) and name. */
export interface PlacementKey {
  namespace: string;
  name: string;
}

/** `group/version/kind/namespace/name` of an object or a selector (KubeFleet's `ResourceIdentifier` as a map key). */
const idKey = (group: string, version: string, kind: string, namespace: string, name: string) => `${group}/${version}/${kind}/${namespace}/${name}`;

function gv(o: KubeObject): [string, string] {
  const av = o.apiVersion ?? "";
  const slash = av.indexOf("/");
  return slash < 0 ? ["", av] : [av.slice(0, slash), av.slice(slash + 1)];
}

/** The key a ClusterResourceOverride selects `o` by: its own (cluster-scoped) or its namespace's. */
function croKeyOf(o: KubeObject): string {
  const ns = o.metadata.namespace;
  if (ns) return idKey("", "v1", "Namespace", "", ns);
  const [g, v] = gv(o);
  return idKey(g, v, o.kind, "", o.metadata.name);
}

/** The key a ResourceOverride selects a namespaced `o` by, or null for a cluster-scoped one. */
function roKeyOf(o: KubeObject): string | null {
  const ns = o.metadata.namespace;
  if (!ns) return null;
  const [g, v] = gv(o);
  return idKey(g, v, o.kind, ns, o.metadata.name);
}

const croKeys = (s: CroSnapshot) => (s.spec.clusterResourceSelectors ?? []).map((x) => idKey(x.group, x.version, x.kind, "", x.name ?? ""));
const roKeys = (s: RoSnapshot) => (s.spec.resourceSelectors ?? []).map((x) => idKey(x.group, x.version, x.kind, s.namespace, x.name));

/**
 * Whether an override's `placement` lets it apply to `placement` (KubeFleet compares placement
 * keys: `<name>` or `<namespace>/<name>`). One naming a ManifestWorkReplicaSet (scope
 * {@link REPLICA_SET_SCOPE}) or a template add-on ({@link ADDON_SCOPE}) is for it alone, never a placement.
 */
function forPlacement(ref: OverridePlacementRef | undefined, overrideNamespace: string, placement: PlacementKey): boolean {
  if (!ref) return true;
  if (ref.scope === REPLICA_SET_SCOPE || ref.scope === ADDON_SCOPE) return false;
  const key = placement.namespace ? `${placement.namespace}/${placement.name}` : placement.name;
  const want = ref.scope === "Namespaced" ? `${overrideNamespace}/${ref.name}` : ref.name;
  return want === key;
}

/**
 * The snapshots of `cros` and `ros` (each override's latest) that concern a placement's
 * `objects` (the selected objects, envelopes opened), as KubeFleet's
 * `FetchAllMatchingOverridesForResourceSnapshot` picks them.
 */
export function overridesForPlacement(
  placement: PlacementKey,
  objects: readonly KubeObject[],
  cros: readonly CroSnapshot[],
  ros: readonly RoSnapshot[],
): { cros: CroSnapshot[]; ros: RoSnapshot[] } {
  if (cros.length === 0 && ros.length === 0) return { cros: [], ros: [] };
  const croCandidates = new Set<string>();
  const roCandidates = new Set<string>();
  for (const o of objects) {
    croCandidates.add(croKeyOf(o));
    const rk = roKeyOf(o);
    if (rk) roCandidates.add(rk);
  }
  return {
    cros: cros.filter((s) => forPlacement(s.spec.placement, "", placement) && croKeys(s).some((k) => croCandidates.has(k))),
    ros: ros.filter((s) => forPlacement(s.spec.placement, s.namespace, placement) && roKeys(s).some((k) => roCandidates.has(k))),
  };
}

/**
 * The latest ResourceOverrideSnapshots of a namespace that name the ManifestWorkReplicaSet
 * `name` of that namespace (`placement: {name, scope: ManifestWorkReplicaSet}`, docs/overrides.md
 * "ManifestWorkReplicaSets") and select one of its template's `objects` (by group, version, kind
 * and name, whatever namespace of the cluster the object names). Flotilla's own extension: KubeFleet
 * has no replica sets.
 */
export function overridesForReplicaSet(namespace: string, name: string, objects: readonly KubeObject[], ros: readonly RoSnapshot[]): RoSnapshot[] {
  const candidates = new Set(objects.map(anyNamespaceKeyOf));
  return ros.filter(
    (s) =>
      s.namespace === namespace &&
      s.spec.placement?.scope === REPLICA_SET_SCOPE &&
      s.spec.placement.name === name &&
      (s.spec.resourceSelectors ?? []).some((x) => candidates.has(idKey(x.group, x.version, x.kind, "*", x.name))),
  );
}

/**
 * The latest ClusterResourceOverrideSnapshots that name the template add-on `addon` (its
 * ClusterManagementAddOn: `placement: {name, scope: ClusterManagementAddOn}`, docs/overrides.md
 * "Template add-ons"). Their selectors pick the add-on's rendered manifests by group, version,
 * kind and name, whatever namespace of the cluster the manifest names (compile them with
 * `{ anyNamespace: true }`). Flotilla's own extension: KubeFleet has no add-ons.
 */
export function overridesForAddon(addon: string, cros: readonly CroSnapshot[]): CroSnapshot[] {
  return cros.filter((s) => s.spec.placement?.scope === ADDON_SCOPE && s.spec.placement.name === addon);
}

/** The key a replica set's ResourceOverride selects `o` by: group, version, kind and name, any namespace. */
function anyNamespaceKeyOf(o: KubeObject): string {
  const [g, v] = gv(o);
  return idKey(g, v, o.kind, "*", o.metadata.name);
}

/** A rule ready for many clusters: its selector terms parsed once, its operations compiled. */
interface CompiledRule {
  /** null: the selector is absent (no cluster); [] every cluster. */
  terms: ({ set: LabelSelectorRequirementSet } | { error: string })[] | null;
  delete: boolean;
  ops: CompiledOperation[];
  variables: { name: boolean; labels: string[] };
}

interface CompiledOverride {
  kind: "ClusterResourceOverrideSnapshot" | "ResourceOverrideSnapshot";
  name: string;
  namespace: string;
  keys: Set<string>;
  rules: CompiledRule[];
  /** The override's spec as JSON text, less its rules (its selectors and placement), and each rule's, for {@link ClusterOverrides.contentKeys}. */
  text: () => { selectors: string; rules: string[] };
}

/** The JSON texts of a snapshot's spec for content keys, made once and only when asked. */
function textsOf(spec: ClusterResourceOverrideSpec | ResourceOverrideSpec): () => { selectors: string; rules: string[] } {
  let memo: { selectors: string; rules: string[] } | undefined;
  return () => {
    if (!memo) {
      const { policy, ...rest } = spec;
      memo = { selectors: JSON.stringify(rest), rules: (policy?.overrideRules ?? []).map((r) => JSON.stringify(r)) };
    }
    return memo;
  };
}

function compileRule(rule: OverrideRule): CompiledRule {
  const sel = rule.clusterSelector;
  const terms =
    sel === undefined || sel === null
      ? null
      : (sel.clusterSelectorTerms ?? []).map((t) => {
          try {
            // A term without a label selector matches nothing (`LabelSelectorAsSelector(nil)`).
            return { set: fromLabelSelector(t.labelSelector ?? null) };
          } catch (e) {
            return { error: `invalid cluster label selector ${goLabelSelector(t.labelSelector)}: ${(e as Error).message}` };
          }
        });
  const patches = rule.jsonPatchOverrides ?? [];
  const ops = compileOperations(patches.map((p) => ({ op: p.op, path: p.path, ...(p.value !== undefined ? { value: p.value } : {}) })));
  const variables = { name: false, labels: [] as string[] };
  for (const o of ops) {
    if (!o.variables || o.text === undefined) continue;
    const v = variablesOf(o.text);
    variables.name ||= v.name;
    variables.labels.push(...v.labels);
  }
  return { terms, delete: rule.overrideType === "Delete", ops, variables };
}

/** KubeFleet's `IsClusterMatched` of one compiled rule: true, false, or the selector's error. */
function ruleMatches(rule: CompiledRule, labels: Readonly<Record<string, string>>): boolean | string {
  if (rule.terms === null) return false;
  if (rule.terms.length === 0) return true;
  for (const t of rule.terms) {
    if ("error" in t) return t.error;
    if (matches(t.set, labels)) return true;
  }
  return false;
}

/** `Deployment "web" in namespace "app"`, or `ClusterRole "viewer"` (KubeFleet's `formatOverrideTarget`). */
export function formatOverrideTarget(o: KubeObject): string {
  const kind = o.kind || "Unknown";
  const ns = o.metadata.namespace;
  return ns ? `${kind} ${JSON.stringify(o.metadata.name)} in namespace ${JSON.stringify(ns)}` : `${kind} ${JSON.stringify(o.metadata.name)}`;
}

/** The overrides of one cluster: which apply (for the binding and the status), the memo key, and their application to an object. */
export interface ClusterOverrides {
  /** The ClusterResourceOverrideSnapshots with a rule matching the cluster, by name. */
  clusterResourceOverrides: string[];
  /** The ResourceOverrideSnapshots with a rule matching the cluster, by namespace then name. */
  resourceOverrides: { name: string; namespace: string }[];
  /** Equal for two clusters whose objects every override renders the same (matched rules and the variables' values). */
  key: string;
  /**
   * Per override applicable to the cluster (by snapshot name): a text equal for two renderings
   * whatever the snapshot's name (its selectors, the rules that match the cluster, and the values
   * of the variables those rules use), so that a new snapshot whose rules for the cluster did not
   * change keeps it (a template add-on's rollout reruns only the clusters whose text changed).
   */
  contentKeys(): Map<string, string>;
  /** Applies the cluster's overrides to `object`: the copy to place (null: deleted there), or KubeFleet's error. */
  apply(object: KubeObject): OverrideOutcome;
}

/** The overrides of a placement, compiled once for all its clusters. */
export interface KubeFleetOverrides {
  /** No override concerns the placement (every cluster gets the objects as they are). */
  readonly empty: boolean;
  /** The overrides of one cluster. */
  forCluster(cluster: OverrideCluster): ClusterOverrides;
}

const NONE: ClusterOverrides = {
  clusterResourceOverrides: [],
  resourceOverrides: [],
  key: "",
  contentKeys: () => new Map(),
  apply: (object) => ({ ok: true, object }),
};

/**
 * Compiles the snapshots that concern a placement ({@link overridesForPlacement}) for its
 * clusters (see the module comment); with `replicaSet`, those of a ManifestWorkReplicaSet
 * ({@link overridesForReplicaSet}: ResourceOverrides select objects in any namespace); with
 * `anyNamespace`, those of a template add-on ({@link overridesForAddon}: ClusterResourceOverrides
 * select objects by group, version, kind and name in any namespace).
 */
export function compileKubeFleetOverrides(
  cros: readonly CroSnapshot[],
  ros: readonly RoSnapshot[],
  opts: { replicaSet?: boolean; anyNamespace?: boolean } = {},
): KubeFleetOverrides {
  // A replica set's ResourceOverrides select its manifests whatever their namespace (overridesForReplicaSet).
  const roKeysOf = opts.replicaSet ? (s: RoSnapshot) => (s.spec.resourceSelectors ?? []).map((x) => idKey(x.group, x.version, x.kind, "*", x.name)) : roKeys;
  const roKeyFor = opts.replicaSet ? anyNamespaceKeyOf : roKeyOf;
  const croKeysOf = opts.anyNamespace
    ? (s: CroSnapshot) => (s.spec.clusterResourceSelectors ?? []).map((x) => idKey(x.group, x.version, x.kind, "*", x.name ?? ""))
    : croKeys;
  const croKeyFor = opts.anyNamespace ? anyNamespaceKeyOf : croKeyOf;
  const compiled: CompiledOverride[] = [
    ...[...cros]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) => ({
        kind: "ClusterResourceOverrideSnapshot" as const,
        name: s.name,
        namespace: "",
        keys: new Set(croKeysOf(s)),
        rules: (s.spec.policy?.overrideRules ?? []).map(compileRule),
        text: textsOf(s.spec),
      })),
    ...[...ros]
      .sort((a, b) => (a.namespace !== b.namespace ? (a.namespace < b.namespace ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) => ({
        kind: "ResourceOverrideSnapshot" as const,
        name: s.name,
        namespace: s.namespace,
        keys: new Set(roKeysOf(s)),
        rules: (s.spec.policy?.overrideRules ?? []).map(compileRule),
        text: textsOf(s.spec),
      })),
  ];
  if (compiled.length === 0) return { empty: true, forCluster: () => NONE };
  return {
    empty: false,
    forCluster(cluster) {
      // Per override: the outcome of each rule for this cluster (true, false, or a selector error).
      const applicable: { o: CompiledOverride; matched: (boolean | string)[] }[] = [];
      const keyParts: unknown[] = [];
      const usedLabels = new Set<string>();
      let usesName = false;
      for (const o of compiled) {
        const matched = o.rules.map((r) => ruleMatches(r, cluster.labels));
        if (!matched.some((m) => m !== false)) continue;
        applicable.push({ o, matched });
        keyParts.push([o.kind, o.namespace, o.name, matched.map((m) => (m === true ? 1 : m === false ? 0 : 2))]);
        o.rules.forEach((r, i) => {
          if (matched[i] !== true) return;
          usesName ||= r.variables.name;
          for (const l of r.variables.labels) usedLabels.add(l);
        });
      }
      if (applicable.length === 0) return NONE;
      const values = [...usedLabels].sort().map((l) => [l, Object.prototype.hasOwnProperty.call(cluster.labels, l) ? cluster.labels[l] : null]);
      const key = JSON.stringify([keyParts, usesName ? cluster.name : null, values]);
      return {
        clusterResourceOverrides: applicable.filter((a) => a.o.kind === "ClusterResourceOverrideSnapshot").map((a) => a.o.name),
        resourceOverrides: applicable.filter((a) => a.o.kind === "ResourceOverrideSnapshot").map((a) => ({ name: a.o.name, namespace: a.o.namespace })),
        key,
        contentKeys() {
          const out = new Map<string, string>();
          for (const { o, matched } of applicable) {
            const t = o.text();
            const rules = o.rules.flatMap((r, i) => (matched[i] === false ? [] : [[t.rules[i], matched[i] === true ? null : matched[i]]]));
            const labels = new Set<string>();
            let name = false;
            o.rules.forEach((r, i) => {
              if (matched[i] !== true) return;
              name ||= r.variables.name;
              for (const l of r.variables.labels) labels.add(l);
            });
            const vals = [...labels].sort().map((l) => [l, Object.prototype.hasOwnProperty.call(cluster.labels, l) ? cluster.labels[l] : null]);
            out.set(o.name, JSON.stringify([t.selectors, rules, name ? cluster.name : null, vals]));
          }
          return out;
        },
        apply(object) {
          const croKey = croKeyFor(object);
          const roKey = roKeyFor(object);
          const steps: CompiledStep[] = [];
          for (const { o, matched } of applicable) {
            if (!o.keys.has(o.kind === "ClusterResourceOverrideSnapshot" ? croKey : (roKey ?? ""))) continue;
            const source = `${o.kind} ${JSON.stringify(o.name)}`;
            for (const [i, r] of o.rules.entries()) {
              const m = matched[i];
              if (typeof m === "string") return { ok: false, source, message: `${source} failed to apply on ${formatOverrideTarget(object)}: ${m}` };
              if (!m) continue;
              steps.push(r.delete ? { source, delete: true } : { source, ops: r.ops });
              if (r.delete) break;
            }
          }
          const out = applyOverrideSteps(object, steps, cluster);
          return out.ok ? out : { ok: false, source: out.source, message: `${out.source} failed to apply on ${formatOverrideTarget(object)}: ${out.message}` };
        },
      };
    },
  };
}
