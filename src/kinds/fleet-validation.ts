/**
 * KubeFleet's validation of a ClusterResourcePlacement or ResourcePlacement, as its CRDs' CEL
 * rules (kubefleet-dev/kubefleet `apis/placement/v1beta1/clusterresourceplacement_types.go`,
 * `+kubebuilder:validation:XValidation`) and its validating webhook (`pkg/utils/validator/placement.go`
 * `validatePlacement`, `HandlePlacementValidation`) check it, with their messages. The CEL rules
 * are checked first and, as the apiserver runs the webhook only on an object its schema admits,
 * the webhook's rules only when they pass. Pure: the served kinds come from a lookup.
 */
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import type { LabelSelectorInput } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { formatQuantity, parseQuantityExact, tryParseQuantity, type Quantity } from "../k8s/quantity.ts";
import { isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from "../k8s/validation.ts";

/** Finds a served kind by API group, version and kind name (e.g. `apps`, `v1`, `Deployment`), or undefined. */
export type KindLookup = (group: string, version: string, kind: string) => KindDefinition | undefined;

/** A `ResourceSelectorTerm` as stored. */
export type ResourceSelectorTerm = {
  group: string;
  version: string;
  kind: string;
  name?: string;
  labelSelector?: LabelSelectorInput;
  selectionScope?: "NamespaceOnly" | "NamespaceWithResources" | "NamespaceWithResourceSelectors";
};

/**
 * A `Toleration` (KubeFleet: key, operator Equal/Exists, value, effect NoSchedule), with
 * Flotilla's `tolerationSeconds` (OCM's: how long after the taint's `timeAdded` it tolerates it;
 * docs/kubefleet.md "Evictions, budgets, drain").
 */
export type FleetToleration = {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number | null;
};

/** A `PropertySelectorRequirement`. */
export type PropertyRequirement = {
  name: string;
  operator: string;
  values: string[];
};

/** A `ClusterSelectorTerm`. */
export type ClusterSelectorTerm = {
  labelSelector?: LabelSelectorInput;
  propertySelector?: { matchExpressions?: PropertyRequirement[] };
  propertySorter?: { name: string; sortOrder: string };
};

/** A `PlacementPolicy` as stored (defaults applied: `placementType` is set). */
export type PlacementPolicy = {
  placementType?: "PickAll" | "PickN" | "PickFixed";
  clusterNames?: string[];
  numberOfClusters?: number;
  affinity?: {
    clusterAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { clusterSelectorTerms?: ClusterSelectorTerm[] };
      preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; preference: ClusterSelectorTerm }[];
    };
  };
  topologySpreadConstraints?: { maxSkew?: number; topologyKey: string; whenUnsatisfiable?: string }[];
  tolerations?: FleetToleration[];
};

/** A `RolloutStrategy` as stored. */
export type RolloutStrategy = {
  type?: string;
  rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string; unavailablePeriodSeconds?: number };
  applyStrategy?: {
    comparisonOption?: string;
    whenToApply?: string;
    type?: string;
    allowCoOwnership?: boolean;
    serverSideApplyConfig?: { force?: boolean };
    whenToTakeOver?: string;
  };
  deleteStrategy?: { propagationPolicy?: string };
  reportBackStrategy?: { type?: string; destination?: string };
};

/** A `PlacementSpec` as stored. */
export type PlacementSpec = {
  resourceSelectors?: ResourceSelectorTerm[];
  policy?: PlacementPolicy;
  strategy?: RolloutStrategy;
  revisionHistoryLimit?: number;
  statusReportingScope?: string;
};

const isNamespaceSelector = (s: ResourceSelectorTerm) => s.kind === "Namespace" && s.group === "" && s.version === "v1";
const isNwrs = (s: ResourceSelectorTerm) => isNamespaceSelector(s) && s.selectionScope === "NamespaceWithResourceSelectors";
const has = (v: unknown) => v !== undefined && v !== null;

/** Go's `%+v` of a Toleration, as KubeFleet's messages print it. */
function tolerationString(t: FleetToleration): string {
  return `{Key:${t.key ?? ""} Operator:${t.operator ?? ""} Value:${t.value ?? ""} Effect:${t.effect ?? ""}}`;
}

/** apimachinery's `errors.NewAggregate(...).Error()`: one message as is, several as `[a, b]` (duplicates dropped). */
export function aggregate(messages: string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(", ")}]`;
}

/** `schema.GroupVersionKind.String()`: `apps/v1, Kind=Deployment` (`/v1, Kind=Namespace` for core). */
export function gvkString(s: { group: string; version: string; kind: string }): string {
  return `${s.group}/${s.version}, Kind=${s.kind}`;
}

/** gogo-protobuf's `(*metav1.LabelSelector).String()`, as `%+v` prints a selector. */
export function goLabelSelector(sel: LabelSelectorInput | null | undefined): string {
  if (!sel) return "nil";
  const labels = Object.keys(sel.matchLabels ?? {})
    .sort()
    .map((k) => `${k}: ${sel.matchLabels![k]},`)
    .join("");
  const exprs = (sel.matchExpressions ?? [])
    .map((e) => `LabelSelectorRequirement{Key:${e.key},Operator:${e.operator},Values:[${(e.values ?? []).join(" ")}],},`)
    .join("");
  return `&LabelSelector{MatchLabels:map[string]string{${labels}},MatchExpressions:[]LabelSelectorRequirement{${exprs}},}`;
}

/** `%+v` of a `ResourceSelectorTerm`. */
export function goResourceSelectorTerm(s: ResourceSelectorTerm): string {
  return `{Group:${s.group ?? ""} Version:${s.version ?? ""} Kind:${s.kind ?? ""} Name:${s.name ?? ""} LabelSelector:${goLabelSelector(s.labelSelector)} SelectionScope:${s.selectionScope ?? ""}}`;
}

/**
 * The CRD's CEL rules (x-kubernetes-validations) on `spec`, with the messages the CRD declares,
 * as `Invalid value: "object": <message>` causes at the rule's field. `old` is the stored object
 * on an update (the transition rules compare with it).
 */
export function celRules(spec: PlacementSpec, old: PlacementSpec | undefined, clusterScoped: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const rule = (field: string, message: string) => causes.push({ field, reason: "FieldValueInvalid", message: `Invalid value: "object": ${message}` });
  const selectors = spec.resourceSelectors ?? [];
  if (old && has(old.policy) && !has(spec.policy)) rule("spec", "policy cannot be removed once set");
  if (clusterScoped) {
    if (spec.statusReportingScope === "NamespaceAccessible" && selectors.filter((x) => x.kind === "Namespace").length !== 1)
      rule("spec", "when statusReportingScope is NamespaceAccessible, exactly one resourceSelector with kind 'Namespace' is required");
    if (old && has(old.statusReportingScope) && spec.statusReportingScope !== old.statusReportingScope) rule("spec", "statusReportingScope is immutable");
  }
  const nwrs = selectors.filter(isNwrs);
  if (nwrs.length > 1) rule("spec", "only one namespace selector with NamespaceWithResourceSelectors mode is allowed");
  if (nwrs.length > 0 && nwrs.filter((x) => (x.name ?? "").length > 0 && !has(x.labelSelector)).length !== 1)
    rule("spec", "namespace selector with NamespaceWithResourceSelectors mode must select by name (not by label)");
  if (nwrs.length > 0 && selectors.filter(isNamespaceSelector).length !== 1)
    rule("spec", "when using NamespaceWithResourceSelectors mode, only one namespace selector is allowed (cannot mix with other namespace selectors)");
  if (!selectors.every((x) => !((x.name ?? "").length > 0 && has(x.labelSelector))))
    rule("spec.resourceSelectors", "name and labelSelector are mutually exclusive in a resource selector");
  const p = spec.policy;
  if (p) {
    const oldType = old?.policy?.placementType;
    if (old?.policy && oldType !== p.placementType) rule("spec.policy", "placement type is immutable");
    if (p.placementType === "PickFixed" && (has(p.affinity) || has(p.numberOfClusters) || has(p.topologySpreadConstraints) || has(p.tolerations)))
      rule("spec.policy", "affinity, numberOfClusters, topologySpreadConstraints, and tolerations cannot be set when placementType is PickFixed");
    if (p.placementType === "PickAll" && (has(p.clusterNames) || has(p.numberOfClusters) || has(p.topologySpreadConstraints)))
      rule("spec.policy", "clusterNames, numberOfClusters, and topologySpreadConstraints cannot be set when placementType is PickAll");
    if (p.placementType === "PickN" && (has(p.clusterNames) || !has(p.numberOfClusters)))
      rule("spec.policy", "clusterNames cannot be set and numberOfClusters must be set when placementType is PickN");
    const tolerations = p.tolerations ?? [];
    if (!tolerations.every((x) => x.operator !== "Exists" || !x.value)) rule("spec.policy.tolerations", "value must be empty when operator is Exists");
    if (!tolerations.every((x) => (x.key ?? "").length > 0 || x.operator === "Exists"))
      rule("spec.policy.tolerations", "operator must be Exists when key is empty");
  }
  if (old?.strategy?.type === "External" && (spec.strategy?.type ?? "RollingUpdate") !== "External")
    rule("spec.strategy.type", "cannot change rollout strategy type from 'External' to other types");
  const rb = spec.strategy?.reportBackStrategy;
  if (rb && rb.type === "Mirror" && !rb.destination)
    rule("spec.strategy.reportBackStrategy", "when reportBackStrategy.type is 'Mirror', a destination must be specified");
  return causes;
}

const SELECTOR_OPERATORS: Record<string, string> = { In: "in", NotIn: "notin", Exists: "exists", DoesNotExist: "!" };

/** Go's `%#v` of a `[]string` (nil when empty, as `LabelSelectorAsSelector` copies an expression's values with `append([]string(nil), ...)`). */
function goStrings(values: readonly string[]): string {
  return values.length === 0 ? "[]string(nil)" : `[]string{${values.map((v) => JSON.stringify(v)).join(", ")}}`;
}

/**
 * The error apimachinery's `metav1.LabelSelectorAsSelector` returns for a selector, or null: what
 * KubeFleet's `validateLabelSelector` wraps. As apimachinery's, it stops at the first requirement
 * in error (matchLabels first, in key order; then matchExpressions) and gives every error of that
 * requirement (`labels.NewRequirement`'s field errors, aggregated: `values: Invalid value:
 * []string(nil): for 'in', 'notin' operators, values set can't be empty`), or an unknown
 * operator's `"Near" is not a valid label selector operator`.
 */
export function labelSelectorAsSelectorError(sel: LabelSelectorInput): string | null {
  const requirement = (key: string, op: string, values: readonly string[]): string | null => {
    const errs: string[] = [];
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length) errs.push(`key: Invalid value: ${JSON.stringify(key)}: ${keyErrs.join("; ")}`);
    if ((op === "in" || op === "notin") && values.length === 0)
      errs.push(`values: Invalid value: ${goStrings(values)}: for 'in', 'notin' operators, values set can't be empty`);
    if ((op === "exists" || op === "!") && values.length !== 0)
      errs.push(`values: Invalid value: ${goStrings(values)}: values set must be empty for exists and does not exist`);
    for (const [i, v] of values.entries()) {
      const valueErrs = isValidLabelValue(v);
      if (valueErrs.length) errs.push(`values[${i}][${key}]: Invalid value: ${JSON.stringify(v)}: ${valueErrs.join("; ")}`);
    }
    return errs.length ? aggregate(errs) : null;
  };
  for (const k of Object.keys(sel.matchLabels ?? {}).sort()) {
    const e = requirement(k, "=", [sel.matchLabels![k]!]);
    if (e) return e;
  }
  for (const expr of sel.matchExpressions ?? []) {
    const op = SELECTOR_OPERATORS[expr.operator];
    if (!op) return `${JSON.stringify(expr.operator)} is not a valid label selector operator`;
    const e = requirement(expr.key, op, expr.values ?? []);
    if (e) return e;
  }
  return null;
}

function labelSelectorError(sel: LabelSelectorInput | undefined, parent: string): string | null {
  if (!sel) return null;
  const err = labelSelectorAsSelectorError(sel);
  return err ? `the labelSelector in ${parent} ${goLabelSelector(sel)} is invalid: ${err}` : null;
}

/** KubeFleet's `validateTolerations`. */
export function tolerationErrors(tolerations: FleetToleration[] | undefined): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const t of tolerations ?? []) {
    const s = tolerationString(t);
    if (t.key) for (const msg of isQualifiedName(t.key)) out.push(`invalid toleration key ${s}: ${msg}`);
    if (t.operator === "Exists" && t.value) out.push(`invalid toleration ${s}: toleration value needs to be empty, when operator is Exists`);
    if (t.operator === "Equal" || t.operator === undefined) {
      if (!t.key) out.push(`invalid toleration ${s}: toleration key cannot be empty, when operator is Equal`);
      for (const msg of isValidLabelValue(t.value ?? "")) out.push(`invalid toleration value ${s}: ${msg}`);
    }
    const k = JSON.stringify([t.key ?? "", t.operator ?? "", t.value ?? "", t.effect ?? ""]);
    if (seen.has(k)) out.push(`toleration ${s} already exists, tolerations must be unique`);
    seen.add(k);
  }
  return out;
}

const CAPACITY_TYPES = ["allocatable", "available", "total"];
const RESOURCE_PREFIX = "resources.kubernetes-fleet.io/";

/** KubeFleet's `validateName` of a property name. @returns the error, or null */
export function propertyNameError(name: string): string | null {
  if (name.startsWith(RESOURCE_PREFIX)) {
    const rest = name.slice(RESOURCE_PREFIX.length);
    const dash = rest.indexOf("-");
    if (dash < 0) return `invalid resource property name ${name}, expected format is [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]`;
    if (!CAPACITY_TYPES.includes(rest.slice(0, dash)))
      return `invalid capacity type in resource property name ${name}, supported values are [${CAPACITY_TYPES.join(" ")}]`;
    const errs = isQualifiedName(name);
    return errs.length ? `property name ${name} is not valid: ${errs.join("; ")}` : null;
  }
  const segs = name.split("/");
  if (segs.length <= 1) {
    const errs = isQualifiedName(name);
    return errs.length ? `property name ${name} is not valid: ${errs.join("; ")}` : null;
  }
  const prefix = segs[0]!;
  const sub = isDNS1123Subdomain(prefix);
  const qn = isQualifiedName(prefix);
  if (sub.length && qn.length)
    return `property name first segment ${prefix} is not valid: it is neither a valid DNS subdomain (${sub.join("; ")}) nor a valid qualified name (${qn.join("; ")})`;
  for (const seg of segs.slice(1)) {
    const errs = isQualifiedName(seg);
    if (errs.length) return `property name segment ${seg} is not valid: ${errs.join("; ")}`;
  }
  return null;
}

const OPERATORS = ["Gt", "Ge", "Eq", "Ne", "Lt", "Le"];

/** KubeFleet's `validatePropertySelectorRequirements`: names, operators, values, and contradictions per property. */
export function propertyRequirementErrors(reqs: PropertyRequirement[]): string[] {
  const out: string[] = [];
  const byName = new Map<string, PropertyRequirement[]>();
  for (const r of reqs) {
    const nameErr = propertyNameError(r.name);
    if (nameErr) out.push(`invalid property name ${r.name}: ${nameErr}`);
    const opErr = operatorError(r.operator, r.values ?? []);
    if (opErr) out.push(`invalid requirement on property ${r.name}: ${opErr}`);
    byName.set(r.name, [...(byName.get(r.name) ?? []), r]);
  }
  for (const [name, rs] of byName) {
    const err = consistencyError(rs);
    if (err) out.push(`inconsistent requirements on property ${name}: ${err}`);
  }
  return out;
}

function operatorError(op: string, values: string[]): string | null {
  if (!OPERATORS.includes(op)) return `unsupported operator ${op}`;
  if (values.length !== 1) return `operator ${op} requires exactly one value, got ${values.length}`;
  for (const v of values)
    if (tryParseQuantity(v) === undefined)
      return `value ${JSON.stringify(v)} is not a valid resource.Quantity: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`;
  return null;
}

/** A parsed requirement value: exact (nano-units) with its canonical text. */
interface ExactQuantity {
  q: bigint;
  readonly text: string;
}

/** A bound of KubeFleet's `requirementBounds`: its value and strictness (Gt, Lt). */
interface Bound {
  v: ExactQuantity;
  strict: boolean;
}

/**
 * `resource.ParseQuantity`: the exact value (nano-units) and its canonical text
 * (`Quantity.String()`: `1000m` is `1`, `2.5` is `2500m`; written only for a message), or undefined.
 */
function exactQuantity(text: string): ExactQuantity | undefined {
  let parsed = EXACT_CACHE.get(text);
  if (parsed === undefined) {
    try {
      parsed = parseQuantityExact(text);
    } catch {
      parsed = null;
    }
    if (EXACT_CACHE.size >= 1024) EXACT_CACHE.clear();
    EXACT_CACHE.set(text, parsed);
  }
  if (parsed === null) return undefined;
  const { nanos, format } = parsed;
  return {
    q: nanos,
    get text() {
      return formatQuantity(nanos, format);
    },
  };
}

/** Parsed requirement values by text (null: not a quantity); bounded, as placements repeat a few values. */
const EXACT_CACHE = new Map<string, Quantity | null>();

/**
 * KubeFleet's `validateRequirementsConsistency` of the requirements on one property: two Eq
 * values, an Eq and a Ne of one value, bounds excluding every value, an Eq outside the bounds.
 * Compares quantities exactly (`Quantity.Cmp`) and prints them canonically (`Quantity.String()`),
 * as KubeFleet's messages do; malformed requirements are skipped (their own error says why).
 */
function consistencyError(reqs: PropertyRequirement[]): string | null {
  if (reqs.length < 2) return null;
  let lower: Bound | null = null;
  let upper: Bound | null = null;
  let eq: ExactQuantity | null = null;
  const ne: bigint[] = [];
  for (const r of reqs) {
    if (!OPERATORS.includes(r.operator) || (r.values ?? []).length !== 1) continue;
    const v = exactQuantity(r.values[0]!);
    if (v === undefined) continue;
    switch (r.operator) {
      case "Gt":
      case "Ge": {
        const b = { v, strict: r.operator === "Gt" };
        if (!lower || v.q > lower.v.q || (v.q === lower.v.q && b.strict && !lower.strict)) lower = b;
        break;
      }
      case "Lt":
      case "Le": {
        const b = { v, strict: r.operator === "Lt" };
        if (!upper || v.q < upper.v.q || (v.q === upper.v.q && b.strict && !upper.strict)) upper = b;
        break;
      }
      case "Eq":
        if (eq && eq.q !== v.q) return `conflicting Eq values ${eq.text} and ${v.text}`;
        eq = v;
        break;
      case "Ne":
        ne.push(v.q);
        break;
    }
  }
  if (eq && ne.includes(eq.q)) return `conflicting Eq and Ne on same value ${eq.text}`;
  const lo = lower as Bound | null;
  const up = upper as Bound | null;
  if (lo && up && (lo.v.q > up.v.q || (lo.v.q === up.v.q && (lo.strict || up.strict))))
    return `lower bound (${lo.v.text}) and upper bound (${up.v.text}) exclude all values`;
  if (eq && lo && (eq.q < lo.v.q || (eq.q === lo.v.q && lo.strict))) return `eq value ${eq.text} violates lower bound ${lo.v.text}`;
  if (eq && up && (eq.q > up.v.q || (eq.q === up.v.q && up.strict))) return `eq value ${eq.text} violates upper bound ${up.v.text}`;
  return null;
}

function clusterSelectorErrors(terms: ClusterSelectorTerm[]): string[] {
  const out: string[] = [];
  for (const t of terms) {
    const l = labelSelectorError(t.labelSelector, "cluster selector");
    if (l) out.push(l);
    if (t.propertySorter) out.push("PropertySorter is not allowed for RequiredDuringSchedulingIgnoredDuringExecution affinity");
    if (t.propertySelector) out.push(...propertyRequirementErrors(t.propertySelector.matchExpressions ?? []));
  }
  return out;
}

function preferredErrors(prefs: { weight: number; preference: ClusterSelectorTerm }[]): string[] {
  const out: string[] = [];
  for (const p of prefs) {
    const l = labelSelectorError(p.preference?.labelSelector, "preferred cluster selector");
    if (l) out.push(l);
    if (p.preference?.propertySelector) out.push("PropertySelector is not allowed for PreferredDuringSchedulingIgnoredDuringExecution affinity");
    const sorter = p.preference?.propertySorter;
    if (sorter) {
      const n = propertyNameError(sorter.name);
      if (n) out.push(n);
      if (sorter.sortOrder !== "Descending" && sorter.sortOrder !== "Ascending") out.push(`invalid property sort order ${sorter.sortOrder}`);
    }
  }
  return out;
}

/** KubeFleet's `validatePlacementPolicy`: the errors of each placement type's rules. */
export function policyErrors(policy: PlacementPolicy): string[] {
  const out: string[] = [];
  const type = policy.placementType;
  const affinity = policy.affinity?.clusterAffinity;
  const required = affinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const preferred = affinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  if (type === "PickFixed") {
    const seen = new Set<string>();
    for (const name of policy.clusterNames ?? []) {
      const errs = isDNS1123Subdomain(name);
      if (errs.length) out.push(`PickFixed cluster name ${name} is not a valid member name: ${errs.join("; ")}`);
      if (name.length > 63) out.push(`PickFixed cluster name ${name} cannot have length exceeding 63`);
      if (seen.has(name)) {
        out.push("cluster names must be unique for policy type PickFixed");
        break;
      }
      seen.add(name);
    }
    if (has(policy.numberOfClusters)) out.push("number of clusters must be nil for policy type PickFixed, only valid for PickN placement policy type");
    if (has(policy.affinity)) out.push("affinity must be nil for policy type PickFixed, only valid for PickAll/PickN placement policy types");
    if ((policy.topologySpreadConstraints ?? []).length > 0)
      out.push("topology spread constraints needs to be empty for policy type PickFixed, only valid for PickN policy type");
    if (has(policy.tolerations)) out.push("tolerations needs to be empty for policy type PickFixed, only valid for PickAll/PickN");
  } else if (type === "PickAll" || type === undefined) {
    if ((policy.clusterNames ?? []).length > 0) out.push("cluster names needs to be empty for policy type PickAll, only valid for PickFixed policy type");
    if (has(policy.numberOfClusters)) out.push("number of clusters must be nil for policy type PickAll, only valid for PickN placement policy type");
    if (required) out.push(...clusterSelectorErrors(required.clusterSelectorTerms ?? []));
    if (preferred.length > 0) out.push("PreferredDuringSchedulingIgnoredDuringExecution will be ignored for placement policy type PickAll");
    if ((policy.topologySpreadConstraints ?? []).length > 0)
      out.push("topology spread constraints needs to be empty for policy type PickAll, only valid for PickN policy type");
    out.push(...tolerationErrors(policy.tolerations));
  } else if (type === "PickN") {
    if ((policy.clusterNames ?? []).length > 0) out.push("cluster names needs to be empty for policy type PickN, only valid for PickFixed policy type");
    if (has(policy.numberOfClusters)) {
      if (policy.numberOfClusters! < 0) out.push(`number of clusters cannot be ${policy.numberOfClusters} for policy type PickN`);
    } else out.push("number of cluster cannot be nil for policy type PickN");
    if (required) out.push(...clusterSelectorErrors(required.clusterSelectorTerms ?? []));
    if (preferred.length > 0) out.push(...preferredErrors(preferred));
    for (const tc of policy.topologySpreadConstraints ?? []) {
      if (tc.whenUnsatisfiable && tc.whenUnsatisfiable !== "DoNotSchedule" && tc.whenUnsatisfiable !== "ScheduleAnyway")
        out.push(`unknown unsatisfiable type ${tc.whenUnsatisfiable}`);
    }
    out.push(...tolerationErrors(policy.tolerations));
  }
  return out;
}

/** apimachinery's `intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)`: null for a malformed string. */
export function scaledValue(v: number | string | undefined, total: number, roundUp: boolean): number | null {
  if (v === undefined) return 0;
  if (typeof v === "number") return v;
  const m = /^(-?[0-9]+)%$/.exec(v);
  if (!m) return null;
  const pct = Number(m[1]);
  return roundUp ? Math.ceil((pct * total) / 100) : Math.floor((pct * total) / 100);
}

/** apimachinery's `getIntOrPercentValueSafely` error for a string IntOrString. */
function intOrPercentError(v: string): string {
  if (!v.endsWith("%")) return "invalid type: string is not a percentage";
  return `invalid value ${JSON.stringify(v)}: strconv.Atoi: parsing ${JSON.stringify(v.slice(0, -1))}: invalid syntax`;
}

/** KubeFleet's `validateRolloutStrategy`. */
export function strategyErrors(s: RolloutStrategy | undefined): string[] {
  const out: string[] = [];
  if (!s) return out;
  if (s.type && s.type !== "RollingUpdate" && s.type !== "External") out.push(`unsupported rollout strategy type \`${s.type}\``);
  const ru = s.rollingUpdate;
  if (ru) {
    if (s.type === "External") out.push("rollingUpdateConifg is not valid for ExternalRollout strategy type");
    if (ru.unavailablePeriodSeconds !== undefined && ru.unavailablePeriodSeconds < 0)
      out.push(`unavailablePeriodSeconds must be greater than or equal to 0, got ${ru.unavailablePeriodSeconds}`);
    for (const [field, v] of [
      ["maxUnavailable", ru.maxUnavailable],
      ["maxSurge", ru.maxSurge],
    ] as const) {
      if (v === undefined) continue;
      const value = scaledValue(v, 10, true);
      if (value === null) out.push(`${field} \`${v}\` is invalid: invalid value for IntOrString: ${intOrPercentError(String(v))}`);
      else if (value < 0) out.push(`${field} must be greater than or equal to 0, got \`${v}\``);
    }
  }
  if (s.applyStrategy && s.applyStrategy.type !== "ServerSideApply" && s.applyStrategy.serverSideApplyConfig)
    out.push("serverSideApplyConfig is only valid for ServerSideApply strategy type");
  return out;
}

/**
 * KubeFleet's webhook (`validatePlacement` plus the update rules of `HandlePlacementValidation`):
 * the name's length, each selector's label selector, kind (served, cluster-scoped for a
 * ClusterResourcePlacement unless in NamespaceWithResourceSelectors mode, namespaced for a
 * ResourcePlacement), the policy and the rollout strategy; on an update, an unchanged placement
 * type and tolerations only added to. Causes carry KubeFleet's messages.
 */
export function webhookRules(obj: KubeObject, old: KubeObject | undefined, clusterScoped: boolean, lookup: KindLookup): StatusCause[] {
  const spec = (obj.spec ?? {}) as PlacementSpec;
  const causes: StatusCause[] = [];
  const add = (field: string, message: string) => causes.push({ field, reason: "FieldValueInvalid", message });
  if (old) {
    const oldSpec = (old.spec ?? {}) as PlacementSpec;
    if ((oldSpec.policy?.placementType ?? "PickAll") !== (spec.policy?.placementType ?? "PickAll"))
      add("spec.policy.placementType", "placement type is immutable");
    const now = new Set((spec.policy?.tolerations ?? []).map((t) => JSON.stringify([t.key ?? "", t.operator ?? "", t.value ?? "", t.effect ?? ""])));
    if ((oldSpec.policy?.tolerations ?? []).some((t) => !now.has(JSON.stringify([t.key ?? "", t.operator ?? "", t.value ?? "", t.effect ?? ""]))))
      add("spec.policy.tolerations", "tolerations have been updated/deleted, only additions to tolerations are allowed");
    if (causes.length > 0) return causes;
  }
  const name = obj.metadata.name ?? "";
  if (name.length > 63) add("metadata.name", "the name field cannot have length exceeding 63");
  const selectors = spec.resourceSelectors ?? [];
  const nwrsMode = selectors.some(isNwrs);
  for (const [i, s] of selectors.entries()) {
    const field = `spec.resourceSelectors[${i}]`;
    if (s.labelSelector) {
      if (s.name) add(field, `the labelSelector and name fields are mutually exclusive in selector ${goResourceSelectorTerm(s)}`);
      const l = labelSelectorError(s.labelSelector, "resource selector");
      if (l) add(`${field}.labelSelector`, l);
    }
    const def = lookup(s.group, s.version, s.kind);
    if (!def) {
      add(
        field,
        `failed to get GVR of the selector: no matches for kind ${JSON.stringify(s.kind)} in version ${JSON.stringify(s.group ? `${s.group}/${s.version}` : s.version)}`,
      );
      return causes;
    }
    if (clusterScoped && def.namespaced && !nwrsMode)
      add(field, `the resource is not found in schema (please retry) or it is not a cluster scoped resource: ${gvkString(s)}`);
    if (!clusterScoped && !def.namespaced) add(field, `the resource is not found in schema (please retry) or it is a cluster scoped resource: ${gvkString(s)}`);
  }
  if (spec.policy) {
    const errs = policyErrors(spec.policy);
    if (errs.length) add("spec.policy", `the placement policy field is invalid: ${aggregate(errs)}`);
  }
  const errs = strategyErrors(spec.strategy);
  if (errs.length) add("spec.strategy", `the rollout Strategy field  is invalid: ${aggregate(errs)}`);
  return causes;
}

/**
 * The whole validation of a placement write: the CRD's CEL rules, and KubeFleet's webhook's
 * (`HandlePlacementValidation`; both, so that a request refused by either says each reason;
 * KubeFleet's apiserver would stop at the first). On an update, as KubeFleet's webhook: a stored
 * object its rules refuse (one stored before a rule came) may only be written on its way out
 * (the new object has a deletionTimestamp), else the update is refused with "deny update on old
 * invalid v1beta1 CRP with DeletionTimestamp not set ..."; a stored valid object is held to
 * every rule, deleting or not. A status or metadata write of a stored placement (its spec
 * unchanged) is not validated again: the spec it carries was.
 */
export function validatePlacement(obj: KubeObject, old: KubeObject | undefined, clusterScoped: boolean, lookup: KindLookup): StatusCause[] {
  if (old && deepEqual(old.spec ?? null, obj.spec ?? null)) return [];
  const spec = (obj.spec ?? {}) as PlacementSpec;
  const cel = celRules(spec, old?.spec as PlacementSpec | undefined, clusterScoped);
  if (old) {
    const oldErrors = webhookRules(old, undefined, clusterScoped, lookup);
    if (oldErrors.length > 0) {
      if (obj.metadata.deletionTimestamp) return cel;
      const message = `deny update on old invalid v1beta1 ${clusterScoped ? "CRP" : "RP"} with DeletionTimestamp not set ${aggregate(oldErrors.map((c) => c.message))}`;
      return [...cel, { field: "spec", reason: "FieldValueInvalid", message }];
    }
  }
  return [...cel, ...webhookRules(obj, old, clusterScoped, lookup)];
}
