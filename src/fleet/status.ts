/**
 * A placement's status as KubeFleet reports it (kubefleet-dev/kubefleet
 * `pkg/controllers/placement/placement_status.go`, `pkg/utils/condition`): per cluster the
 * conditions Scheduled, RolloutStarted, Overridden (NoOverrideSpecified, OverriddenSucceeded, or
 * OverriddenFailed with the override's error: `pkg/controllers/workgenerator/controller.go`),
 * WorkSynchronized, Applied and Available (each
 * evaluated only once the one before is True; the first Unknown or False stops the chain),
 * `failedPlacements` and `driftedPlacements` from the works' per-manifest conditions the agents
 * report (docs/kubefleet.md "What the agent reports back"); and the placement's own conditions,
 * `<Kind>Scheduled` then the same chain summed over its clusters with KubeFleet's reasons and
 * messages. Pure: the works and the time are arguments.
 */
import type { Condition, KubeObject } from "../k8s/meta.ts";
import type { WorkCondition } from "../work/rollout.ts";
import type { ResourceIdentifier } from "./select.ts";

/** The chain of per-cluster condition types after Scheduled (KubeFleet's `CondTypesForClientSideServerSideApplyStrategies`). */
export const CHAIN = ["RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"] as const;
type ChainType = (typeof CHAIN)[number];
type Status = "True" | "False" | "Unknown";

/** A condition without its transition time (set by `setCondition`). */
export type NewCondition = Omit<Condition, "lastTransitionTime">;

const PER_CLUSTER: Record<ChainType, Record<Status, [string, string]>> = {
  RolloutStarted: {
    True: ["RolloutStarted", "Detected the new changes on the resources and started the rollout process"],
    False: ["RolloutNotStartedYet", "The rollout is being blocked by the rollout strategy"],
    Unknown: ["RolloutStartedUnknown", "In the process of deciding whether to roll out some version of the resources or not"],
  },
  Overridden: {
    True: ["NoOverrideSpecified", "No override rules are configured for the selected resources"],
    False: ["OverriddenFailed", "Failed to apply the override rules on the resources: %s"],
    Unknown: ["OverriddenPending", "In the process of overriding the selected resources if there is any override defined"],
  },
  WorkSynchronized: {
    True: ["AllWorkSynced", "All of the works are synchronized to the latest"],
    // The work generator's message (pkg/controllers/workgenerator/controller.go), its error after it.
    False: ["SyncWorkFailed", "Failed to synchronize the work to the latest: %s"],
    Unknown: ["WorkSynchronizedUnknown", "In the process of creating or updating the work object(s) in the hub cluster"],
  },
  Applied: {
    True: ["AllWorkHaveBeenApplied", "All corresponding work objects are applied"],
    False: ["NotAllWorkHaveBeenApplied", "Work object %s has failed to apply"],
    Unknown: ["ApplyPending", "In the process of applying the resources on the member cluster"],
  },
  Available: {
    True: ["AllWorkAreAvailable", "All corresponding work objects are available"],
    False: ["NotAllWorkAreAvailable", "Work object %s is not yet available"],
    Unknown: ["ResourceAvailableUnknown", "The availability of the selected resources is unknown yet "],
  },
};

const PLACEMENT_LEVEL: Record<ChainType, Record<Status, [string, (n: number) => string]>> = {
  RolloutStarted: {
    True: ["RolloutStarted", (n) => `All ${n} cluster(s) start rolling out the latest resource`],
    False: ["RolloutNotStartedYet", (n) => `The rollout is being blocked by the rollout strategy in ${n} cluster(s)`],
    Unknown: ["RolloutStartedUnknown", (n) => `There are still ${n} cluster(s) in the process of deciding whether to roll out the latest resources or not`],
  },
  Overridden: {
    // With overrides applied in some cluster: OVERRIDDEN_SUCCEEDED (KubeFleet's `setPlacementConditions`).
    True: ["NoOverrideSpecified", () => "No override rules are configured for the selected resources"],
    False: ["OverriddenFailed", (n) => `Failed to override resources in ${n} cluster(s)`],
    Unknown: [
      "OverriddenPending",
      (n) => `There are still ${n} cluster(s) in the process of overriding the selected resources if there is any override defined`,
    ],
  },
  WorkSynchronized: {
    True: ["WorkSynchronized", (n) => `Work(s) are successfully created or updated in ${n} target cluster(s)' namespaces`],
    False: ["WorkNotSynchronizedYet", (n) => `There are ${n} cluster(s) which have not finished creating or updating work(s) yet`],
    Unknown: ["WorkSynchronizedUnknown", (n) => `There are still ${n} cluster(s) in the process of creating or updating the work object(s) in the hub cluster`],
  },
  Applied: {
    True: ["ApplySucceeded", (n) => `The selected resources are successfully applied to ${n} cluster(s)`],
    False: ["ApplyFailed", (n) => `Failed to apply resources to ${n} cluster(s), please check the \`failedPlacements\` status`],
    Unknown: ["ApplyPending", (n) => `There are still ${n} cluster(s) in the process of applying the resources on the member cluster`],
  },
  Available: {
    True: ["ResourceAvailable", (n) => `The selected resources in ${n} cluster(s) are available now`],
    False: ["ResourceNotAvailableYet", (n) => `The selected resources in ${n} cluster(s) are still not available yet`],
    Unknown: ["ResourceAvailableUnknown", (n) => `There are still ${n} cluster(s) in the process of checking the availability of the selected resources`],
  },
};

/** The Overridden condition True where overrides applied: per cluster (the binding's) and for the placement. */
const OVERRIDDEN_SUCCEEDED = {
  reason: "OverriddenSucceeded",
  perCluster: "Successfully applied the override rules on the resources",
  placement: (n: number) => `The selected resources are successfully overridden in ${n} cluster(s)`,
};

/** KubeFleet's event of a placement condition turning True (`EventReasonForTrue`, `EventMessageForTrue`). */
export const TRUE_EVENTS: Record<ChainType, [string, string]> = {
  RolloutStarted: ["PlacementRolloutStarted", "Started rolling out the latest resources"],
  Overridden: ["PlacementOverriddenSucceeded", "Placement has been successfully overridden"],
  WorkSynchronized: ["PlacementWorkSynchronized", "Work(s) have been created or updated successfully for the selected cluster(s)"],
  Applied: ["PlacementApplied", "Resources have been applied to the selected cluster(s)"],
  Available: ["PlacementAvailable", "Resources are available on the selected cluster(s)"],
};

/** A cluster's works as the status reads them: their names, and whether they carry the latest snapshot. */
export interface ClusterWorks {
  cluster: string;
  /** The scheduler's reason for the cluster (the Scheduled condition's message). */
  reason: string;
  /** Its works: none yet (rollout not started), or those rendered (with their stored state). */
  works: KubeObject[];
  /** Its works carry the latest snapshot and strategy (RolloutStarted True); false: blocked by the rollout; null: no decision yet. */
  current: boolean | null;
  /** Its overrides (src/fleet/overrides.ts): whether any applies, and why they failed (Overridden False). */
  overrides?: { applied: boolean; error?: string };
  /** Why its works cannot be synchronized (an envelope KubeFleet's work generator refuses): WorkSynchronized False with it. */
  syncError?: string;
}

/** One cluster's `placementStatuses[]` entry. */
export interface PerClusterStatus {
  clusterName: string;
  observedResourceIndex?: string;
  failedPlacements?: Record<string, unknown>[];
  driftedPlacements?: Record<string, unknown>[];
  conditions: NewCondition[];
  /** The status of each chain type set (for the placement's summary). */
  chain: Partial<Record<ChainType, Status>>;
  /** Overrides apply in the cluster (the placement's Overridden True says OverriddenSucceeded then). */
  overridden?: boolean;
  /** The override snapshots pinned in the cluster's binding (the status' `applicable*Overrides`), set by the controller. */
  applicable?: { clusterResourceOverrideSnapshots: string[]; resourceOverrideSnapshots: { name: string; namespace: string }[] };
}

const condAt = (w: KubeObject, type: string): WorkCondition | undefined =>
  ((w.status?.conditions ?? []) as WorkCondition[]).find((c) => c.type === type && c.observedGeneration === (w.metadata.generation ?? 1));

interface ManifestStatus {
  resourceMeta?: { group?: string; version?: string; kind?: string; name?: string; namespace?: string };
  conditions?: (WorkCondition & { reason?: string; message?: string })[];
}

function identifierOf(meta: ManifestStatus["resourceMeta"]): ResourceIdentifier {
  return {
    ...(meta?.group ? { group: meta.group } : {}),
    version: meta?.version ?? "",
    kind: meta?.kind ?? "",
    name: meta?.name ?? "",
    ...(meta?.namespace ? { namespace: meta.namespace } : {}),
  };
}

const MAX_DETAILS = 100;

/** The failed and drifted placements of a cluster's works (at most 100 each, as KubeFleet's API caps them). */
function details(works: KubeObject[], type: "Applied" | "Available"): { failed: Record<string, unknown>[]; drifted: Record<string, unknown>[] } {
  const failed: Record<string, unknown>[] = [];
  const drifted: Record<string, unknown>[] = [];
  for (const w of works) {
    const manifests = ((w.status as { resourceStatus?: { manifests?: ManifestStatus[] } } | undefined)?.resourceStatus?.manifests ?? []) as ManifestStatus[];
    for (const m of manifests) {
      const c = (m.conditions ?? []).find((x) => x.type === type && x.status === "False");
      if (c && failed.length < MAX_DETAILS) {
        failed.push({
          ...identifierOf(m.resourceMeta),
          condition: {
            type,
            status: "False",
            ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
            lastTransitionTime: c.lastTransitionTime ?? new Date(0).toISOString(),
            reason: c.reason || (type === "Applied" ? "ManifestApplyFailed" : "ManifestNotAvailableYet"),
            message: c.message ?? "",
          },
        });
      }
      const d = (m.conditions ?? []).find((x) => x.type === "Drifted" && x.status === "True");
      if (d && drifted.length < MAX_DETAILS) {
        let observedDrifts: unknown[] = [];
        try {
          const parsed: unknown = JSON.parse(d.message ?? "");
          if (Array.isArray(parsed)) observedDrifts = parsed.filter((p) => p && typeof p === "object" && typeof (p as { path?: unknown }).path === "string");
        } catch {
          observedDrifts = [];
        }
        const at = d.lastTransitionTime ?? new Date(0).toISOString();
        drifted.push({
          ...identifierOf(m.resourceMeta),
          observationTime: at,
          targetClusterObservedGeneration: d.observedGeneration ?? 0,
          firstDriftedObservedTime: at,
          ...(observedDrifts.length ? { observedDrifts } : {}),
        });
      }
    }
  }
  return { failed, drifted };
}

/** The per-cluster status of one picked cluster (KubeFleet's `setPerClusterPlacementStatus` on its works). */
export function perClusterStatus(c: ClusterWorks, generation: number, index: string): PerClusterStatus {
  const conditions: NewCondition[] = [{ type: "Scheduled", status: "True", reason: "Scheduled", message: c.reason, observedGeneration: generation }];
  const chain: PerClusterStatus["chain"] = {};
  const out: PerClusterStatus = { clusterName: c.cluster, observedResourceIndex: index, conditions, chain };
  const set = (type: ChainType, status: Status, what = "") => {
    const [reason, message] = PER_CLUSTER[type][status];
    conditions.push({ type, status, reason, message: message.replace("%s", () => what), observedGeneration: generation });
    chain[type] = status;
  };
  if (c.current === null) {
    set("RolloutStarted", "Unknown");
    return out;
  }
  if (!c.current) {
    set("RolloutStarted", "False");
    return out;
  }
  set("RolloutStarted", "True");
  if (c.overrides?.applied) out.overridden = true;
  if (c.overrides?.error !== undefined) {
    set("Overridden", "False", c.overrides.error);
    return out;
  }
  if (c.overrides?.applied) {
    conditions.push({
      type: "Overridden",
      status: "True",
      reason: OVERRIDDEN_SUCCEEDED.reason,
      message: OVERRIDDEN_SUCCEEDED.perCluster,
      observedGeneration: generation,
    });
    chain.Overridden = "True";
  } else set("Overridden", "True");
  if (c.syncError !== undefined) {
    set("WorkSynchronized", "False", c.syncError);
    return out;
  }
  if (c.works.length === 0) {
    set("WorkSynchronized", "Unknown");
    return out;
  }
  set("WorkSynchronized", "True");
  for (const type of ["Applied", "Available"] as const) {
    const pending = c.works.find((w) => condAt(w, type)?.status !== "True");
    const bad = c.works.find((w) => condAt(w, type)?.status === "False");
    if (bad) {
      set(type, "False", bad.metadata.name);
      const d = details(c.works, type);
      if (d.failed.length) out.failedPlacements = d.failed;
      if (d.drifted.length) out.driftedPlacements = d.drifted;
      return out;
    }
    if (pending) {
      set(type, "Unknown");
      return out;
    }
    set(type, "True");
  }
  const d = details(c.works, "Available");
  if (d.drifted.length) out.driftedPlacements = d.drifted;
  return out;
}

/**
 * The placement's own conditions (KubeFleet's `setPlacementConditions`): `<prefix>Scheduled`
 * from the scheduling outcome, then for each chain type in order Unknown (some cluster Unknown),
 * False (some False) or True, stopping after the first that is not True. `prefix` is
 * `ClusterResourcePlacement` or `ResourcePlacement`.
 */
export function placementConditions(
  prefix: string,
  generation: number,
  scheduled: { ok: boolean; message: string; reason?: string },
  clusters: readonly PerClusterStatus[],
): NewCondition[] {
  const out: NewCondition[] = [
    {
      type: `${prefix}Scheduled`,
      status: scheduled.ok ? "True" : "False",
      reason: scheduled.reason ?? (scheduled.ok ? "SchedulingPolicyFulfilled" : "SchedulingPolicyUnfulfilled"),
      message: scheduled.message,
      observedGeneration: generation,
    },
  ];
  if (clusters.length === 0) return out;
  for (const type of CHAIN) {
    const count = (s: Status) => clusters.filter((c) => c.chain[type] === s).length;
    const unknown = clusters.filter((c) => c.chain[type] === "Unknown" || c.chain[type] === undefined).length;
    const status: Status = unknown > 0 ? "Unknown" : count("False") > 0 ? "False" : "True";
    const n = status === "Unknown" ? unknown : count(status);
    const [reason, message] = PLACEMENT_LEVEL[type][status];
    if (type === "Overridden" && status === "True" && clusters.some((c) => c.overridden))
      out.push({
        type: `${prefix}${type}`,
        status,
        reason: OVERRIDDEN_SUCCEEDED.reason,
        message: OVERRIDDEN_SUCCEEDED.placement(n),
        observedGeneration: generation,
      });
    else out.push({ type: `${prefix}${type}`, status, reason, message: message(n), observedGeneration: generation });
    if (status !== "True") break;
  }
  return out;
}
