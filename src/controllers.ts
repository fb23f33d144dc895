/**
 * The controller manifest: every controller of the hub, in one list, with what wakes it, where it
 * runs, its after-commit hook (src/store/hooks.ts) and its named timers (src/timers.ts). It is the
 * one place to read what a commit sets off and in which order: {@link installControllers}
 * registers the hooks and commit statements in this list's order (the order hooks run in for a
 * change that owes several), and the Durable Objects dispatch their alarms from {@link timersOf}.
 * No feature registers anything when its module loads.
 *
 * After OCM's controllers, each of which declares beside itself what wakes it (e.g. the
 * ManifestWorkReplicaSet controller, `WithInformersQueueKeysFunc(..., placeDecisionInformer)`):
 * here "what wakes it" is its hook's `plan` (the kinds and changes it watches) or a timer.
 *
 * Where they run ({@link Isolate}): a hook runs right after its commit in the isolate that wrote
 * (a person's request in the Worker; an agent's report in its cluster's object on the channel or
 * in the Worker over HTTP; a controller's own writes in the object that made them), or, after a
 * crash, in the outbox sweep (the scheduler object's alarm). A controller whose runs must be
 * serialised hands its work to its object (`runsIn`): the placement scheduler, each replica set,
 * a cluster's works delivery.
 *
 * Decision consumers (replica sets, add-ons installed by placements, policies) all wake on the
 * PlacementDecision change, through their hooks, as every other controller wakes on its kinds;
 * the add-on manager and the policy propagator by hooks of their own for it, run only when an
 * object of theirs names the decision's placement (src/placement/consumers.ts, an index kept by
 * a change counter),
 * as OCM's queue only the add-ons and bindings a decision's placement maps to.
 *
 * Why the scheduler object hosts more than scheduling: it is the hub's one singleton object, so
 * it also holds the hub-wide timers (the outbox sweep, Events' expiry, add-ons' rollout
 * rechecks, and a tainted cluster's automatic-eviction deadline, a row per such cluster). They are a few rows of its timers table, looked up here like any other; a second
 * singleton object for them would add an object (and its wake-ups) to run three timers.
 */
import type { AfterCommitHook, CommitStatements, KindName, Watch } from "./store/hooks.ts";
import { installHooks } from "./store/hooks.ts";
import { sweepOutbox } from "./store/outbox.ts";
import type { TimerHandler } from "./timers.ts";
import { defaultServiceAccountHook } from "./auth/serviceaccounts.ts";
import { clusterRoleAggregationHook } from "./auth/rbac-store.ts";
import { clusterNamespaceCreateHook, namespaceDeletionHook } from "./namespaces/controller.ts";
import { addonClusterUnknownHook } from "./addons/agent-health.ts";
import { schedulingHook } from "./placement/controller.ts";
import { addonDecisionHook, policyDecisionHook } from "./placement/consumers.ts";
import { replicaSetHook } from "./work/replicaset.ts";
import { placementHook } from "./fleet/controller.ts";
import { karmadaHook } from "./fleet/karmada/controller.ts";
import { updateRunHook } from "./fleet/updaterun/hook.ts";
import { evictionHook } from "./fleet/eviction.ts";
import { checkUnreachableCluster, UNREACHABLE_EVICTION_TIMER, unreachableEvictionHook } from "./fleet/eviction-unreachable.ts";
import { overrideHook } from "./overrides/snapshots.ts";
import { karmadaPolicyHook } from "./overrides/karmada-changes.ts";
import { deleteExpiredWork, workDeletingHook, workTtlHook } from "./work/deletion.ts";
import { clusterNamespaceHook, deliveryHook } from "./work/controller.ts";
import { garbageCollectorHook } from "./gc/controller.ts";
import { crdCleanupHook } from "./gc/crd-cleanup.ts";
import { setCountsStatements } from "./clusterprofile/set-counts.ts";
import { inventoryHook } from "./clusterprofile/controller.ts";
import { eventsHook, eventTtlCommitStatements } from "./events/controller.ts";
import { expireEvents } from "./events/expiry.ts";
import { policyHook } from "./policy/controller.ts";
import { addonHook } from "./addons/controller.ts";
import { runClusterManagementAddOn } from "./addons/manager.ts";
import { ADDON_NAME_LABEL } from "./addons/render.ts";
import { isKindDisabled } from "./fleet/select.ts";
import type { KindDefinition } from "./k8s/kind.ts";
import { NamespaceKind } from "./kinds/namespace.ts";
import { ServiceAccountKind } from "./kinds/serviceaccount.ts";
import { ClusterRoleKind } from "./kinds/rbac.ts";
import { ManagedClusterKind } from "./kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "./kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "./kinds/placement.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "./kinds/manifestwork.ts";
import { MWRS_LABEL } from "./kinds/manifestwork-labels.ts";
import { CustomResourceDefinitionKind } from "./kinds/index.ts";
import { EventKind } from "./kinds/event.ts";
import { PlacementBindingKind, PolicyKind, PolicySetKind, ROOT_POLICY_LABEL } from "./kinds/policy.ts";
import { AddOnDeploymentConfigKind, AddOnTemplateKind, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "./kinds/addon.ts";
import { FLEET_GROUP, PLACEMENT_TRACKING_LABEL } from "./kinds/fleet.ts";
import { ClusterResourceOverrideKind, ResourceOverrideKind } from "./kinds/fleet-override.ts";
import {
  ClusterPropagationPolicyKind,
  CPP_PERMANENT_ID_LABEL,
  KarmadaClusterResourceBindingKind,
  KarmadaResourceBindingKind,
  PP_PERMANENT_ID_LABEL,
  PropagationPolicyKind,
} from "./kinds/karmada.ts";
import { ClusterOverridePolicyKind, OverridePolicyKind } from "./kinds/karmada-override.ts";

/**
 * Where a controller's reconcile runs: `writer` for the isolate whose commit owes it (see the
 * module comment), or the Durable Object class it hands its work to.
 */
export type Isolate = "writer" | "ClusterObject" | "SchedulerObject" | "ReplicaSetObject";

/** The Durable Object classes that hold timers. */
export type TimerObject = "ClusterObject" | "SchedulerObject" | "ReplicaSetObject";

/** A named timer of a controller: the rows of `object`'s timers table named `name` (src/timers.ts). */
export interface TimerEntry {
  name: string;
  object: TimerObject;
  /** Runs a due row; undefined when the object runs it itself (a replica set's run, a cluster's leave). */
  run?: TimerHandler;
}

/** One controller of the manifest. */
export interface Controller {
  /** Its name (for a hook, the hook's name, which outbox rows store: never rename it). */
  name: string;
  /** What wakes it, in words: the kinds and changes its hook's `plan` watches, or its timers. */
  wakes: string;
  /**
   * What wakes its hook, as data (src/store/hooks.ts `Watch`): the write path calls the hook's
   * `plan` only for the changes these match, by a lookup of the change's kind. With `hook`.
   */
  watches?: readonly Watch[];
  /** The kinds whose commits its `statements` concern (the write path adds them to those only). With `statements`. */
  kinds?: readonly KindName[];
  /** Where its reconcile runs ({@link Isolate}). */
  runsIn: Isolate;
  /** Its after-commit hook. */
  hook?: AfterCommitHook<never>;
  /** Statements it adds to each commit's atomic batch (src/store/hooks.ts `CommitStatements`). */
  statements?: CommitStatements;
  /** Its named timers. */
  timers?: TimerEntry[];
}

const hook = <T>(h: AfterCommitHook<T>) => h as unknown as AfterCommitHook<never>;
/** A KubeFleet kind by name (any of its versions). */
const fleet = (kind: string): KindName => ({ group: FLEET_GROUP, kind });

/**
 * The hub's controllers, in the order their hooks run for a change that owes several (the order
 * the features' modules happened to register them in before this manifest, kept unchanged).
 */
export const CONTROLLERS: readonly Controller[] = [
  {
    name: defaultServiceAccountHook.name,
    wakes: "a Namespace created; its `default` ServiceAccount deleted",
    runsIn: "writer",
    hook: hook(defaultServiceAccountHook),
    watches: [
      { kinds: [NamespaceKind], changes: ["create"] },
      { kinds: [ServiceAccountKind], changes: ["delete"] },
    ],
  },
  {
    name: clusterRoleAggregationHook.name,
    wakes: "a ClusterRole created, changed or deleted (aggregationRule, labels)",
    runsIn: "writer",
    hook: hook(clusterRoleAggregationHook),
    watches: [{ kinds: [ClusterRoleKind] }],
  },
  {
    name: namespaceDeletionHook.name,
    wakes: "a Namespace's deletion started (and each of its objects removed, while it is Terminating)",
    runsIn: "writer",
    hook: hook(namespaceDeletionHook),
    watches: [{ kinds: [NamespaceKind], changes: ["update"] }],
  },
  {
    name: clusterNamespaceCreateHook.name,
    wakes: "a ManagedCluster created: its namespace",
    runsIn: "writer",
    hook: hook(clusterNamespaceCreateHook),
    watches: [{ kinds: [ManagedClusterKind], changes: ["create", "update"] }],
  },
  {
    name: addonClusterUnknownHook.name,
    wakes: "a ManagedCluster whose Available condition turned Unknown (a lease expiry)",
    runsIn: "writer",
    hook: hook(addonClusterUnknownHook),
    watches: [{ kinds: [ManagedClusterKind], changes: ["create", "update"] }],
  },
  {
    name: schedulingHook.name,
    wakes:
      "Placements, ManagedClusters (labels, claims, taints, status), ManagedClusterSets and bindings, AddOnPlacementScores (src/placement/changes.ts); a toleration's expiry",
    runsIn: "SchedulerObject",
    hook: hook(schedulingHook),
    watches: [{ kinds: [PlacementKind, ManagedClusterKind, ManagedClusterSetKind, ManagedClusterSetBindingKind, AddOnPlacementScoreKind] }],
  },
  {
    name: replicaSetHook.name,
    wakes:
      "a ManifestWorkReplicaSet written; its works' status or deletion; a PlacementDecision changed; a ManagedCluster relabelled (replica sets an override names); its rollout timer",
    runsIn: "ReplicaSetObject",
    hook: hook(replicaSetHook),
    watches: [
      { kinds: [ManifestWorkReplicaSetKind, PlacementDecisionKind] },
      { kinds: [ManifestWorkKind], labels: [MWRS_LABEL] },
      { kinds: [ManagedClusterKind], changes: ["update"] },
    ],
    timers: [{ name: "replicaset", object: "ReplicaSetObject" }],
  },
  {
    name: placementHook.name,
    wakes:
      "a ClusterResourcePlacement or ResourcePlacement written; an object its selectors may select; a ManagedCluster it may gain or lose; its works' status or deletion; one of its evictions decided; a cluster of one of its staged update runs started; an automatic eviction's refusal marked on one of its bindings or taken off",
    runsIn: "ReplicaSetObject",
    hook: hook(placementHook),
    watches: [
      { kinds: [fleet("ClusterResourcePlacement"), fleet("ResourcePlacement")] },
      { kinds: [fleet("ClusterResourcePlacementEviction")], changes: ["update"] },
      { kinds: [fleet("ClusterStagedUpdateRun"), fleet("StagedUpdateRun")], changes: ["update"] },
      { kinds: [fleet("ClusterResourceBinding")], changes: ["update"] },
      { kinds: [ManifestWorkKind], labels: [PLACEMENT_TRACKING_LABEL] },
      { kinds: [ManagedClusterKind] },
      { kinds: (def: KindDefinition) => !isKindDisabled(def) && !def.conversion },
    ],
  },
  {
    name: updateRunHook.name,
    wakes:
      "a ClusterStagedUpdateRun or StagedUpdateRun created, its spec (state) changed or its deletion started; an approval request's status changed; its placement's bindings (from the placement controller); its TimedWait's timer",
    runsIn: "ReplicaSetObject",
    hook: hook(updateRunHook),
    watches: [
      { kinds: [fleet("ClusterStagedUpdateRun"), fleet("StagedUpdateRun")], changes: ["create", "update"] },
      { kinds: [fleet("ClusterApprovalRequest"), fleet("ApprovalRequest")], changes: ["update"] },
    ],
    timers: [{ name: "updaterun-wait", object: "ReplicaSetObject" }],
  },
  {
    name: evictionHook.name,
    wakes: "a ClusterResourcePlacementEviction created (its placement's evictions run in its `eviction:/<placement>` object, one at a time)",
    runsIn: "ReplicaSetObject",
    hook: hook(evictionHook),
    watches: [{ kinds: [fleet("ClusterResourcePlacementEviction")], changes: ["create", "update"] }],
  },
  {
    name: unreachableEvictionHook.name,
    wakes:
      "a ManagedCluster's hub taint (unreachable, unavailable) added or re-stamped: its timer, at once; then at its PickN placements' toleration deadlines and a refused eviction's retry (src/fleet/eviction-unreachable.ts)",
    runsIn: "SchedulerObject",
    hook: hook(unreachableEvictionHook),
    watches: [{ kinds: [ManagedClusterKind], changes: ["update"] }],
    timers: [
      {
        name: UNREACHABLE_EVICTION_TIMER,
        object: "SchedulerObject",
        run: async ({ env, key, now }) => checkUnreachableCluster(env, key, now),
      },
    ],
  },
  {
    name: karmadaHook.name,
    wakes:
      "a PropagationPolicy or ClusterPropagationPolicy written; an object its selectors may select or its claim names; a ManagedCluster's labels, provider/region/zone, taints, acceptance or deletion; its works' status or deletion; an OverridePolicy or ClusterOverridePolicy whose spec changed",
    runsIn: "ReplicaSetObject",
    hook: hook(karmadaHook),
    watches: [
      { kinds: [PropagationPolicyKind, ClusterPropagationPolicyKind, OverridePolicyKind, ClusterOverridePolicyKind, ManagedClusterKind] },
      { kinds: [ManifestWorkKind], labels: [PP_PERMANENT_ID_LABEL, CPP_PERMANENT_ID_LABEL] },
      { kinds: [KarmadaResourceBindingKind, KarmadaClusterResourceBindingKind], changes: ["update", "delete"] },
      { kinds: (def: KindDefinition) => !isKindDisabled(def) && !def.conversion && def.storage === "d1" },
    ],
  },
  {
    name: overrideHook.name,
    wakes:
      "a ClusterResourceOverride or ResourceOverride created, its spec changed, its deletion started or removed: its snapshots, then the placements it may concern",
    runsIn: "writer",
    hook: hook(overrideHook),
    watches: [{ kinds: [ClusterResourceOverrideKind, ResourceOverrideKind] }],
  },
  {
    name: karmadaPolicyHook.name,
    wakes:
      "an OverridePolicy or ClusterOverridePolicy created, its spec changed or removed: the KubeFleet placements, ManifestWorkReplicaSets and (a ClusterOverridePolicy) template add-ons it may concern",
    runsIn: "writer",
    hook: hook(karmadaPolicyHook),
    watches: [{ kinds: [OverridePolicyKind, ClusterOverridePolicyKind] }],
  },
  {
    name: workDeletingHook.name,
    wakes: "a ManifestWork's deletion started",
    runsIn: "writer",
    hook: hook(workDeletingHook),
    watches: [{ kinds: [ManifestWorkKind], changes: ["update"] }],
  },
  {
    name: workTtlHook.name,
    wakes: "a ManifestWork's ttlSecondsAfterFinished deadline appeared or moved; its timer",
    runsIn: "writer",
    hook: hook(workTtlHook),
    watches: [{ kinds: [ManifestWorkKind], changes: ["create", "update"] }],
    timers: [
      {
        name: "work-ttl",
        object: "ClusterObject",
        run: async ({ env, object, key }) => {
          const slash = key.indexOf("/");
          if (slash <= 0) return null;
          return deleteExpiredWork(env, object, key.slice(slash + 1), key.slice(0, slash));
        },
      },
    ],
  },
  {
    name: deliveryHook.name,
    wakes: "a ManifestWork or replicated Policy created, deleted or changed in what its agent receives",
    runsIn: "ClusterObject",
    hook: hook(deliveryHook),
    watches: [{ kinds: [ManifestWorkKind] }, { kinds: [PolicyKind], labels: [ROOT_POLICY_LABEL] }],
  },
  {
    name: clusterNamespaceHook.name,
    wakes: "a ManagedCluster removed: its namespace's works and scores",
    runsIn: "writer",
    hook: hook(clusterNamespaceHook),
    watches: [{ kinds: [ManagedClusterKind], changes: ["delete"] }],
  },
  {
    name: crdCleanupHook.name,
    wakes: "a CustomResourceDefinition's deletion started: its custom resources, then its finalizer",
    runsIn: "writer",
    hook: hook(crdCleanupHook),
    watches: [{ kinds: [CustomResourceDefinitionKind], changes: ["create", "update"] }],
  },
  {
    name: garbageCollectorHook.name,
    wakes: "an object with owners or dependents deleted (ownerReferences, foreground deletion)",
    runsIn: "writer",
    hook: hook(garbageCollectorHook),
    watches: [{ kinds: "*" }],
  },
  {
    name: setCountsStatements.name,
    wakes: "a ManagedCluster created, removed or relabelled; a ManagedClusterSet created, removed or reselecting (its counts, in the commit's own batch)",
    runsIn: "writer",
    statements: setCountsStatements,
    kinds: [ManagedClusterKind, ManagedClusterSetKind],
  },
  {
    name: inventoryHook.name,
    wakes: "ManagedClusters, ManagedClusterSets and bindings: the ClusterProfiles",
    runsIn: "writer",
    hook: hook(inventoryHook),
    watches: [{ kinds: [ManagedClusterKind, ManagedClusterSetKind, ManagedClusterSetBindingKind] }],
  },
  {
    name: eventsHook.name,
    wakes: "the changes that record an Event; an Event created (its TTL row in the commit's batch); the expiry timer",
    runsIn: "writer",
    hook: hook(eventsHook),
    watches: [
      { kinds: [ManagedClusterKind, PlacementDecisionKind, ManifestWorkKind, ManifestWorkReplicaSetKind, ManagedClusterAddOnKind, PolicyKind] },
      { kinds: [EventKind], changes: ["create"] },
    ],
    statements: eventTtlCommitStatements,
    kinds: [EventKind],
    timers: [{ name: "event-expiry", object: "SchedulerObject", run: async ({ env, now }) => (await expireEvents(env, now)).nextDue }],
  },
  {
    name: policyHook.name,
    wakes: "root Policies, replicated Policies' compliance, PlacementBindings, PolicySets",
    runsIn: "writer",
    hook: hook(policyHook),
    watches: [{ kinds: [PolicyKind, PlacementBindingKind, PolicySetKind] }],
  },
  {
    name: policyDecisionHook.name,
    wakes: "the policy propagator, for a PlacementDecision changed whose placement a PlacementBinding names (src/placement/consumers.ts)",
    runsIn: "writer",
    hook: hook(policyDecisionHook),
    watches: [{ kinds: [PlacementDecisionKind] }],
  },
  {
    name: addonHook.name,
    wakes: "the add-on kinds, add-on works' status; a ManagedCluster relabelled (add-ons an override names); a rollout's recheck timer",
    runsIn: "writer",
    hook: hook(addonHook),
    watches: [
      { kinds: [ClusterManagementAddOnKind, ManagedClusterAddOnKind, AddOnTemplateKind, AddOnDeploymentConfigKind] },
      { kinds: [ManagedClusterKind], changes: ["update"] },
      { kinds: [ManifestWorkKind], labels: [ADDON_NAME_LABEL] },
    ],
    timers: [
      {
        name: "addon",
        object: "SchedulerObject",
        run: async ({ env, key, now, setTimer }) => {
          await runClusterManagementAddOn(env, key, now, true, (name, at) => setTimer(`addon:${name}`, at));
        },
      },
    ],
  },
  {
    name: addonDecisionHook.name,
    wakes: "the add-on manager, for a PlacementDecision changed whose placement a ClusterManagementAddOn's installStrategy names (src/placement/consumers.ts)",
    runsIn: "writer",
    hook: hook(addonDecisionHook),
    watches: [{ kinds: [PlacementDecisionKind] }],
  },
  {
    name: "outbox",
    wakes: "outbox rows left unfinished (a crash, a failed hook): the sweep timer",
    runsIn: "SchedulerObject",
    timers: [{ name: "outbox-sweep", object: "SchedulerObject", run: async ({ env, now }) => (await sweepOutbox(env, now)).nextDue }],
  },
  {
    name: "cluster-lease",
    wakes: "a cluster's lease not renewed in time, its leave deadline (the cluster object's own timers)",
    runsIn: "ClusterObject",
    timers: [{ name: "leave", object: "ClusterObject" }],
  },
];

/**
 * Registers the manifest's hooks and commit statements with the store's write path, in the
 * manifest's order (idempotent: again, the same registry). Called once by each entry point
 * (src/index.ts) before it serves anything.
 */
export function installControllers(): void {
  installHooks(
    CONTROLLERS.flatMap((c) => (c.hook ? [{ hook: c.hook, watches: c.watches ?? [{ kinds: "*" as const }] }] : [])),
    CONTROLLERS.flatMap((c) => (c.statements ? [{ statements: c.statements, kinds: c.kinds }] : [])),
  );
}

/**
 * The timer handlers of `object`'s rows, by timer name (the lookup of its `alarm()`); a timer the
 * object runs itself has no handler here.
 */
export function timersOf(object: TimerObject): Readonly<Record<string, TimerHandler>> {
  const out: Record<string, TimerHandler> = {};
  for (const c of CONTROLLERS) for (const t of c.timers ?? []) if (t.object === object && t.run) out[t.name] = t.run;
  return out;
}
