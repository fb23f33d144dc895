/**
 * Flotilla's automatic path for KubeFleet's placements (docs/kubefleet.md "Evictions, budgets,
 * drain"): a PickN ClusterResourcePlacement leaves a cluster that carries the hub's
 * `cluster.open-cluster-management.io/unreachable` or `.../unavailable` taint (OCM's taint
 * controller: Available Unknown or False) longer than the placement's toleration of it allows, only
 * as far as the placement's disruption budget allows.
 *
 * The deadline is OCM's taint/toleration rule (`plugins/tainttoleration`): the first of the
 * placement's `spec.policy.tolerations` that matches the taint decides; with `tolerationSeconds`
 * it tolerates the taint until the taint's `timeAdded` plus that many seconds, without it for good.
 * A placement without a matching toleration keeps the cluster (KubeFleet's "IgnoredDuringExecution":
 * nothing moves unless the placement asks for it), as does a PickAll placement (KubeFleet keeps an
 * unreachable cluster selected) and a PickFixed one (never evicted).
 *
 * Past the deadline the hub creates a ClusterResourcePlacementEviction
 * (`<unreachable|unavailable>-eviction-<placement>-<cluster>-<8 hex>`, labelled
 * {@link AUTOMATIC_EVICTION_LABEL}), which the eviction controller (src/fleet/eviction.ts) decides
 * as any other: budget honoured, KubeFleet's conditions, Events, metrics and crash safety. A refused
 * one is made again every {@link AUTOMATIC_EVICTION_RETRY_MS} while the taint stays (a budget may
 * allow it later); the refusal shows on the placement as the cluster's `Evicted` False condition
 * (the binding's {@link EVICTION_BLOCKED_ANNOTATION}, which the placement's run reads; the commit
 * that changes it owes the placement a run: src/fleet/controller.ts `planPlacement`).
 *
 * What wakes it: a ManagedCluster update that adds (or re-stamps) one of those taints
 * ({@link unreachableEvictionHook}) sets the scheduler object's `unreachable-eviction:<cluster>`
 * timer (the controller manifest, src/controllers.ts) to now; the timer's run
 * ({@link checkUnreachableCluster}) reads that cluster and its bindings (the label index,
 * {@link TARGET_CLUSTER_LABEL}) and sets itself again at the next deadline or retry. An idle
 * cluster has no timer; no run reads every cluster or every placement.
 */
import { admittedStoreOf } from "../admission/store.ts";
import { clock } from "../clock.ts";
import type { Env } from "../env.ts";
import type { Condition, KubeObject } from "../k8s/meta.ts";
import { racing } from "../k8s/racing.ts";
import { ClusterResourceBindingKind, FLEET_GROUP, PLACEMENT_TRACKING_LABEL } from "../kinds/fleet.ts";
import {
  AUTOMATIC_EVICTION_LABEL,
  ClusterResourcePlacementEvictionKind,
  EVICTION_BLOCKED_ANNOTATION,
  EVICTION_CAUSE_ANNOTATION,
  EVICTION_EXECUTED,
  EVICTION_VALID,
  TARGET_CLUSTER_LABEL,
} from "../kinds/fleet-eviction.ts";
import type { PlacementPolicy } from "../kinds/fleet-validation.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import { ManagedClusterKind, TAINT_UNAVAILABLE, TAINT_UNREACHABLE } from "../kinds/managedcluster.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { setSchedulerTimer } from "../timers.ts";
import { toleratedUntil, type FleetTaint } from "./schedule.ts";

/** The controller manifest's timer (a row `unreachable-eviction:<cluster>` of the scheduler object). */
export const UNREACHABLE_EVICTION_TIMER = "unreachable-eviction";
/** How long after a refused (or not yet decided) automatic eviction the cluster is looked at again, in ms. */
export const AUTOMATIC_EVICTION_RETRY_MS = 30_000;
/** The hub's taints the automatic path follows (OCM's taint controller sets them from the Available condition). */
export const HUB_TAINTS: readonly string[] = [TAINT_UNREACHABLE, TAINT_UNAVAILABLE];

/** The hub's NoSelect taints of `mc` (unreachable, unavailable). */
function hubTaints(mc: KubeObject | null | undefined): FleetTaint[] {
  const taints = ((mc?.spec as { taints?: FleetTaint[] } | undefined)?.taints ?? []) as FleetTaint[];
  return taints.filter((t) => HUB_TAINTS.includes(t.key) && t.effect === "NoSelect");
}

const taintId = (t: FleetTaint) => `${t.key}@${t.timeAdded ?? ""}`;

/**
 * What a committed change owes the automatic path: the name of a ManagedCluster (updated, not
 * created: a new cluster has no bindings) that gained a hub taint (or one re-stamped); null for
 * any other change. A taint's removal owes nothing: a cluster joining (its first Available True
 * removes the `unreachable` taint its creation added) costs no run, a refusal's mark is hidden by
 * the placement's run while the cluster has no hub taint ({@link evictionBlockedCondition}) and
 * taken off by the cluster's next run (its retry).
 */
export function planUnreachableEviction(change: Change): string | null {
  const { def, before, after } = change;
  if (def.group !== ManagedClusterKind.group || def.kind !== ManagedClusterKind.kind || !before || !after) return null;
  const had = new Set(hubTaints(before).map(taintId));
  return hubTaints(after).some((t) => !had.has(taintId(t))) ? after.metadata.name : null;
}

/** The automatic path's after-commit hook ({@link planUnreachableEviction}): the cluster's timer, now. */
export const unreachableEvictionHook: AfterCommitHook<string> = {
  name: "fleet-unreachable-evictions",
  plan: planUnreachableEviction,
  async run(env, cluster) {
    await setSchedulerTimer(env, `${UNREACHABLE_EVICTION_TIMER}:${cluster}`, clock.now());
  },
};

/** The deadline of a placement on a tainted cluster: when, and the taint and toleration seconds it comes from. */
export interface EvictionDeadline {
  /** Epoch ms. */
  at: number;
  taint: FleetTaint;
  tolerationSeconds: number;
}

/**
 * When placement `policy` stops tolerating the earliest of `taints` (the cluster's hub taints),
 * by OCM's rule (the first matching toleration decides; `tolerationSeconds` from the taint's
 * `timeAdded`); null when it never does: a PickAll or PickFixed placement, no matching toleration,
 * or one without `tolerationSeconds`.
 */
export function evictionDeadline(policy: PlacementPolicy | undefined, taints: readonly FleetTaint[]): EvictionDeadline | null {
  if ((policy?.placementType ?? "PickAll") !== "PickN") return null;
  let best: EvictionDeadline | null = null;
  for (const taint of taints) {
    for (const t of policy?.tolerations ?? []) {
      const until = toleratedUntil(taint, t);
      if (until === null) continue;
      if (until !== Infinity && (!best || until < best.at)) best = { at: until, taint, tolerationSeconds: t.tolerationSeconds ?? 0 };
      break;
    }
  }
  return best;
}

/** The automatic eviction's name: the taint's kind, the placement, the cluster and a hash of the taint (its key and `timeAdded`). */
export async function automaticEvictionName(placement: string, cluster: string, taint: FleetTaint): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${placement}/${cluster}/${taintId(taint)}`)));
  const hex = [...digest.slice(0, 4)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const kind = taint.key.slice(taint.key.lastIndexOf("/") + 1);
  const name = `${kind}-eviction-${placement}-${cluster}-${hex}`;
  return name.length <= 253 ? name : `${kind}-eviction-${[...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The annotation {@link markBinding} writes for an automatic eviction refused with `reason` and `message`. */
export function refusalMark(eviction: KubeObject, reason: string, message: string): string {
  return JSON.stringify({ reason, message: `${eviction.metadata.annotations?.[EVICTION_CAUSE_ANNOTATION] ?? "automatic eviction"}: ${message}` });
}

const conditionOf = (o: KubeObject, type: string) => ((o.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);

/**
 * Sets (or, with null, removes) a binding's {@link EVICTION_BLOCKED_ANNOTATION}: a merge patch, no
 * precondition (a placement's run that read the binding before loses its race and reads it again).
 * @returns whether it changed the binding
 */
export async function markBinding(env: Env, binding: KubeObject, value: string | null): Promise<boolean> {
  if ((binding.metadata.annotations?.[EVICTION_BLOCKED_ANNOTATION] ?? null) === value) return false;
  const r = await racing(() =>
    admittedStoreOf(env, ClusterResourceBindingKind).write("", binding.metadata.name, {
      verb: "patch",
      patchType: "merge",
      patch: { metadata: { annotations: { [EVICTION_BLOCKED_ANNOTATION]: value } } },
    }),
  );
  return r !== "lost";
}

/**
 * The cluster's `Evicted` condition in a placement's status, from its binding's
 * {@link EVICTION_BLOCKED_ANNOTATION} (an automatic eviction the budget refused), at the
 * placement's `generation`, while the cluster (`taintsOf` its taints, read only for a marked
 * binding) still carries a hub taint; null when there is none.
 */
export function evictionBlockedCondition(
  binding: KubeObject | undefined,
  generation: number,
  taintsOf: () => readonly FleetTaint[],
): { type: string; status: "False"; reason: string; message: string; observedGeneration: number } | null {
  const raw = binding?.metadata.annotations?.[EVICTION_BLOCKED_ANNOTATION];
  if (!raw || !taintsOf().some((t) => HUB_TAINTS.includes(t.key) && t.effect === "NoSelect")) return null;
  try {
    const { reason, message } = JSON.parse(raw) as { reason?: unknown; message?: unknown };
    if (typeof reason !== "string" || typeof message !== "string") return null;
    return { type: "Evicted", status: "False", reason, message, observedGeneration: generation };
  } catch {
    return null;
  }
}

/**
 * The run of cluster `cluster`'s `unreachable-eviction` timer at `nowMs` (epoch ms): for each of
 * its bindings whose PickN placement's toleration of the cluster's hub taint has expired, the
 * automatic eviction is made (again, {@link AUTOMATIC_EVICTION_RETRY_MS} after a refusal); a
 * refusal is put on the binding for the placement's status, and taken off once the taint is gone.
 * @returns when to run again (epoch ms: the next deadline or retry), or null when nothing is due
 * @throws errors of D1 or of the objects (the timer is then run again a minute later)
 */
export async function checkUnreachableCluster(env: Env, cluster: string, nowMs: number): Promise<number | null> {
  const mc = await admittedStoreOf(env, ManagedClusterKind).get("", cluster);
  const taints = mc && !mc.metadata.deletionTimestamp ? hubTaints(mc) : [];
  const bindings = (
    await admittedStoreOf(env, ClusterResourceBindingKind).listPage(undefined, {
      index: { key: TARGET_CLUSTER_LABEL, values: [cluster] },
      filter: (b) => (b.spec as { targetCluster?: string } | undefined)?.targetCluster === cluster,
    })
  ).items.filter((b) => !b.metadata.deletionTimestamp);
  const evictions = admittedStoreOf(env, ClusterResourcePlacementEvictionKind);
  const placements = admittedStoreOf(env, FLEET_PLACEMENT_KINDS.crp);
  let next = Infinity;
  for (const binding of bindings) {
    const placement = binding.metadata.labels?.[PLACEMENT_TRACKING_LABEL];
    if (!placement) continue;
    const crp = taints.length > 0 ? await placements.get("", placement) : null;
    const due = crp && !crp.metadata.deletionTimestamp ? evictionDeadline((crp.spec as { policy?: PlacementPolicy } | undefined)?.policy, taints) : null;
    if (!due) {
      await markBinding(env, binding, null);
      continue;
    }
    if (due.at > nowMs) {
      // A new taint, not due yet: a mark of an earlier one goes.
      await markBinding(env, binding, null);
      next = Math.min(next, due.at);
      continue;
    }
    const name = await automaticEvictionName(placement, cluster, due.taint);
    const existing = await evictions.get("", name);
    const executed = existing && conditionOf(existing, EVICTION_EXECUTED);
    const valid = existing && conditionOf(existing, EVICTION_VALID);
    if (existing && (executed?.status === "True" || valid?.status === "False")) continue;
    if (existing && executed?.status === "False") {
      // Refused: shown on the placement, and tried again once the retry is due.
      await markBinding(env, binding, refusalMark(existing, executed.reason, executed.message));
      const retryAt = Date.parse(executed.lastTransitionTime ?? "") + AUTOMATIC_EVICTION_RETRY_MS;
      if (Number.isFinite(retryAt) && retryAt > nowMs) {
        next = Math.min(next, retryAt);
        continue;
      }
      await racing(() => evictions.write("", name, { verb: "delete", preconditions: { uid: existing.metadata.uid! } }));
    } else if (existing) {
      // Not decided yet: look again later.
      next = Math.min(next, nowMs + AUTOMATIC_EVICTION_RETRY_MS);
      continue;
    }
    const kind = due.taint.key.slice(due.taint.key.lastIndexOf("/") + 1);
    const cause = `cluster ${cluster} ${kind} (taint ${due.taint.key}:${due.taint.effect} since ${due.taint.timeAdded ?? "?"}) past the placement's toleration of ${due.tolerationSeconds}s`;
    await racing(() =>
      evictions.write("", name, {
        verb: "create",
        body: {
          apiVersion: `${FLEET_GROUP}/v1beta1`,
          kind: ClusterResourcePlacementEvictionKind.kind,
          metadata: { name, labels: { [AUTOMATIC_EVICTION_LABEL]: kind }, annotations: { [EVICTION_CAUSE_ANNOTATION]: cause } },
          spec: { placementName: placement, clusterName: cluster },
        },
      }),
    );
    next = Math.min(next, nowMs + AUTOMATIC_EVICTION_RETRY_MS);
  }
  return next === Infinity ? null : next;
}
