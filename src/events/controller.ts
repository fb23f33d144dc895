/**
 * Which committed changes the hub records Events for, and the bookkeeping of Events' expiry, both
 * on the one write path (src/store/hooks.ts):
 *
 * - the after-commit hook `events` compares each change's object before and after (pure, before
 *   the commit) and owes the Events of its transitions, recorded after the commit
 *   (src/events/record.ts, folding repeats). A write that changes no condition, taint or decision
 *   (an idle heartbeat's lease renewal commits nothing at all) owes none, so it costs nothing more:
 *   - ManagedCluster (reportingController `managed-cluster-controller`, OCM registration's; lease
 *     ones `managed-cluster-lease-controller`): created (`ManagedClusterCreated`), accepted
 *     (`ManagedClusterAccepted`), denied (`HubClusterAdminDenied`, Warning), joined
 *     (`ManagedClusterJoined`), available (`ManagedClusterAvailable`; a recovery says "available
 *     again", so it is an Event of its own after the lease expiry, and later recoveries fold into it),
 *     lease expired (`ManagedClusterLeaseUpdateStopped`, Warning), unavailable (the condition's
 *     reason, Warning), a taint added or removed (`ManagedClusterTaintAdded`/`...Removed`),
 *     leaving (`ManagedClusterLeaving`), left (`ManagedClusterLeft`), leave timed out
 *     (`ManagedClusterLeaveTimedOut`, Warning);
 *   - PlacementDecision: how many clusters its decisions added and removed, on its Placement
 *     (`DecisionUpdate`, `placement-controller`, as OCM's scheduler names it);
 *   - ManifestWork (`work-agent`): applied (`ManifestWorkApplied`), failed to apply
 *     (`ManifestWorkApplyFailed`, Warning), deleted from its cluster (`ManifestWorkDeleted`);
 *   - ManifestWorkReplicaSet (`manifestworkreplicaset-controller`): a rollout step (`Progressing`:
 *     "N of M clusters succeeded"), a stop on failures (`RolloutFailed`, Warning), completion
 *     (`Complete`), after OCM's PlacementRolledOut condition reasons;
 *   - ManagedClusterAddOn (`addon-manager-controller`): installed (`ManagedClusterAddOnCreated`),
 *     removed (`ManagedClusterAddOnDeleted`), Available changed (the condition's reason, Warning
 *     unless True), manifests failed to apply (the ManifestApplied reason, Warning);
 *   - a replicated Policy: propagated to or removed from its cluster (`PolicyPropagation` on its
 *     root, `policy-propagator`), its compliance changed (`policy: <cluster>/<name>` on it,
 *     `policy-status-sync`, the details' newest messages; Warning unless Compliant);
 *   - an Event created by a client: the expiry timer is armed (src/events/expiry.ts; the
 *     recorder arms it for the hub's own).
 * - the commit statements `event-ttl` keep each Event's last write time in `event_ttl`
 *   (migration 0012) in the same atomic batch as the Event, so expiry reads the oldest first by
 *   index, never a scan of all Events.
 *
 * Webhook deliveries record theirs directly (src/webhook/receiver.ts): they commit no object.
 *
 * The Events a change owes are recorded after its commit, from its outbox row: a hub that crashes
 * between the two records them when the sweep runs the row again, and one that crashes after
 * recording but before deleting the row records them once more (a repeat: its count is one
 * higher), as client-go's recorder may send an Event twice.
 */
import { eventTtlShapes, type GuardedBinder } from "../store/storage.ts";
import { apiVersionOf } from "../k8s/kind.ts";
import { findCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { EventKind } from "../kinds/event.ts";
import { Conditions, ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { isReplicatedPolicy, PolicyKind, ROOT_POLICY_LABEL } from "../kinds/policy.ts";
import { PLACEMENT_LABEL } from "../scheduling/index.ts";
import type { AfterCommitHook, Change, CommitStatements } from "../store/hooks.ts";
import { clock } from "../clock.ts";
import { HUB_INSTANCE, recordEvents, refOf, type EventSpec } from "./record.ts";
import { armEventExpiry } from "./expiry.ts";

/** OCM registration's hub controller, as the Events of a ManagedCluster name it. */
export const CLUSTER_CONTROLLER = "managed-cluster-controller";
/** OCM registration's lease controller. */
export const LEASE_CONTROLLER = "managed-cluster-lease-controller";
/** OCM's placement scheduler. */
export const PLACEMENT_CONTROLLER = "placement-controller";
/** OCM's work agent (applies works on their cluster). */
export const WORK_AGENT = "work-agent";
/** OCM's ManifestWorkReplicaSet controller. */
export const REPLICASET_CONTROLLER = "manifestworkreplicaset-controller";

function conditionsOf(obj: KubeObject | null): Condition[] {
  return ((obj?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[];
}

/** The condition `type` of `obj` when its status or reason differs from `before`'s, else undefined. */
function changed(before: KubeObject | null, after: KubeObject, type: string): Condition | undefined {
  const now = findCondition(conditionsOf(after), type);
  if (!now) return undefined;
  const was = findCondition(conditionsOf(before), type);
  return was && was.status === now.status && was.reason === now.reason ? undefined : now;
}

function taintKeys(obj: KubeObject | null): Set<string> {
  const taints = (obj?.spec as { taints?: { key: string; effect: string; value?: string }[] } | undefined)?.taints ?? [];
  return new Set(taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`));
}

/** A ManagedCluster's transitions (see the module doc). */
function clusterEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  if (!after) return [];
  const regarding = refOf(ManagedClusterKind, after);
  const name = after.metadata.name;
  const out: EventSpec[] = [];
  const ev = (reason: string, message: string, type: EventSpec["type"] = "Normal", reportingController = CLUSTER_CONTROLLER) =>
    out.push({ regarding, reason, type, message, reportingController });
  if (!before) ev("ManagedClusterCreated", `Managed cluster ${name} registered on the hub`);
  const accepted = changed(before, after, Conditions.HubAccepted);
  if (accepted?.status === "True") ev("ManagedClusterAccepted", `managed cluster ${name} is accepted by hub cluster admin`);
  else if (accepted?.status === "False" && accepted.reason === "HubClusterAdminDenied")
    ev("HubClusterAdminDenied", `managed cluster ${name} is denied by hub cluster admin`, "Warning");
  const joined = changed(before, after, Conditions.Joined);
  if (joined?.status === "True") ev("ManagedClusterJoined", `managed cluster ${name} joined the hub`);
  else if (joined?.reason === "ManagedClusterLeaving")
    ev("ManagedClusterLeaving", `managed cluster ${name} is leaving: its agent is removing what its works applied`);
  else if (joined?.reason === "ManagedClusterLeft") ev("ManagedClusterLeft", `managed cluster ${name} left the hub`);
  else if (joined?.reason === "ManagedClusterLeaveTimedOut")
    ev("ManagedClusterLeaveTimedOut", `managed cluster ${name}'s agent did not confirm its leave in time; the hub removed it`, "Warning");
  const available = changed(before, after, Conditions.Available);
  // Available again: it was reported before, and this is not the join (a lease may expire between
  // the acceptance and the agent's first heartbeat).
  const again = findCondition(conditionsOf(before), Conditions.Available) !== undefined && joined?.status !== "True";
  if (available?.status === "True" && again) ev("ManagedClusterAvailable", `managed cluster ${name} is available again`, "Normal", LEASE_CONTROLLER);
  else if (available?.status === "True") ev("ManagedClusterAvailable", `managed cluster ${name} is available`, "Normal", LEASE_CONTROLLER);
  else if (available?.reason === "ManagedClusterLeaseUpdateStopped")
    ev(
      "ManagedClusterLeaseUpdateStopped",
      `managed cluster ${name} available condition is unknown: its agent stopped updating its lease`,
      "Warning",
      LEASE_CONTROLLER,
    );
  else if (available)
    ev(
      available.reason || "ManagedClusterUnavailable",
      `managed cluster ${name} is not available: ${available.message || available.status}`,
      "Warning",
      LEASE_CONTROLLER,
    );
  const was = taintKeys(before);
  const is = taintKeys(after);
  for (const t of is) if (!was.has(t)) ev("ManagedClusterTaintAdded", `taint ${t} added to managed cluster ${name}`);
  for (const t of was) if (!is.has(t)) ev("ManagedClusterTaintRemoved", `taint ${t} removed from managed cluster ${name}`);
  return out;
}

function decidedClusters(obj: KubeObject | null): Set<string> {
  const decisions = (obj?.status as { decisions?: { clusterName?: string }[] } | undefined)?.decisions ?? [];
  return new Set(decisions.map((d) => d.clusterName ?? "").filter((c) => c !== ""));
}

/** The names of `list`, the first few, for a message. */
function some(list: string[]): string {
  const shown = list.slice(0, 5).join(", ");
  return list.length > 5 ? `${shown} and ${list.length - 5} more` : shown;
}

/** A PlacementDecision's change of clusters, on its Placement (see the module doc). */
function decisionEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  const obj = after ?? before;
  if (!obj || !after) return [];
  const was = decidedClusters(before);
  const is = decidedClusters(after);
  const added = [...is].filter((c) => !was.has(c)).sort();
  const removed = [...was].filter((c) => !is.has(c)).sort();
  if (added.length === 0 && removed.length === 0) return [];
  const placement = obj.metadata.labels?.[PLACEMENT_LABEL];
  if (!placement) return [];
  const owner = (obj.metadata.ownerReferences ?? []).find((r) => r.kind === PlacementKind.kind && r.name === placement);
  const parts = [`${added.length} added${added.length ? ` (${some(added)})` : ""}`, `${removed.length} removed${removed.length ? ` (${some(removed)})` : ""}`];
  return [
    {
      regarding: {
        kind: PlacementKind.kind,
        apiVersion: apiVersionOf(PlacementKind),
        name: placement,
        namespace: obj.metadata.namespace ?? "",
        ...(owner ? { uid: owner.uid } : {}),
      },
      reason: "DecisionUpdate",
      type: "Normal",
      message: `Decision ${obj.metadata.name} updated: ${parts.join(", ")}; ${is.size} cluster${is.size === 1 ? "" : "s"} decided`,
      reportingController: PLACEMENT_CONTROLLER,
    },
  ];
}

/** A ManifestWork applied, failing, or deleted from its cluster (see the module doc). */
function workEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  if (!after) {
    // Removed: from its cluster when its agent had applied it (its deletion waited on the agent).
    if (!before) return [];
    return [
      {
        regarding: refOf(ManifestWorkKind, before),
        reason: "ManifestWorkDeleted",
        type: "Normal",
        message: `ManifestWork ${before.metadata.name} deleted from cluster ${before.metadata.namespace ?? ""}`,
        reportingController: WORK_AGENT,
      },
    ];
  }
  const applied = changed(before, after, "Applied");
  if (!applied) return [];
  const regarding = refOf(ManifestWorkKind, after);
  if (applied.status === "True")
    return [
      {
        regarding,
        reason: "ManifestWorkApplied",
        type: "Normal",
        message: `ManifestWork ${after.metadata.name} applied on cluster ${after.metadata.namespace ?? ""}`,
        reportingController: WORK_AGENT,
      },
    ];
  if (applied.status === "False")
    return [
      {
        regarding,
        reason: "ManifestWorkApplyFailed",
        type: "Warning",
        message: `ManifestWork ${after.metadata.name} failed to apply on cluster ${after.metadata.namespace ?? ""}: ${applied.message || applied.reason}`,
        reportingController: WORK_AGENT,
      },
    ];
  return [];
}

/** A ManifestWorkReplicaSet's rollout step, failure or completion (see the module doc). */
function rolloutEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  if (!after) return [];
  const now = findCondition(conditionsOf(after), "PlacementRolledOut");
  if (!now) return [];
  const was = findCondition(conditionsOf(before), "PlacementRolledOut");
  if (was && was.status === now.status && was.reason === now.reason && was.message === now.message) return [];
  const regarding = refOf(ManifestWorkReplicaSetKind, after);
  if (now.status === "True")
    return [
      { regarding, reason: "Complete", type: "Normal", message: `rollout of ${after.metadata.name} complete`, reportingController: REPLICASET_CONTROLLER },
    ];
  const failed = now.message.includes("the rollout stopped");
  if (failed && !(was?.message ?? "").includes("the rollout stopped"))
    return [
      {
        regarding,
        reason: "RolloutFailed",
        type: "Warning",
        message: `rollout of ${after.metadata.name} stopped: ${now.message}`,
        reportingController: REPLICASET_CONTROLLER,
      },
    ];
  // A step: how many clusters succeeded moved (the message's first clause).
  const step = (m: string | undefined) => (m ?? "").split(";")[0];
  if (step(was?.message) === step(now.message)) return [];
  return [
    {
      regarding,
      reason: "Progressing",
      type: "Normal",
      message: `rollout of ${after.metadata.name}: ${step(now.message)}`,
      reportingController: REPLICASET_CONTROLLER,
    },
  ];
}

/** OCM's add-on manager (installs add-ons and keeps their status). */
export const ADDON_CONTROLLER = "addon-manager-controller";
/** OCM's policy propagator (replicates policies, gathers their compliance). */
export const POLICY_PROPAGATOR = "policy-propagator";
/** OCM's policy status sync on the managed cluster (reports each replicated policy's compliance). */
export const POLICY_STATUS_SYNC = "policy-status-sync";

/** A ManagedClusterAddOn installed, removed, its availability or manifests changed (see the module doc). */
function addonEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  const obj = after ?? before;
  if (!obj) return [];
  const regarding = refOf(ManagedClusterAddOnKind, obj);
  const where = `add-on ${obj.metadata.name} on cluster ${obj.metadata.namespace ?? ""}`;
  const ev = (reason: string, message: string, type: EventSpec["type"] = "Normal"): EventSpec => ({
    regarding,
    reason,
    type,
    message,
    reportingController: ADDON_CONTROLLER,
  });
  if (!after) return [ev("ManagedClusterAddOnDeleted", `${where} removed`)];
  const out: EventSpec[] = [];
  if (!before) out.push(ev("ManagedClusterAddOnCreated", `${where} installed`));
  const available = changed(before, after, "Available");
  if (available)
    out.push(
      ev(
        available.reason || "ManagedClusterAddOnAvailabilityChanged",
        `${where}: Available ${available.status}${available.message ? `: ${available.message}` : ""}`,
        available.status === "True" ? "Normal" : "Warning",
      ),
    );
  const applied = changed(before, after, "ManifestApplied");
  if (applied?.status === "False")
    out.push(ev(applied.reason || "ManifestApplyFailed", `${where}: its manifests failed to apply${applied.message ? `: ${applied.message}` : ""}`, "Warning"));
  return out;
}

/** The compliance a policy's status states (OCM's Compliant, NonCompliant, Pending), or "" for none yet. */
function complianceOf(obj: KubeObject | null): string {
  return String((obj?.status as { compliant?: unknown } | undefined)?.compliant ?? "");
}

/**
 * A replicated Policy propagated to or removed from its cluster, on its root (`PolicyPropagation`,
 * as OCM's propagator), and its compliance changing, on the replicated Policy (reason `policy:
 * <namespace>/<name>`, the message OCM's status sync records: the compliance and its details;
 * Warning unless Compliant).
 */
function policyEvents(before: KubeObject | null, after: KubeObject | null): EventSpec[] {
  const obj = after ?? before;
  if (!obj || !isReplicatedPolicy(obj)) return [];
  const root = obj.metadata.labels?.[ROOT_POLICY_LABEL] ?? "";
  const dot = root.indexOf(".");
  const cluster = obj.metadata.namespace ?? "";
  const rootRef = { kind: PolicyKind.kind, apiVersion: apiVersionOf(PolicyKind), namespace: root.slice(0, dot), name: root.slice(dot + 1) };
  const propagation = (message: string): EventSpec => ({
    regarding: rootRef,
    reason: "PolicyPropagation",
    type: "Normal",
    message,
    reportingController: POLICY_PROPAGATOR,
  });
  if (!after) return [propagation(`Policy ${root} was removed from cluster ${cluster}`)];
  const out: EventSpec[] = [];
  if (!before) out.push(propagation(`Policy ${root} was propagated to cluster ${cluster}`));
  const compliant = complianceOf(after);
  if (compliant && compliant !== complianceOf(before)) {
    const details = ((after.status as { details?: { history?: { message?: string }[] }[] } | undefined)?.details ?? [])
      .map((d) => d.history?.[0]?.message)
      .filter((m): m is string => Boolean(m));
    out.push({
      regarding: refOf(PolicyKind, after),
      reason: `policy: ${cluster}/${after.metadata.name}`,
      type: compliant === "Compliant" ? "Normal" : "Warning",
      message: details.length > 0 ? details.join("; ") : compliant,
      reportingController: POLICY_STATUS_SYNC,
    });
  }
  return out;
}

/**
 * The Events `change` owes (see the module doc), pure: the specs of the transitions it makes.
 * Exported for tests.
 */
export function eventsOf(change: Change): EventSpec[] {
  const { def, before, after } = change;
  if (def === ManagedClusterKind) return clusterEvents(before, after);
  if (def === PlacementDecisionKind) return decisionEvents(before, after);
  if (def === ManifestWorkKind) return workEvents(before, after);
  if (def === ManifestWorkReplicaSetKind) return rolloutEvents(before, after);
  if (def === ManagedClusterAddOnKind) return addonEvents(before, after);
  if (def === PolicyKind) return policyEvents(before, after);
  return [];
}

/** What a change owes the `events` hook: Events to record at `at` (epoch ms), and/or the expiry timer to arm. */
interface EventsOwed {
  record?: EventSpec[];
  at?: number;
  /** An Event was created: arm the expiry timer. */
  arm?: boolean;
}

/** The Events' after-commit hook: records the Events a change calls for, arms the expiry timer. */
export const eventsHook: AfterCommitHook<EventsOwed> = {
  name: "events",
  plan(change) {
    // A client's Event arms the expiry timer here; the recorder's arm it themselves (src/events/record.ts).
    if (change.def === EventKind)
      return change.before === null && change.after !== null && change.after.reportingInstance !== HUB_INSTANCE ? { arm: true } : null;
    const record = eventsOf(change);
    return record.length > 0 ? { record, at: clock.now() } : null;
  },
  async run(env, owed) {
    if (owed.record) await recordEvents(env, owed.record, owed.at);
    if (owed.arm) await armEventExpiry(env);
  },
};

/** The `event_ttl` statement of an Event's write (see the module doc); none for other kinds. */
export function eventTtlStatements(change: Change, guarded: GuardedBinder): D1PreparedStatement[] {
  if (change.def !== EventKind) return [];
  return [change.after ? guarded(eventTtlShapes.written, { at: clock.now() }) : guarded(eventTtlShapes.removed)];
}
/** The Events' TTL commit statements (registered by the controller manifest, src/controllers.ts). */
export const eventTtlCommitStatements: CommitStatements = { name: "event-ttl", statements: eventTtlStatements };
