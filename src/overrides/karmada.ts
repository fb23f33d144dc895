/**
 * Karmada's OverridePolicies and ClusterOverridePolicies as a source of the patch engine
 * (src/overrides/engine.ts; docs/overrides.md "Karmada"), as karmada-io/karmada
 * `pkg/util/overridemanager` applies them to a resource for one member cluster:
 *
 * - **which policies** (`getOverridersFromOverridePolicies`): every ClusterOverridePolicy, then
 *   (for a namespaced resource) the OverridePolicies of its namespace, whose `resourceSelectors`
 *   match it (none: every resource), each group sorted by implicit priority (a selector matching
 *   all of a kind, then by label selector, then by name: the most specific is applied last, so it
 *   wins) then by name;
 * - **which rules**: `overrideRules` in order (none: the deprecated top-level `targetCluster` and
 *   `overriders` as one rule), those whose `targetCluster` matches the cluster (absent: every
 *   cluster; Karmada's `util.ClusterMatches` on the cluster's labels, name, provider, region and
 *   zones, src/fleet/karmada/schedule.ts);
 * - **within a rule** (`applyPolicyOverriders`): image, command, args, labels, annotations, field
 *   overriders, then the plaintext operations, each built from the object as the overriders before
 *   it left it (`imageoverride.go`, `commandargsoverride.go`, `labelannotationoverrider.go`,
 *   `overridemanager.go` `applyFieldOverriders`), as RFC 6902 operations the engine applies.
 *
 * All or nothing: the first failing overrider fails the object for the cluster, with the policy
 * named. What applied is returned per scope, as Karmada records it in the work's annotations
 * `policy.karmada.io/applied-cluster-overrides` and `policy.karmada.io/applied-overrides`. The
 * outcome depends only on the rules that match the cluster (no variables): {@link
 * KarmadaClusterOverrides.key} says so, for a renderer to reuse a rendering. Pure.
 */
import { applyPatch, getValueByPointer, type Operation } from "fast-json-patch";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { fromLabelSelector, matches, matchesLabelSelector } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { KarmadaResourceSelector } from "../kinds/karmada.ts";
import type {
  CommandArgsOverrider,
  FieldOverrider,
  ImageOverrider,
  LabelAnnotationOverrider,
  Overriders,
  OverrideSpec,
  SubPatchOperation,
} from "../kinds/karmada-override.ts";
import { clusterMatches, type KarmadaCluster } from "../fleet/karmada/schedule.ts";
import { applyOverrideSteps, type CompiledStep, type OverrideOperation } from "./engine.ts";
import { imageString, parseImage, setTagOrDigest } from "./image-reference.ts";
import { formatOverrideTarget } from "./kubefleet.ts";

/** An OverridePolicy (`namespace` set) or a ClusterOverridePolicy as the source reads it. */
export interface KarmadaPolicy {
  kind: "OverridePolicy" | "ClusterOverridePolicy";
  namespace: string;
  name: string;
  spec: OverrideSpec;
}

/** One applied rule (Karmada's `OverridePolicyShadow`): the policy's name and the rule's overriders. */
export interface AppliedOverride {
  policyName: string;
  overriders: Overriders;
}

/** The outcome for one object in one cluster: the overridden copy and what applied, or why it failed. */
export type KarmadaOverrideOutcome =
  { ok: true; object: KubeObject; clusterOverrides: AppliedOverride[]; overrides: AppliedOverride[] } | { ok: false; message: string };

/** The policies of one cluster. */
export interface KarmadaClusterOverrides {
  /** Equal for two clusters for which every policy renders every object the same (the same matched rules). */
  key: string;
  /**
   * Per policy with a rule matching the cluster (by `<kind>/<namespace>/<name>`): a text equal for
   * two renderings (its selectors and the rules matching the cluster), for a template add-on's
   * rollout of a change (src/addons/overrides.ts).
   */
  contentKeys(): Map<string, string>;
  /** Applies the cluster's policies to `object` (not changed, unless `owned`: the caller's own copy, patched in place). */
  apply(object: KubeObject, owned?: boolean): KarmadaOverrideOutcome;
}

/** The policies compiled once for every cluster. */
export interface KarmadaOverrides {
  /** No policy at all (every object is rendered as it is). */
  readonly empty: boolean;
  forCluster(cluster: KarmadaCluster): KarmadaClusterOverrides;
}

// ---------------------------------------------------------------------------------------------
// Resource selection (pkg/util/selector.go).

/** `ImplicitPriority`: mismatch 0, all 1, label selector 2, name 3 (`ns`: the namespace `o` is judged in). */
function selectorPriority(o: KubeObject, ns: string, s: KarmadaResourceSelector): number {
  if (o.apiVersion !== s.apiVersion || o.kind !== s.kind || (s.namespace && ns !== s.namespace)) return 0;
  if (s.name) return s.name === o.metadata.name ? 3 : 0;
  if (!s.labelSelector) return 1;
  try {
    return matchesLabelSelector(s.labelSelector, o.metadata.labels ?? {}) ? 2 : 0;
  } catch {
    return 0;
  }
}

/** `ResourceMatchSelectorsPriority`, with no selectors matching all (`PriorityMatchAll`). */
function policyPriority(o: KubeObject, ns: string, selectors: readonly KarmadaResourceSelector[]): number {
  if (selectors.length === 0) return 1;
  let best = 0;
  for (const s of selectors) best = Math.max(best, selectorPriority(o, ns, s));
  return best;
}

/**
 * The policies of `policies` that select one of `objects` (Karmada's `ResourceMatchSelectors`; an
 * OverridePolicy only objects of its namespace, `namespaceOf` as {@link KarmadaCompileOptions}):
 * those a renderer of these objects compiles (a renderer with none has no Karmada policy).
 */
export function policiesSelecting(
  policies: readonly KarmadaPolicy[],
  objects: readonly KubeObject[],
  namespaceOf: (o: KubeObject) => string = (o) => o.metadata.namespace ?? "",
): KarmadaPolicy[] {
  if (policies.length === 0) return [];
  const judged = objects.map((o) => ({ o, ns: namespaceOf(o) }));
  return policies.filter((p) =>
    judged.some(({ o, ns }) => (p.kind === "ClusterOverridePolicy" || p.namespace === ns) && policyPriority(o, ns, p.spec?.resourceSelectors ?? []) > 0),
  );
}

// ---------------------------------------------------------------------------------------------
// The overriders, as operations built from the current object.

type Built = { ops: OverrideOperation[] } | { error: string };
type Json = Record<string, unknown>;
const isMap = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const escapePointer = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

/** Where a workload kind keeps its pod spec (`imageoverride.go`, `commandargsoverride.go`): by kind only, as Karmada. */
function podSpecPath(kind: string): string | null {
  if (kind === "Pod") return "/spec";
  if (["ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job"].includes(kind)) return "/spec/template/spec";
  return null;
}

function at(doc: unknown, pointer: string): unknown {
  try {
    return getValueByPointer(doc, pointer);
  } catch {
    return undefined;
  }
}

/** `overrideImage`: the image with one component added to, replaced or removed. */
function overrideImage(current: string, o: ImageOverrider): { image: string } | { error: string } {
  const c = parseImage(current);
  if ("error" in c) return { error: `failed to parse image value(${current}), error: ${c.error}` };
  const v = o.value ?? "";
  if (o.component === "Registry") c.hostname = o.operator === "add" ? c.hostname + v : o.operator === "replace" ? v : "";
  else if (o.component === "Repository") c.repository = o.operator === "add" ? c.repository + v : o.operator === "replace" ? v : "";
  else if (o.component === "Tag") {
    if (o.operator === "add") setTagOrDigest(c, (c.tag || c.digest) + v);
    else if (o.operator === "replace") setTagOrDigest(c, v);
    else if (c.tag) c.tag = "";
    else c.digest = "";
  } else return { error: `unsupported image component(${String(o.component)})` };
  return { image: imageString(c) };
}

/** `obtainImageValue`: the string at a predicate path, walked as Karmada walks it (maps, and lists by index). */
function obtainImageValue(doc: unknown, path: string): { image: string } | { error: string } {
  const segments = path.replace(/^\/+|\/+$/g, "").split("/");
  let current: unknown = doc;
  for (let i = 0; i < segments.length - 1; i++) {
    const next = isMap(current) ? current[segments[i]!] : undefined;
    if (isMap(next)) current = next;
    else if (Array.isArray(next)) {
      const index = segments[i + 1]!;
      if (!/^[+-]?\d+$/.test(index)) return { error: `path(${index}) of rawObj's is not number` };
      const el = next[Number(index)];
      if (!isMap(el)) return { error: `path(${index}) of rawObj's type is not map[string]interface{} and []interface{}` };
      current = el;
      i++;
    } else return { error: `path(${segments[i]}) of rawObj's type is not map[string]interface{} and []interface{}` };
  }
  const last = segments[segments.length - 1]!;
  const image = isMap(current) ? current[last] : undefined;
  if (typeof image !== "string") return { error: `failed to convert path(${last}) to string` };
  return { image };
}

/** `buildPatches`: one replace per image the overrider concerns. */
function imagePatches(doc: KubeObject, o: ImageOverrider): Built {
  if (o.predicate) {
    const v = obtainImageValue(doc, o.predicate.path);
    if ("error" in v) return { error: `failed to obtain imageValue with predicate path(${o.predicate.path}), error: ${v.error}` };
    if (!o.predicate.path.startsWith("/")) return { error: "imagePath should be start with / character" };
    const n = overrideImage(v.image, o);
    return "error" in n ? n : { ops: [{ op: "replace", path: o.predicate.path, value: n.image }] };
  }
  const prefix = podSpecPath(doc.kind);
  if (!prefix) return { ops: [] };
  const containers = at(doc, `${prefix}/containers`);
  if (containers !== undefined && containers !== null && !Array.isArray(containers))
    return { error: `failed to convert ${doc.kind} from unstructured object: containers is not a list` };
  const ops: OverrideOperation[] = [];
  for (const [i, c] of ((containers as unknown[] | undefined) ?? []).entries()) {
    const image = isMap(c) && typeof c.image === "string" ? c.image : "";
    const n = overrideImage(image, o);
    if ("error" in n) return n;
    ops.push({ op: "replace", path: `${prefix}/containers/${i}/image`, value: n.image });
  }
  return { ops };
}

/** `buildCommandArgsPatches`: the named containers' command (or args) with values added or removed. */
function commandArgsPatches(doc: KubeObject, target: "command" | "args", o: CommandArgsOverrider): Built {
  const prefix = podSpecPath(doc.kind);
  if (!prefix) return { ops: [] };
  const path = `${prefix}/containers`;
  const containers = at(doc, path);
  if (containers !== undefined && containers !== null && !Array.isArray(containers))
    return {
      error: `failed to retrieves path(${path.slice(1)}) from rawObj, error: .${path.slice(1).replace(/\//g, ".")} accessor error: ${JSON.stringify(containers)} is of the type ${typeof containers}, expected []interface{}`,
    };
  const ops: OverrideOperation[] = [];
  for (const [i, c] of ((containers as unknown[] | undefined) ?? []).entries()) {
    if (!isMap(c) || c.name !== o.containerName) continue;
    const current = c[target];
    const at2 = `${path}/${i}/${target}`;
    const values = o.value ?? [];
    const apply = (cur: string[]) => (o.operator === "add" ? [...cur, ...values] : o.operator === "remove" ? cur.filter((v) => !values.includes(v)) : cur);
    if (current === undefined || current === null) ops.push({ op: "add", path: at2, value: apply([]) });
    else if (!Array.isArray(current)) return { error: `the ${target} of container ${o.containerName} is not a list` };
    else ops.push({ op: "replace", path: at2, value: apply(current.map((v) => (typeof v === "string" ? v : JSON.stringify(v)))) });
  }
  return { ops };
}

/** `buildLabelAnnotationOverriderPatches`: add (creating the map), or replace and remove the keys present. */
function labelAnnotationPatches(doc: KubeObject, field: "labels" | "annotations", o: LabelAnnotationOverrider): Built {
  const ops: OverrideOperation[] = [];
  const current = (doc.metadata as unknown as Json)[field];
  let exists = isMap(current);
  for (const [key, value] of Object.entries(o.value ?? {})) {
    if (o.operator === "remove" || o.operator === "replace") {
      if (!isMap(current) || !Object.prototype.hasOwnProperty.call(current, key)) continue;
    } else if (!exists) {
      ops.push({ op: "add", path: `/metadata/${field}`, value: {} });
      exists = true;
    }
    ops.push(
      o.operator === "remove"
        ? { op: "remove", path: `/metadata/${field}/${escapePointer(key)}` }
        : { op: o.operator, path: `/metadata/${field}/${escapePointer(key)}`, value },
    );
  }
  return { ops };
}

/** Why fast-json-patch refused a sub-patch, short. */
const patchError = (e: unknown) => (e as { name?: string; message?: string }).message?.split("\n")[0] ?? String(e);

/** `applyFieldOverriders` (one overrider): the string at `fieldPath` parsed as JSON or YAML, patched, and written back as a string. */
function fieldPatches(doc: KubeObject, o: FieldOverrider): Built {
  if (o.fieldPath !== "" && !o.fieldPath.startsWith("/")) return { error: 'JSON pointer must be empty or start with a "/"' };
  const raw = at(doc, o.fieldPath);
  if (raw === undefined) return { error: `object has no key at path(${o.fieldPath})` };
  if (typeof raw !== "string") return { error: `Get object's value by overrider's path(${o.fieldPath}) is not string` };
  const yaml = (o.yaml ?? []).length > 0;
  const subOps = yaml ? o.yaml! : (o.json ?? []);
  if (subOps.length === 0) return { ops: [{ op: "replace", path: o.fieldPath, value: "" }] };
  let parsed: unknown;
  try {
    parsed = yaml ? parseYaml(raw, { maxAliasCount: 100 }) : JSON.parse(raw);
  } catch (e) {
    return { error: yaml ? `error converting YAML to JSON: ${patchError(e)}` : `invalid JSON in the field at ${o.fieldPath}: ${patchError(e)}` };
  }
  const patch = subOps.map((p: SubPatchOperation) => ({
    op: p.operator,
    path: p.subPath,
    ...(p.operator !== "remove" ? { value: p.value === undefined ? null : p.value } : {}),
  })) as Operation[];
  let out: unknown;
  try {
    out = applyPatch(parsed, patch, true, false, true).newDocument;
  } catch (e) {
    return { error: `failed to apply the ${yaml ? "YAML" : "JSON"} patch to the field at ${o.fieldPath}: ${patchError(e)}` };
  }
  const text = yaml ? stringifyYaml(out, { sortMapEntries: true, indentSeq: false, lineWidth: 0 }) : JSON.stringify(out);
  return { ops: [{ op: "replace", path: o.fieldPath, value: text }] };
}

/** The steps of one rule's overriders, in Karmada's order (`applyPolicyOverriders`). */
function stepsOf(o: Overriders, source: string): CompiledStep[] {
  const steps: CompiledStep[] = [];
  const step = (build: (doc: KubeObject) => Built) => steps.push({ source, build });
  for (const im of o.imageOverrider ?? []) step((d) => imagePatches(d, im));
  for (const c of o.commandOverrider ?? []) step((d) => commandArgsPatches(d, "command", c));
  for (const a of o.argsOverrider ?? []) step((d) => commandArgsPatches(d, "args", a));
  for (const l of o.labelsOverrider ?? []) step((d) => labelAnnotationPatches(d, "labels", l));
  for (const a of o.annotationsOverrider ?? []) step((d) => labelAnnotationPatches(d, "annotations", a));
  for (const f of o.fieldOverrider ?? []) step((d) => fieldPatches(d, f));
  const plain = o.plaintext ?? [];
  if (plain.length > 0) {
    // `parseJSONPatchesByPlaintext`: one patch; a missing value is JSON null.
    const ops: OverrideOperation[] = plain.map((p) =>
      p.operator === "remove" ? { op: "remove", path: p.path } : { op: p.operator, path: p.path, value: p.value === undefined ? null : p.value },
    );
    step(() => ({ ops }));
  }
  return steps;
}

// ---------------------------------------------------------------------------------------------
// The policies for a cluster.

interface CompiledPolicy {
  p: KarmadaPolicy;
  source: string;
  rules: {
    targetCluster: NonNullable<OverrideSpec["targetCluster"]> | null;
    overriders: Overriders;
    steps: CompiledStep[];
    /** Whether the rule's `targetCluster` matches a cluster (its label selector parsed once). */
    matches: (cluster: KarmadaCluster) => boolean;
  }[];
}

/** `targetCluster` as a matcher: Karmada's `util.ClusterMatches`, the label selector parsed once (an invalid one matches no cluster). */
function compileTarget(affinity: NonNullable<OverrideSpec["targetCluster"]> | null): (cluster: KarmadaCluster) => boolean {
  if (!affinity) return () => true;
  const { labelSelector, ...rest } = affinity;
  let set: ReturnType<typeof fromLabelSelector> | null = null;
  if (labelSelector) {
    try {
      set = fromLabelSelector(labelSelector);
    } catch {
      return () => false;
    }
  }
  return (cluster) => {
    if (set && !matches(set, cluster.labels)) return false;
    try {
      return clusterMatches(cluster, rest);
    } catch {
      return false;
    }
  };
}

/** `Name` for a ClusterOverridePolicy, `namespace/name` for an OverridePolicy (Karmada's events). */
const policySource = (p: KarmadaPolicy) =>
  p.kind === "ClusterOverridePolicy" ? `ClusterOverridePolicy ${JSON.stringify(p.name)}` : `OverridePolicy ${JSON.stringify(`${p.namespace}/${p.name}`)}`;

function compilePolicy(p: KarmadaPolicy): CompiledPolicy {
  const spec = p.spec ?? {};
  const source = policySource(p);
  const rules =
    (spec.overrideRules ?? []).length > 0 ? spec.overrideRules! : [{ targetCluster: spec.targetCluster ?? null, overriders: spec.overriders ?? {} }];
  return {
    p,
    source,
    rules: rules.map((r) => ({
      targetCluster: r.targetCluster ?? null,
      overriders: r.overriders ?? {},
      steps: stepsOf(r.overriders ?? {}, source),
      matches: compileTarget(r.targetCluster ?? null),
    })),
  };
}

const byName = (a: CompiledPolicy, b: CompiledPolicy) => (a.p.name < b.p.name ? -1 : a.p.name > b.p.name ? 1 : 0);

/** How a renderer's objects are judged by the policies' selectors. */
export interface KarmadaCompileOptions {
  /**
   * The namespace an object is in for the policies (which OverridePolicies may select it, and a
   * selector's `namespace`): by default its own. A ManifestWorkReplicaSet's manifests are objects
   * of the replica set's namespace (the hub namespace that holds them), whatever member namespace
   * they name (docs/overrides.md).
   */
  namespaceOf?: (o: KubeObject) => string;
}

/**
 * Compiles `policies` (every ClusterOverridePolicy and the OverridePolicies of the namespaces
 * concerned) for the clusters a renderer renders for (see the module comment): Karmada's
 * propagation policies, KubeFleet's placements, ManifestWorkReplicaSets and template add-ons.
 */
export function compileKarmadaOverrides(policies: readonly KarmadaPolicy[], opts: KarmadaCompileOptions = {}): KarmadaOverrides {
  const namespaceOf = opts.namespaceOf ?? ((o: KubeObject) => o.metadata.namespace ?? "");
  const compiled = policies.map(compilePolicy);
  const cops = compiled.filter((c) => c.p.kind === "ClusterOverridePolicy").sort(byName);
  const ops = compiled.filter((c) => c.p.kind === "OverridePolicy").sort(byName);
  if (compiled.length === 0)
    return {
      empty: true,
      forCluster: () => ({ key: "", contentKeys: () => new Map(), apply: (object) => ({ ok: true, object, clusterOverrides: [], overrides: [] }) }),
    };
  return {
    empty: false,
    forCluster(cluster) {
      const matched = new Map<CompiledPolicy, number[]>();
      const keyParts: unknown[] = [];
      for (const c of [...cops, ...ops]) {
        const idx = c.rules.flatMap((r, i) => (r.matches(cluster) ? [i] : []));
        if (idx.length === 0) continue;
        matched.set(c, idx);
        keyParts.push([c.p.kind, c.p.namespace, c.p.name, idx]);
      }
      return {
        key: JSON.stringify(keyParts),
        contentKeys() {
          const out = new Map<string, string>();
          for (const [c, idx] of matched) {
            const rules = idx.map((i) => ({ targetCluster: c.rules[i]!.targetCluster, overriders: c.rules[i]!.overriders }));
            out.set(`${c.p.kind}/${c.p.namespace}/${c.p.name}`, JSON.stringify([c.p.spec?.resourceSelectors ?? [], rules]));
          }
          return out;
        },
        apply(object, owned = false) {
          const ns = namespaceOf(object);
          const selected = (list: CompiledPolicy[]) =>
            list
              .filter((c) => matched.has(c))
              .map((c) => ({ c, priority: policyPriority(object, ns, c.p.spec?.resourceSelectors ?? []) }))
              .filter((x) => x.priority > 0)
              .sort((a, b) => a.priority - b.priority || byName(a.c, b.c))
              .map((x) => x.c);
          const groups = [selected(cops), ns ? selected(ops.filter((c) => c.p.namespace === ns)) : []];
          const steps: CompiledStep[] = [];
          const applied: AppliedOverride[][] = [[], []];
          groups.forEach((group, g) => {
            for (const c of group)
              for (const i of matched.get(c)!) {
                const r = c.rules[i]!;
                steps.push(...r.steps);
                applied[g]!.push({ policyName: c.p.name, overriders: r.overriders });
              }
          });
          if (applied[0]!.length === 0 && applied[1]!.length === 0) return { ok: true, object, clusterOverrides: [], overrides: [] };
          const target = formatOverrideTarget(object);
          const out = applyOverrideSteps(object, steps, cluster, undefined, owned);
          if (!out.ok) return { ok: false, message: `${out.source} failed to apply on ${target} for cluster ${cluster.name}: ${out.message}` };
          return { ok: true, object: out.object ?? object, clusterOverrides: applied[0]!, overrides: applied[1]! };
        },
      };
    },
  };
}

/**
 * Karmada's `AppliedOverrides.MarshalJSON`: the applied items sorted by policy name, as JSON, or
 * undefined when there are none (the annotation is not set then).
 */
export function appliedOverridesJson(items: readonly AppliedOverride[]): string | undefined {
  if (items.length === 0) return undefined;
  const sorted = [...items].sort((a, b) => (a.policyName < b.policyName ? -1 : a.policyName > b.policyName ? 1 : 0));
  return JSON.stringify(sorted.map((i) => ({ policyName: i.policyName, overriders: i.overriders })));
}
