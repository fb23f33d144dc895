/**
 * How a work a KubeFleet placement rendered says how to apply it (docs/kubefleet.md "applyStrategy
 * and deleteStrategy in a work"): the annotation {@link APPLY_STRATEGY_ANNOTATION} holds the
 * placement's `applyStrategy` (kubefleet-dev/kubefleet `apis/placement/v1beta1`
 * `ApplyStrategy`), {@link UNAVAILABLE_PERIOD_ANNOTATION} its rollout's
 * `unavailablePeriodSeconds`. A work without the first is an ordinary OCM work. Small and
 * static; the applier itself (fleet-apply.ts, kubefleet.ts) is loaded when a work needs it.
 */
import { isObj, type Obj } from "./types.ts";

/** The work annotation carrying the placement's applyStrategy as JSON (docs/kubefleet.md). */
export const APPLY_STRATEGY_ANNOTATION = "kubernetes-fleet.io/apply-strategy";
/** The work annotation carrying the rollout's `unavailablePeriodSeconds` (decimal string, default 60). */
export const UNAVAILABLE_PERIOD_ANNOTATION = "kubernetes-fleet.io/unavailable-period-seconds";
/** KubeFleet's default `unavailablePeriodSeconds`. */
export const DEFAULT_UNAVAILABLE_PERIOD_SECONDS = 60;
/** KubeFleet's `ApplyStrategy` (v1beta1), every field defaulted as its CRD defaults it. */
export interface ApplyStrategy {
  /** `PartialComparison` (fields the manifest sets) or `FullComparison` (every field). */
  comparisonOption: "PartialComparison" | "FullComparison";
  /** `Always` (re-apply, overwriting drifts) or `IfNotDrifted` (stop at a drift, report it). */
  whenToApply: "Always" | "IfNotDrifted";
  /** `ClientSideApply` (three-way merge), `ServerSideApply`, or `ReportDiff` (refused by the hub; reported as such). */
  type: "ClientSideApply" | "ServerSideApply" | "ReportDiff";
  /** Whether an object with owners other than Fleet may be taken over and applied. */
  allowCoOwnership: boolean;
  /** `serverSideApplyConfig.force`: take over conflicting fields of other field managers. */
  serverSideApplyConfig?: { force: boolean };
  /** `Always`, `IfNoDiff` (only an identical object) or `Never` (no pre-existing object is taken over). */
  whenToTakeOver: "Always" | "IfNoDiff" | "Never";
}

/** KubeFleet's defaults (`+kubebuilder:default` markers of `ApplyStrategy`). */
export const DEFAULT_APPLY_STRATEGY: ApplyStrategy = {
  comparisonOption: "PartialComparison",
  whenToApply: "Always",
  type: "ClientSideApply",
  allowCoOwnership: false,
  whenToTakeOver: "Always",
};

function pick<T extends string>(v: unknown, allowed: readonly T[], fallback: T): T {
  return typeof v === "string" && (allowed as readonly string[]).includes(v) ? (v as T) : fallback;
}

/**
 * The KubeFleet apply strategy a work carries, or undefined for an ordinary OCM work (no
 * {@link APPLY_STRATEGY_ANNOTATION}). Absent or unknown fields take KubeFleet's defaults; an
 * annotation that is not a JSON object gives the defaults (the hub validated the placement).
 */
export function applyStrategyOf(annotations: Record<string, string> | undefined): ApplyStrategy | undefined {
  const raw = annotations?.[APPLY_STRATEGY_ANNOTATION];
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    v = {};
  }
  const o: Obj = isObj(v) ? v : {};
  const d = DEFAULT_APPLY_STRATEGY;
  const ssa = isObj(o.serverSideApplyConfig) ? { force: o.serverSideApplyConfig.force === true } : undefined;
  return {
    comparisonOption: pick(o.comparisonOption, ["PartialComparison", "FullComparison"], d.comparisonOption),
    whenToApply: pick(o.whenToApply, ["Always", "IfNotDrifted"], d.whenToApply),
    type: pick(o.type, ["ClientSideApply", "ServerSideApply", "ReportDiff"], d.type),
    allowCoOwnership: o.allowCoOwnership === true,
    ...(ssa ? { serverSideApplyConfig: ssa } : {}),
    whenToTakeOver: pick(o.whenToTakeOver, ["Always", "IfNoDiff", "Never"], d.whenToTakeOver),
  };
}

/** `unavailablePeriodSeconds` from the work's annotation, in seconds (default 60; a non-negative integer). */
export function unavailablePeriodOf(annotations: Record<string, string> | undefined): number {
  const raw = annotations?.[UNAVAILABLE_PERIOD_ANNOTATION];
  const n = raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  return Number.isFinite(n) ? n : DEFAULT_UNAVAILABLE_PERIOD_SECONDS;
}
