/**
 * The eviction controller (kubefleet-dev/kubefleet `pkg/controllers/clusterresourceplacementeviction`;
 * docs/kubefleet.md "Evictions, budgets, drain"): a ClusterResourcePlacementEviction is decided
 * once (src/fleet/eviction-decide.ts) and, when executed, its placement's binding for the cluster
 * is deleted; the placement's next run (asked for at once by the commit recording the decision)
 * then treats the cluster as one it does not have: it removes the works there, and its scheduler
 * picks the cluster again only if it passes the filters (a cordoned cluster's NoSelect taint keeps
 * it out; a PickN placement is re-filled on another cluster).
 *
 * Where it runs: KubeFleet reconciles evictions one at a time (`MaxConcurrentReconciles: 1`), so
 * two never both pass a budget. Here the evictions of one placement are serialised in one Durable
 * Object, the replica set object class named `eviction:/<placement>`, woken when an eviction is
 * created ({@link evictionHook}); a run decides every pending eviction of the placement in
 * creation order, each seeing the bindings the ones before it removed.
 *
 * Crash safety: an eviction that deletes a binding first records `Valid` True (a status write),
 * then deletes the binding, then records `Executed`. A run after a crash between the last two
 * finds a valid eviction whose binding is gone and records it executed (KubeFleet's "placement
 * ... being removed" message) instead of invalid: the cluster's objects go once. The commit that
 * records `Executed` owes the placement its run (src/fleet/controller.ts `planPlacement`, an
 * outbox row in the same batch), so a crash after it does not lose the run either.
 */
import { admittedStoreOf } from "../admission/store.ts";
import type { Env } from "../env.ts";
import { recordEvents, type EventSpec } from "../events/record.ts";
import { canonicalJson as canonical } from "../k8s/canonical-json.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import { setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { racing } from "../k8s/racing.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { ClusterResourceBindingKind, FLEET_GROUP, PLACEMENT_TRACKING_LABEL } from "../kinds/fleet.ts";
import {
  AUTOMATIC_EVICTION_LABEL,
  EVICTION_CAUSE_ANNOTATION,
  ClusterResourcePlacementDisruptionBudgetKind,
  ClusterResourcePlacementEvictionKind,
  EVICTION_EXECUTED,
  EVICTION_VALID,
  EvictionMessages,
  EvictionReasons,
  evictionTerminal,
  type PlacementDisruptionBudgetSpec,
  type PlacementEvictionSpec,
} from "../kinds/fleet-eviction.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import { decideEviction, type EvictedPlacement, type EvictionDecision } from "./eviction-decide.ts";
import { markBinding, refusalMark } from "./eviction-unreachable.ts";

/** The prefix of an eviction object's target namespace (a namespace never holds ':'). */
export const EVICTION_TARGET_PREFIX = "eviction:";
/** The reporting controller of the Events evictions record (KubeFleet's controller's name). */
export const EVICTION_CONTROLLER = "clusterresourceplacementeviction-controller";

/** What a run of a placement's evictions answers its object (src/durable-objects/replicaset.ts). */
export interface EvictionRunOutcome {
  /** A write lost a race: run again. */
  rerun?: boolean;
  /** No eviction of the placement is pending: the object may forget it. */
  gone?: boolean;
}

/** Whether a replica set object's target names a placement's evictions; the placement's name, or null. */
export function evictionTarget(namespace: string, name: string): string | null {
  return namespace === EVICTION_TARGET_PREFIX ? name : null;
}

/**
 * Asks for a run of placement `placement`'s evictions at once, without waiting for it.
 * @throws when the object cannot be reached
 */
export async function wakeEvictions(env: Env, placement: string): Promise<void> {
  await env.REPLICASETS.getByName(`${EVICTION_TARGET_PREFIX}/${placement}`).wake(EVICTION_TARGET_PREFIX, placement);
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const byAge = (a: KubeObject, b: KubeObject) => {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
};

/** The eviction's status after `decision`, at its generation. */
function statusAfter(eviction: KubeObject, decision: EvictionDecision, now: string, executedToo: boolean): Record<string, unknown> {
  const conditions = structuredClone((eviction.status?.conditions ?? []) as Condition[]);
  const generation = eviction.metadata.generation ?? 1;
  if (!decision.valid) {
    setCondition(
      conditions,
      { type: EVICTION_VALID, status: "False", reason: EvictionReasons.invalid, message: decision.message, observedGeneration: generation },
      now,
    );
  } else {
    setCondition(
      conditions,
      { type: EVICTION_VALID, status: "True", reason: EvictionReasons.valid, message: EvictionMessages.valid, observedGeneration: generation },
      now,
    );
    if (executedToo)
      setCondition(
        conditions,
        {
          type: EVICTION_EXECUTED,
          status: decision.executed ? "True" : "False",
          reason: decision.executed ? EvictionReasons.executed : EvictionReasons.notExecuted,
          message: decision.message,
          observedGeneration: generation,
        },
        now,
      );
  }
  return { ...(eviction.status ?? {}), conditions };
}

/**
 * Decides and carries out the pending evictions of ClusterResourcePlacement `placement` at `nowMs`
 * (epoch ms), oldest first. Idempotent: a run reads the current state; a decided eviction is
 * never decided again (KubeFleet's `IsEvictionInTerminalState`).
 * @throws errors of D1 or an unexpected write failure (the object retries with a backoff)
 */
export async function runEvictions(env: Env, placement: string, nowMs: number): Promise<EvictionRunOutcome> {
  const evictionStore = admittedStoreOf(env, ClusterResourcePlacementEvictionKind);
  const pending = (await evictionStore.list()).items
    .filter((e) => (e.spec as PlacementEvictionSpec | undefined)?.placementName === placement && !evictionTerminal(e) && !e.metadata.deletionTimestamp)
    .sort(byAge);
  if (pending.length === 0) return { gone: true };
  const now = stamp(nowMs);
  const crpObj = await admittedStoreOf(env, FLEET_PLACEMENT_KINDS.crp).get("", placement);
  const crp = crpObj as EvictedPlacement | null;
  const budgetObj = await admittedStoreOf(env, ClusterResourcePlacementDisruptionBudgetKind).get("", placement);
  const budget = budgetObj ? ((budgetObj.spec ?? {}) as PlacementDisruptionBudgetSpec) : null;
  const bindingStore = admittedStoreOf(env, ClusterResourceBindingKind);
  let bindings = crp
    ? (
        await bindingStore.listPage(undefined, {
          index: { key: PLACEMENT_TRACKING_LABEL, values: [placement] },
          filter: (o) => o.metadata.labels?.[PLACEMENT_TRACKING_LABEL] === placement,
        })
      ).items
    : [];
  const events: EventSpec[] = [];
  let raced = false;
  for (const eviction of pending) {
    const cluster = (eviction.spec as unknown as PlacementEvictionSpec).clusterName;
    let decision = decideEviction(crp, bindings, cluster, budget);
    const validBefore = ((eviction.status?.conditions ?? []) as Condition[]).some((c) => c.type === EVICTION_VALID && c.status === "True");
    // After a crash between the binding's deletion and the Executed condition: the deletion was ours.
    if (!decision.valid && decision.message === EvictionMessages.invalidMissingCRB && validBefore)
      decision = { valid: true, executed: true, deleteBinding: null, message: EvictionMessages.allowedPlacementRemoved };
    let current = eviction;
    if (decision.valid && decision.deleteBinding) {
      if (!validBefore) {
        const r = await racing(() =>
          evictionStore.write(
            "",
            eviction.metadata.name,
            { verb: "update", subresource: "status", body: { ...eviction, status: statusAfter(eviction, decision, now, false) } },
            { known: eviction },
          ),
        );
        if (r === "lost" || r === null) {
          raced = true;
          continue;
        }
        current = r;
      }
      const target = decision.deleteBinding;
      const r = await racing(() =>
        bindingStore.write(
          "",
          target.metadata.name,
          { verb: "delete", preconditions: { uid: target.metadata.uid!, resourceVersion: target.metadata.resourceVersion! } },
          { known: target },
        ),
      );
      if (r === "lost") {
        raced = true;
        continue;
      }
      bindings = bindings.filter((b) => b.metadata.name !== target.metadata.name);
    }
    const reason = !decision.valid ? EvictionReasons.invalid : decision.executed ? EvictionReasons.executed : EvictionReasons.notExecuted;
    const automatic = eviction.metadata.labels?.[AUTOMATIC_EVICTION_LABEL] !== undefined;
    const cause = eviction.metadata.annotations?.[EVICTION_CAUSE_ANNOTATION];
    // An automatic eviction refused: the placement's status shows it on the cluster (src/fleet/eviction-unreachable.ts),
    // marked before the decision is recorded, whose commit owes the placement its run.
    if (automatic && decision.valid && !decision.executed) {
      const target = bindings.find((b) => (b.spec as { targetCluster?: string } | undefined)?.targetCluster === cluster);
      if (target) await markBinding(env, target, refusalMark(eviction, reason, decision.message));
    }
    const status = statusAfter(current, decision, now, true);
    if (canonical(status) !== canonical(current.status ?? {})) {
      const r = await racing(() =>
        evictionStore.write("", eviction.metadata.name, { verb: "update", subresource: "status", body: { ...current, status } }, { known: current }),
      );
      if (r === "lost") {
        raced = true;
        continue;
      }
    }
    // The placement's Event (Flotilla's: KubeFleet's eviction controller records none), for a valid eviction.
    if (decision.valid && crpObj)
      events.push({
        regarding: {
          kind: FLEET_PLACEMENT_KINDS.crp.kind,
          apiVersion: `${FLEET_GROUP}/v1beta1`,
          name: placement,
          ...(crpObj.metadata.uid ? { uid: crpObj.metadata.uid } : {}),
        },
        reason,
        type: decision.executed ? "Normal" : "Warning",
        message: `${automatic ? `Automatic eviction (${cause ?? "hub taint"})` : "Eviction"} ${eviction.metadata.name} of cluster ${cluster}: ${decision.message}`,
        reportingController: EVICTION_CONTROLLER,
      });
    events.push({
      regarding: {
        kind: ClusterResourcePlacementEvictionKind.kind,
        apiVersion: `${FLEET_GROUP}/v1beta1`,
        name: eviction.metadata.name,
        ...(eviction.metadata.uid ? { uid: eviction.metadata.uid } : {}),
      },
      reason,
      type: decision.valid && decision.executed ? "Normal" : "Warning",
      message: `${decision.message} (placement ${placement}, cluster ${cluster})`,
      reportingController: EVICTION_CONTROLLER,
    });
  }
  if (events.length > 0) await recordEvents(env, events).catch((e: unknown) => console.error(`evictions of ${placement}: could not record events`, e));
  return raced ? { rerun: true } : {};
}

/** What a committed change owes the eviction controller: the placement whose evictions to run, or null. */
export function planEviction(change: Change): string | null {
  const { def, before, after } = change;
  if (def.group !== FLEET_GROUP || def.kind !== ClusterResourcePlacementEvictionKind.kind || !after) return null;
  if (before && deepEqual(before.spec ?? null, after.spec ?? null)) return null;
  if (evictionTerminal(after) || after.metadata.deletionTimestamp) return null;
  return (after.spec as PlacementEvictionSpec | undefined)?.placementName ?? null;
}

/** The eviction controller's after-commit hook ({@link planEviction}): a prompt run of the placement's evictions. */
export const evictionHook: AfterCommitHook<string> = {
  name: "fleet-evictions",
  plan: planEviction,
  async run(env, owed) {
    await wakeEvictions(env, owed);
  },
};
