/**
 * KubeFleet's evictions and disruption budgets (kubefleet-dev/kubefleet `apis/placement/v1beta1/
 * eviction_types.go`, `disruptionbudget_types.go`; docs/kubefleet.md "Evictions, budgets, drain"):
 * a ClusterResourcePlacementEviction asks to remove one ClusterResourcePlacement's objects from one
 * cluster (its binding there); a ClusterResourcePlacementDisruptionBudget, named as its placement,
 * bounds how many of the placement's clusters evictions may take away. Both cluster-scoped, served
 * in v1beta1 only (as KubeFleet serves them: v1alpha1 and v1beta1, no v1). The eviction controller
 * is src/fleet/eviction.ts.
 *
 * Validation is the CRDs' (`+kubebuilder` markers and CEL rules, with their messages): an
 * eviction's `placementName` and `clusterName` are required, at most 255 characters and immutable;
 * a budget's `maxUnavailable` / `minAvailable` are an integer ≥ 0 or a percentage `0%`-`100%`, not
 * both. KubeFleet's validating webhooks' checks against the placement (`pkg/utils/validator`) are
 * {@link evictionWebhookErrors} and {@link budgetWebhookErrors}, run by admission
 * (src/admission/store.ts) with the placement read at the write.
 */
import { z } from "zod";
import { invalid, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, PrinterColumn, WriteContext } from "../k8s/kind.ts";
import { ConditionsSchema, objectSchema, type Condition, type KubeObject } from "../k8s/meta.ts";
import { FLEET_GROUP } from "./fleet.ts";

/** An eviction's spec (`PlacementEvictionSpec`). */
export interface PlacementEvictionSpec {
  placementName: string;
  clusterName: string;
}

/** A budget's spec (`PlacementDisruptionBudgetSpec`): each an integer ≥ 0 or a percentage string. */
export interface PlacementDisruptionBudgetSpec {
  maxUnavailable?: number | string;
  minAvailable?: number | string;
}

/**
 * Label on a ClusterResourceBinding: the cluster it targets (its `spec.targetCluster`), so that a
 * cluster's bindings are read through the label index (Flotilla's; KubeFleet lists every binding).
 */
export const TARGET_CLUSTER_LABEL = "flotilla.dev/target-cluster";
/**
 * Label on an eviction the hub made itself (the automatic path, src/fleet/eviction-unreachable.ts):
 * the key's last segment of the taint that made it (`unreachable`, `unavailable`).
 */
export const AUTOMATIC_EVICTION_LABEL = "flotilla.dev/automatic-eviction";
/** Annotation on an automatic eviction: why, in words (the taint, since when, the toleration's seconds). */
export const EVICTION_CAUSE_ANNOTATION = "flotilla.dev/eviction-cause";
/**
 * Annotation on a ClusterResourceBinding an automatic eviction was refused for: the refusal as
 * JSON `{reason, message}`, which the placement's run shows as the cluster's `Evicted` condition.
 */
export const EVICTION_BLOCKED_ANNOTATION = "flotilla.dev/eviction-blocked";

/** An eviction's condition types (`PlacementEvictionConditionType`). */
export const EVICTION_VALID = "Valid";
/** See {@link EVICTION_VALID}. */
export const EVICTION_EXECUTED = "Executed";

/** KubeFleet's reasons (`pkg/utils/condition`). */
export const EvictionReasons = {
  valid: "ClusterResourcePlacementEvictionValid",
  invalid: "ClusterResourcePlacementEvictionInvalid",
  executed: "ClusterResourcePlacementEvictionExecuted",
  notExecuted: "ClusterResourcePlacementEvictionNotExecuted",
} as const;

/** KubeFleet's messages (`pkg/utils/condition`), verbatim. */
export const EvictionMessages = {
  invalidMissingCRP: "Failed to find ClusterResourcePlacement targeted by eviction",
  invalidDeletingCRP: "Found deleting ClusterResourcePlacement targeted by eviction",
  invalidPickFixedCRP: "Found ClusterResourcePlacement with PickFixed placement type targeted by eviction",
  invalidMissingCRB: "Failed to find scheduler decision for placement in cluster targeted by eviction",
  invalidMultipleCRB: "Found more than one scheduler decision for placement in cluster targeted by eviction",
  valid: "Eviction is valid",
  allowedNoPDB: "Eviction is allowed, no ClusterResourcePlacementDisruptionBudget specified",
  allowedPlacementRemoved: "Eviction is allowed, resources propagated by placement is currently being removed from cluster targeted by eviction",
  allowedPlacementFailed: "Eviction is allowed, placement has failed",
  blockedMisconfiguredPDB:
    "Eviction is blocked by misconfigured ClusterResourcePlacementDisruptionBudget, either MaxUnavailable is specified or MinAvailable is specified as a percentage for PickAll ClusterResourcePlacement",
  blockedMissingPlacement: "Eviction is blocked, placement has not propagated resources to target cluster yet",
  allowedPDB: (available: number, total: number) =>
    `Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: ${available}, totalPlacements: ${total}`,
  blockedPDB: (available: number, total: number) =>
    `Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: ${available}, totalPlacements: ${total}`,
} as const;

/**
 * Whether an eviction is done (KubeFleet's `IsEvictionInTerminalState`): `Valid` False at its
 * generation, or any `Executed` condition.
 */
export function evictionTerminal(e: KubeObject): boolean {
  const conditions = (e.status?.conditions ?? []) as Condition[];
  const valid = conditions.find((c) => c.type === EVICTION_VALID);
  if (valid && valid.status === "False" && (valid.observedGeneration === undefined || valid.observedGeneration === (e.metadata.generation ?? 1))) return true;
  return conditions.some((c) => c.type === EVICTION_EXECUTED);
}

const BUDGET_PATTERN = /^(100|[0-9]{1,2})%$/;
const BUDGET_RULE = "If supplied value is String should match regex '^(100|[0-9]{1,2})%$' or If supplied value is Integer must be greater than or equal to 0";

const EvictionSpecSchema = z.strictObject({
  placementName: z.string().max(255).describe("The ClusterResourcePlacement whose objects are evicted; immutable."),
  clusterName: z.string().max(255).describe("The member cluster (ManagedCluster) they are evicted from; immutable."),
});
const EvictionStatusSchema = z.strictObject({ conditions: ConditionsSchema.optional() });

const intOrString = (what: string) =>
  z.union([z.number().int(), z.string()]).optional().describe(`${what}: an integer ≥ 0 or a percentage (of a PickN placement's numberOfClusters, rounded up).`);
const BudgetSpecSchema = z.strictObject({
  maxUnavailable: intOrString("The most of the placement's clusters that may be unavailable after an eviction"),
  minAvailable: intOrString("The fewest of the placement's clusters that must stay available (a PickAll placement: an integer only)"),
});

const celInvalid = (field: string, type: string, message: string): StatusCause => ({
  field,
  reason: "FieldValueInvalid",
  message: `Invalid value: "${type}": ${message}`,
});

/** The eviction CRD's rules: its fields' immutability (`self == oldSelf`). */
export function validateEviction(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  if (!old) return [];
  const spec = (obj.spec ?? {}) as Partial<PlacementEvictionSpec>;
  const was = (old.spec ?? {}) as Partial<PlacementEvictionSpec>;
  const out: StatusCause[] = [];
  if (spec.placementName !== was.placementName) out.push(celInvalid("spec.placementName", "string", "The PlacementName field is immutable"));
  if (spec.clusterName !== was.clusterName) out.push(celInvalid("spec.clusterName", "string", "The ClusterName field is immutable"));
  return out;
}

/** The budget CRD's rules: each value's form, and not both set. */
export function validateBudget(obj: KubeObject): StatusCause[] {
  const spec = (obj.spec ?? {}) as PlacementDisruptionBudgetSpec;
  const out: StatusCause[] = [];
  for (const f of ["maxUnavailable", "minAvailable"] as const) {
    const v = spec[f];
    if (v === undefined) continue;
    const ok = typeof v === "string" ? BUDGET_PATTERN.test(v) : v >= 0;
    if (!ok) out.push(celInvalid(`spec.${f}`, typeof v === "string" ? "string" : "integer", BUDGET_RULE));
  }
  if (spec.maxUnavailable !== undefined && spec.minAvailable !== undefined)
    out.push(celInvalid("spec", "object", "Both MaxUnavailable and MinAvailable cannot be specified"));
  return out;
}

/** The placement fields the webhooks read. */
interface PlacementView {
  metadata: { name: string; deletionTimestamp?: string | null };
  spec?: { policy?: { placementType?: string } };
}

/**
 * KubeFleet's eviction webhook (`ValidateClusterResourcePlacementForEviction`): an eviction of a
 * placement being deleted or of a PickFixed one is denied. A missing placement is allowed (the
 * controller then marks the eviction invalid).
 * @returns the errors, each KubeFleet's message
 */
export function evictionWebhookErrors(crp: PlacementView | null): string[] {
  if (!crp) return [];
  if (crp.metadata.deletionTimestamp) return [`cluster resource placement ${crp.metadata.name} is being deleted`];
  const type = crp.spec?.policy?.placementType;
  return type === "PickFixed" ? [`cluster resource placement policy type ${type} is not supported`] : [];
}

/**
 * KubeFleet's budget webhook (`ValidateClusterResourcePlacementDisruptionBudget`): for a PickAll
 * placement (or one without a policy) `maxUnavailable` is refused, and `minAvailable` as a
 * percentage. A missing placement is allowed. Go's `%v` of an IntOrString prints its value.
 */
export function budgetWebhookErrors(budget: KubeObject, crp: PlacementView | null): string[] {
  if (!crp) return [];
  const spec = (budget.spec ?? {}) as PlacementDisruptionBudgetSpec;
  const policy = crp.spec?.policy;
  const out: string[] = [];
  if (!policy || (policy.placementType ?? "PickAll") === "PickAll") {
    if (spec.maxUnavailable !== undefined)
      out.push(`cluster resource placement policy type PickAll is not supported with any specified max unavailable ${String(spec.maxUnavailable)}`);
    if (typeof spec.minAvailable === "string")
      out.push(`cluster resource placement policy type PickAll is not supported with min available as a percentage ${spec.minAvailable}`);
  }
  return out;
}

/**
 * The `WriteContext.extras` key under which admission (src/admission/store.ts) hands a create of
 * an eviction, or a create or update of a budget, the ClusterResourcePlacement it names (null when
 * there is none): KubeFleet's webhooks read it with their client.
 */
export const EVICTION_PLACEMENT_EXTRA = "fleetEvictionPlacement";

/**
 * The kinds' last write step: KubeFleet's validating webhook for the kind (an eviction on create,
 * a budget on create and update) against the placement admission read. Skipped when the write
 * carries none (a controller's write, a status write).
 * @throws ApiError 422 with the webhook's message (KubeFleet's `admission.Denied`)
 */
async function webhookFinalize(def: KindDefinition, obj: KubeObject, old: KubeObject | null, ctx: WriteContext): Promise<void> {
  if (!ctx.extras || !(EVICTION_PLACEMENT_EXTRA in ctx.extras) || obj.metadata.deletionTimestamp) return;
  const crp = ctx.extras[EVICTION_PLACEMENT_EXTRA] as PlacementView | null;
  const eviction = def.kind === "ClusterResourcePlacementEviction";
  if (eviction && old) return;
  const errs = eviction ? evictionWebhookErrors(crp) : budgetWebhookErrors(obj, crp);
  if (errs.length)
    throw invalid({ group: def.group, kind: def.kind, plural: def.plural, name: obj.metadata.name }, [
      { field: "spec", reason: "FieldValueForbidden", message: aggregateMessage(errs) },
    ]);
}

/** apimachinery's `errors.NewAggregate(...).Error()`: one message as is, several as `[a, b]`. */
export function aggregateMessage(errs: readonly string[]): string {
  return errs.length === 1 ? errs[0]! : `[${errs.join(", ")}]`;
}

const EVICTION_COLUMNS: PrinterColumn[] = [
  { name: "Valid", type: "string", jsonPath: '.status.conditions[?(@.type=="Valid")].status' },
  { name: "Executed", type: "string", jsonPath: '.status.conditions[?(@.type=="Executed")].status' },
];
const BUDGET_COLUMNS: PrinterColumn[] = [
  { name: "Max-Unavailable", type: "string", jsonPath: ".spec.maxUnavailable" },
  { name: "Min-Available", type: "string", jsonPath: ".spec.minAvailable" },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

/** `ClusterResourcePlacementEviction` (crpe), v1beta1. */
export const ClusterResourcePlacementEvictionKind: KindDefinition = {
  group: FLEET_GROUP,
  version: "v1beta1",
  kind: "ClusterResourcePlacementEviction",
  listKind: "ClusterResourcePlacementEvictionList",
  plural: "clusterresourceplacementevictions",
  singular: "clusterresourceplacementeviction",
  shortNames: ["crpe"],
  categories: ["fleet", "fleet-placement"],
  namespaced: false,
  hasStatus: true,
  schema: objectSchema(EvictionSpecSchema, EvictionStatusSchema, true),
  storage: "d1",
  printerColumns: EVICTION_COLUMNS,
  validate: validateEviction,
  finalize: (obj, old, ctx) => webhookFinalize(ClusterResourcePlacementEvictionKind, obj, old, ctx),
};

/** `ClusterResourcePlacementDisruptionBudget` (crpdb), v1beta1; no status. */
export const ClusterResourcePlacementDisruptionBudgetKind: KindDefinition = {
  group: FLEET_GROUP,
  version: "v1beta1",
  kind: "ClusterResourcePlacementDisruptionBudget",
  listKind: "ClusterResourcePlacementDisruptionBudgetList",
  plural: "clusterresourceplacementdisruptionbudgets",
  singular: "clusterresourceplacementdisruptionbudget",
  shortNames: ["crpdb"],
  categories: ["fleet", "fleet-placement"],
  namespaced: false,
  hasStatus: false,
  schema: objectSchema(BudgetSpecSchema, z.strictObject({}), true),
  storage: "d1",
  printerColumns: BUDGET_COLUMNS,
  validate: validateBudget,
  finalize: (obj, old, ctx) => webhookFinalize(ClusterResourcePlacementDisruptionBudgetKind, obj, old, ctx),
};

/** The kinds of evictions and budgets. */
export const FLEET_EVICTION_KINDS: readonly KindDefinition[] = [ClusterResourcePlacementEvictionKind, ClusterResourcePlacementDisruptionBudgetKind];
