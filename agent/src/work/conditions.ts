/**
 * The status a work agent reports for one ManifestWork, in OCM's shape
 * (`pkg/work/spoke/controllers/statuscontroller`, `pkg/work/spoke/conditions/helpers.go`), plus
 * Flotilla's native work-level `Progressing` and `Degraded` conditions. Pure: no I/O.
 *
 * Work conditions (each with `observedGeneration` = the work's `metadata.generation`):
 * - `Applied`: True `AppliedManifestWorkComplete` when every manifest applied, else False
 *   `AppliedManifestWorkFailed`.
 * - `Available`: any manifest Available=False → False `ResourcesNotAvailable` ("k of n resources
 *   are not available"); else any Unknown (or none True) → Unknown `ResourcesStatusUnknown`;
 *   else True `ResourcesAvailable`.
 * - `Progressing` (Flotilla; OCM only from `conditionRules`): True `ResourcesProgressing` while
 *   any workload this work applied (not ReadOnly ones) has not finished rolling out (see
 *   rollout.ts), else False `ResourcesRolledOut`.
 * - `Degraded` (Flotilla): True `ApplyFailed` when Applied is False, else True with the
 *   workload's reason (`ProgressDeadlineExceeded`, `JobFailed`) when one is stuck or failed,
 *   else False `ResourcesHealthy`.
 * - Every other type a manifest's `conditionRules` set (reason `ConditionRule...`): OCM's
 *   aggregate, reason `ConditionRulesAggregated` (condition-rules.ts `aggregateRuleCondition`);
 *   a rule-made `Progressing`, `Degraded` or `Complete` replaces the native one, so rollouts
 *   (which read the work's Progressing and Degraded) follow the rules as OCM's do.
 */
import { aggregateRuleCondition, isRuleCondition, type RuleCondition } from "./condition-rules.ts";
import type { FeedbackResult } from "./feedback.ts";
import type { RolloutState } from "./rollout.ts";
import type { Condition, FeedbackValue, ManifestCondition, ManifestWorkStatus, NewCondition, ResourceMeta } from "./types.ts";

/** What the agent learnt about one manifest in one pass: the input of {@link manifestCondition}. */
export interface ManifestOutcome {
  /** Resource metadata; `resource` is "" when discovery could not map the kind. */
  meta: ResourceMeta;
  /** Result of the apply step (ReadOnly: always ok). */
  applied: { ok: true } | { ok: false; message: string };
  /**
   * What reading the live object gave: the object, missing (404), or an error message.
   * `undefined` when the object could not be addressed (incomplete resource meta).
   */
  live: { state: "found"; object: Record<string, unknown> } | { state: "missing" } | { state: "error"; message: string } | undefined;
  /** Feedback values and errors, or `undefined` when no feedback rule matches the manifest. */
  feedback: FeedbackResult | undefined;
  /** Rollout state of the live object; `undefined` for ReadOnly manifests and missing objects. */
  rollout: RolloutState | undefined;
  /** The conditions the manifest's `conditionRules` gave (condition-rules.ts); absent without rules or live object. */
  rules?: RuleCondition[];
}

/** `meta.SetStatusCondition` on a list being built: replaces the condition of the same type, else appends. */
function setCondition(conds: NewCondition[], c: NewCondition): void {
  const i = conds.findIndex((x) => x.type === c.type);
  if (i >= 0) conds[i] = c;
  else conds.push(c);
}

/** Longest condition message reported, in characters (metav1.Condition allows 32 768). */
export const MAX_CONDITION_MESSAGE = 4096;

function clip(message: string): string {
  return message.length <= MAX_CONDITION_MESSAGE ? message : `${message.slice(0, MAX_CONDITION_MESSAGE - 3)}...`;
}

/** Current time as RFC 3339 with second precision, as `metav1.Time` serialises. */
export function nowRfc3339(now: Date = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Merges freshly computed conditions into the previous ones the way `meta.SetStatusCondition`
 * does: a condition whose status did not change keeps its `lastTransitionTime`; others get `now`.
 * Messages longer than {@link MAX_CONDITION_MESSAGE} characters are cut.
 *
 * @param previous the conditions last computed (may be undefined).
 * @param next the new conditions, in the order to report.
 * @param now RFC 3339 timestamp for transitions.
 */
export function mergeConditions(previous: readonly Condition[] | undefined, next: readonly NewCondition[], now: string): Condition[] {
  return next.map((c) => {
    const old = previous?.find((p) => p.type === c.type);
    return { ...c, message: clip(c.message), lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  });
}

/**
 * The per-manifest entry of `resourceStatus.manifests[]`: conditions Applied
 * (`AppliedManifestComplete` | `AppliedManifestFailed`), Available (`ResourceAvailable` |
 * `ResourceNotAvailable` | `FetchingResourceFailed` | `IncompleteResourceMeta`) and
 * StatusFeedbackSynced (`StatusFeedbackSynced`, True `NoStatusFeedbackSynced` when no rule
 * applies, False `StatusFeedbackSyncFailed`), with OCM's messages; then the conditions of the
 * manifest's `conditionRules`, each replacing the condition of its type (so a rule for
 * `Available` decides the manifest's availability, as in OCM).
 *
 * @param o what the agent learnt about the manifest.
 * @param generation the work's `metadata.generation`, set as every condition's observedGeneration.
 * @param previous the entry last computed for the same ordinal (for lastTransitionTime).
 * @param now RFC 3339 timestamp for transitions.
 */
export function manifestCondition(o: ManifestOutcome, generation: number, previous: ManifestCondition | undefined, now: string): ManifestCondition {
  const g = { observedGeneration: generation };
  const conds: NewCondition[] = [];
  conds.push(
    o.applied.ok
      ? { type: "Applied", status: "True", reason: "AppliedManifestComplete", message: "Apply manifest complete", ...g }
      : { type: "Applied", status: "False", reason: "AppliedManifestFailed", message: o.applied.message, ...g },
  );
  const live = o.live;
  if (live === undefined) {
    conds.push({ type: "Available", status: "Unknown", reason: "IncompleteResourceMeta", message: "Resource meta is incomplete", ...g });
  } else if (live.state === "missing") {
    conds.push({ type: "Available", status: "False", reason: "ResourceNotAvailable", message: "This resource is not available", ...g });
  } else if (live.state === "error") {
    conds.push({ type: "Available", status: "Unknown", reason: "FetchingResourceFailed", message: `Failed to fetch resource: ${live.message}`, ...g });
  } else {
    conds.push({ type: "Available", status: "True", reason: "ResourceAvailable", message: "This resource is available", ...g });
  }
  let values: FeedbackValue[] = [];
  if (!o.feedback) {
    conds.push({ type: "StatusFeedbackSynced", status: "True", reason: "NoStatusFeedbackSynced", message: "", ...g });
  } else if (o.feedback.errors.length > 0) {
    values = o.feedback.values;
    conds.push({
      type: "StatusFeedbackSynced",
      status: "False",
      reason: "StatusFeedbackSyncFailed",
      message: `Sync status feedback failed with error ${o.feedback.errors.join("; ")}`,
      ...g,
    });
  } else {
    values = o.feedback.values;
    conds.push({ type: "StatusFeedbackSynced", status: "True", reason: "StatusFeedbackSynced", message: "", ...g });
  }
  // Without a live object the rules are not evaluated; their conditions of this generation stay,
  // as OCM's merged conditions do (they are pruned only when the generation changes).
  const rules =
    o.rules ??
    (o.live?.state === "found"
      ? []
      : (previous?.conditions ?? []).filter((c) => isRuleCondition(c) && c.observedGeneration === generation).map(({ lastTransitionTime: _t, ...c }) => c));
  for (const r of rules) setCondition(conds, { ...r, ...g });
  return { resourceMeta: o.meta, statusFeedback: { values }, conditions: mergeConditions(previous?.conditions, conds, now) };
}

function label(meta: ResourceMeta): string {
  return `${meta.kind} ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`;
}

/**
 * The whole `status` of a work: the work conditions of the module doc, then
 * `resourceStatus.manifests[]` in spec order.
 *
 * @param outcomes one per manifest, in spec order (`meta.ordinal` = index).
 * @param generation the work's `metadata.generation`.
 * @param previous the status last computed for this work (for lastTransitionTime), if any.
 * @param now RFC 3339 timestamp for transitions; default the current time.
 * @returns the status to report.
 */
export function workStatus(
  outcomes: readonly ManifestOutcome[],
  generation: number,
  previous: ManifestWorkStatus | undefined,
  now: string = nowRfc3339(),
): ManifestWorkStatus {
  const manifests = outcomes.map((o) =>
    manifestCondition(
      o,
      generation,
      previous?.resourceStatus.manifests.find((m) => m.resourceMeta.ordinal === o.meta.ordinal),
      now,
    ),
  );
  const g = { observedGeneration: generation };
  const conds: NewCondition[] = [];
  const failed = outcomes.filter((o) => !o.applied.ok);
  conds.push(
    failed.length === 0
      ? { type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message: "Apply manifest work complete", ...g }
      : {
          type: "Applied",
          status: "False",
          reason: "AppliedManifestWorkFailed",
          message: `Failed to apply manifest work: ${failed.length} of ${outcomes.length} manifests failed`,
          ...g,
        },
  );
  const avail = manifests.map((m) => m.conditions.find((c) => c.type === "Available")?.status ?? "Unknown");
  const notAvailable = avail.filter((s) => s === "False").length;
  const unknown = avail.filter((s) => s === "Unknown").length;
  if (notAvailable > 0) {
    conds.push({
      type: "Available",
      status: "False",
      reason: "ResourcesNotAvailable",
      message: `${notAvailable} of ${avail.length} resources are not available`,
      ...g,
    });
  } else if (unknown > 0 || avail.length === 0) {
    conds.push({
      type: "Available",
      status: "Unknown",
      reason: "ResourcesStatusUnknown",
      message: `${unknown} of ${avail.length} resources have unknown status`,
      ...g,
    });
  } else {
    conds.push({ type: "Available", status: "True", reason: "ResourcesAvailable", message: "All resources are available", ...g });
  }
  const workloads = outcomes.filter((o) => o.rollout !== undefined);
  const rolling = workloads.filter((o) => o.rollout?.progressing);
  conds.push(
    rolling.length > 0
      ? {
          type: "Progressing",
          status: "True",
          reason: "ResourcesProgressing",
          message: `${rolling.length} of ${workloads.length} workloads rolling out: ${rolling.map((o) => `${label(o.meta)} (${o.rollout?.message ?? "in progress"})`).join(", ")}`,
          ...g,
        }
      : { type: "Progressing", status: "False", reason: "ResourcesRolledOut", message: "All applied resources have rolled out", ...g },
  );
  const stuck = workloads.find((o) => o.rollout?.degraded);
  if (failed.length > 0) {
    const first = failed[0];
    const why = first && !first.applied.ok ? `${label(first.meta)}: ${first.applied.message}` : "";
    conds.push({
      type: "Degraded",
      status: "True",
      reason: "ApplyFailed",
      message: `${failed.length} of ${outcomes.length} manifests failed to apply; ${why}`,
      ...g,
    });
  } else if (stuck?.rollout?.degraded) {
    conds.push({
      type: "Degraded",
      status: "True",
      reason: stuck.rollout.degraded,
      message: `${label(stuck.meta)}: ${stuck.rollout.message ?? stuck.rollout.degraded}`,
      ...g,
    });
  } else {
    conds.push({ type: "Degraded", status: "False", reason: "ResourcesHealthy", message: "No applied resource is failing", ...g });
  }
  // OCM's AggregateManifestConditions: every type a condition rule set on a manifest becomes a
  // work condition, replacing Flotilla's native one of that type (Progressing, Degraded).
  const byType = new Map<string, { status: string; message: string }[]>();
  for (const m of manifests) {
    for (const c of m.conditions) {
      if (c.type === "Available" || !isRuleCondition(c)) continue;
      const list = byType.get(c.type) ?? [];
      list.push({ status: c.status, message: c.message });
      byType.set(c.type, list);
    }
  }
  for (const [type, items] of [...byType].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    setCondition(conds, { ...aggregateRuleCondition(type, items), ...g });
  return { conditions: mergeConditions(previous?.conditions, conds, now), resourceStatus: { manifests } };
}
