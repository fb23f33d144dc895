/**
 * Applying one manifest of a work a KubeFleet placement rendered, as KubeFleet's work applier
 * processes a manifest (kubefleet-dev/kubefleet `pkg/controllers/workapplier/process.go`
 * `processOneManifest`, `drift_detection_takeover.go`, `apply.go`), then judging the live
 * object's availability (availability.ts). Called by apply.ts for works carrying the
 * `kubernetes-fleet.io/apply-strategy` annotation (kubefleet.ts).
 *
 * The steps, each ending the manifest's processing with KubeFleet's result type (its reason):
 * 1. read the live object (`FailedToFindObjInMemberCluster` on an error other than 404);
 * 2. takeover, when the object exists and this work does not hold it (Flotilla's ownership is the
 *    work's AppliedManifestWork record, record.ts, where KubeFleet puts an ownerReference to its
 *    AppliedWork) and `whenToTakeOver` is not `Never`: refused (`FailedToTakeOver`) when the object
 *    has ownerReferences and `allowCoOwnership` is false, or with `IfNoDiff` when it differs from
 *    the manifest (the differences reported as diffs); otherwise the work holds it from now on;
 * 3. `ReportDiff`: the differences are reported, nothing is written (`FoundDiff`, `NoDiffFound`);
 * 4. an object the work does not hold is not written (`NotTakenOver`);
 * 5. with `whenToApply: IfNotDrifted`, when the manifest is the one last applied (the object's
 *    `kubernetes-fleet.io/spec-hash`), a drifted object is not written (`FoundDrifts`, drifts reported);
 * 6. apply: create when missing; `ClientSideApply`: a three-way JSON merge patch from the
 *    `kubernetes-fleet.io/last-applied-configuration` annotation (server-side apply without force
 *    when the annotation would be too large); `ServerSideApply`: server-side apply with
 *    `serverSideApplyConfig.force`, forced anyway when no other field manager has fields
 *    (`ManifestApplyFailed` on an error, e.g. a conflict);
 * 7. with `FullComparison`, drifts left after the apply (fields the manifest does not set) are
 *    reported; the manifest is still applied.
 * Drifts and diffs are computed by `comparisonOption`: `PartialComparison` compares the manifest
 * applied in dry-run (server-side, forced) with the live object, so only fields the manifest sets
 * count (degraded to a full comparison when the dry run is refused as invalid);
 * `FullComparison` compares the manifest with the live object.
 */
import { describeKubeError, statusCodeOf } from "../kube.ts";
import { trackAvailability, type AvailabilityResult } from "./availability.ts";
import type { DynamicClient, ObjectRef } from "./dynamic.ts";
import {
  LAST_APPLIED_ANNOTATION,
  MANIFEST_HASH_ANNOTATION,
  manifestHash,
  patchDetails,
  prepareManifest,
  threeWayMergePatch,
  type ApplyStrategy,
  type PatchDetail,
} from "./kubefleet.ts";
import { isObj, type Obj } from "./types.ts";

/** KubeFleet's `ManifestProcessingApplyOrReportDiffResultType` values (the manifest's Applied reason). */
export type FleetApplyResult =
  | "Applied"
  | "AppliedWithFailedDriftDetection"
  | "FailedToFindObjInMemberCluster"
  | "FailedToTakeOver"
  | "NotTakenOver"
  | "FailedToRunDriftDetection"
  | "FoundDrifts"
  | "FoundDriftsInDegradedMode"
  | "ManifestApplyFailed"
  | "FoundDiff"
  | "FoundDiffInDegradedMode"
  | "NoDiffFound"
  | "FailedToReportDiff";

/** What KubeFleet's status needs about one manifest (the input of conditions.ts in KubeFleet mode). */
export interface FleetOutcome {
  /** The apply (or report-diff) result. */
  result: FleetApplyResult;
  /** The error, for a failed result. */
  error?: string;
  /** Whether the strategy is ReportDiff (no Applied/Available conditions, DiffReported instead). */
  reportDiff: boolean;
  /**
   * The availability: undefined when the manifest was not applied (KubeFleet's `Skipped`).
   * `NotTrackable` objects count as available only from {@link availableAt}.
   */
  availability?: AvailabilityResult;
  /** For a NotTrackable object: when it counts as available (epoch ms: applied + unavailablePeriodSeconds). */
  availableAt?: number;
  /** `metadata.generation` of the live object (0 when missing), the conditions' observedGeneration. */
  liveGeneration: number;
  /** Configuration drifts of an object the work holds. */
  drifts?: PatchDetail[];
  /** Configuration differences of an object the work does not hold (takeover IfNoDiff, ReportDiff). */
  diffs?: PatchDetail[];
}

/** Input of {@link applyFleetManifest}. */
export interface FleetApplyInput {
  client: DynamicClient;
  ref: ObjectRef;
  /** The manifest (namespace defaulted) as the hub sent it. */
  desired: Obj;
  /** The manifest with the work's trace labels and annotations: what is written. */
  traced: Obj;
  strategy: ApplyStrategy;
  /** Field manager of writes (the manifest config's, else `work-agent`). */
  fieldManager: string;
  /** Whether the work holds the object of this uid (its record). */
  owns: (uid: string) => boolean;
  /** Do not write (a Complete manifest): only read and judge. */
  readOnly: boolean;
  /** The clock, epoch ms. */
  now: number;
  /** `unavailablePeriodSeconds` of the placement's rollout. */
  unavailablePeriodSeconds: number;
  /** When the current manifest (by hash) was first applied, remembered from an earlier pass. */
  appliedSince?: { hash: string; at: number };
}

/** Result of {@link applyFleetManifest}. */
export interface FleetApplyOutput {
  fleet: FleetOutcome;
  /** The live object after the pass (undefined when missing or unreadable). */
  live?: Obj;
  /** Whether the work holds the object after this pass (it goes into the work's record). */
  held: boolean;
  /** The read error, when the live object could not be read. */
  readError?: string;
  /** When the current manifest was first applied (to remember). */
  appliedSince?: { hash: string; at: number };
}

function metaOf(o: Obj | undefined): Obj {
  return o && isObj(o.metadata) ? o.metadata : {};
}

function annotationsOf(o: Obj | undefined): Record<string, string> {
  const a = metaOf(o).annotations;
  return isObj(a) ? (a as Record<string, string>) : {};
}

function generationOf(o: Obj | undefined): number {
  const g = metaOf(o).generation;
  return typeof g === "number" ? g : 0;
}

function errorText(e: unknown): string {
  return describeKubeError(e);
}

/**
 * `o` without the work's trace labels and annotations (those the agent adds to every object it
 * writes and the manifest does not set): they are the agent's, never a drift or a difference.
 */
function withoutTrace(input: FleetApplyInput, o: Obj): Obj {
  const meta = metaOf(o);
  const out: Obj = { ...o, metadata: { ...meta } };
  for (const field of ["labels", "annotations"]) {
    const traced = metaOf(input.traced)[field];
    const own = metaOf(input.desired)[field];
    const have = meta[field];
    if (!isObj(traced) || !isObj(have)) continue;
    const kept = { ...have };
    for (const k of Object.keys(traced)) if (!isObj(own) || own[k] === undefined) delete kept[k];
    (out.metadata as Obj)[field] = kept;
  }
  return out;
}

/** Drifts or diffs by the comparison option; `degraded` when a partial comparison fell back to a full one. */
async function diffs(input: FleetApplyInput, live: Obj): Promise<{ details: PatchDetail[]; degraded: boolean }> {
  const member = withoutTrace(input, live);
  if (input.strategy.comparisonOption === "FullComparison") return { details: patchDetails(input.desired, member), degraded: false };
  try {
    const dry = await input.client.apply(input.ref, prepareManifest(input.traced, false).object, input.fieldManager, true, { dryRun: true });
    return { details: patchDetails(withoutTrace(input, dry), member), degraded: false };
  } catch (e) {
    if (statusCodeOf(e) === 422) return { details: patchDetails(input.desired, member), degraded: true };
    throw e;
  }
}

/** Whether every field manager of `live` is `manager` (or kubectl's `before-first-apply`): KubeFleet then forces server-side apply. */
function onlyOurManagers(live: Obj, manager: string): boolean {
  const mf = metaOf(live).managedFields;
  if (!Array.isArray(mf)) return true;
  return mf.every((m) => isObj(m) && (m.manager === manager || m.manager === "before-first-apply"));
}

/**
 * Processes one manifest as KubeFleet's work applier does (module doc). Never throws: failures
 * are results.
 */
export async function applyFleetManifest(input: FleetApplyInput): Promise<FleetApplyOutput> {
  const { client, ref, strategy } = input;
  const reportDiff = strategy.type === "ReportDiff";
  const out = (result: FleetApplyResult, live: Obj | undefined, held: boolean, extra: Partial<FleetOutcome> = {}): FleetApplyOutput => ({
    fleet: { result, reportDiff, liveGeneration: generationOf(live), ...extra },
    ...(live ? { live } : {}),
    held,
  });

  // 1. The live object.
  let live: Obj | undefined;
  try {
    live = await client.get(ref);
  } catch (e) {
    if (statusCodeOf(e) !== 404) {
      const message = `failed to find the corresponding object for the manifest object in the member cluster: ${errorText(e)}`;
      return { ...out("FailedToFindObjInMemberCluster", undefined, false, { error: message }), readError: errorText(e) };
    }
  }
  const uid = typeof metaOf(live).uid === "string" ? (metaOf(live).uid as string) : "";
  let held = live !== undefined && input.owns(uid);

  // 2. Takeover.
  if (live && !held && strategy.whenToTakeOver !== "Never") {
    const owners = metaOf(live).ownerReferences;
    if (Array.isArray(owners) && owners.length > 0 && !strategy.allowCoOwnership) {
      return out("FailedToTakeOver", live, false, {
        error: `failed to take over a pre-existing object: the object is already owned by some other sources(s) and co-ownership is disallowed (existingOwnerRefs: ${JSON.stringify(owners)})`,
      });
    }
    if (strategy.whenToTakeOver === "IfNoDiff") {
      try {
        const d = await diffs(input, live);
        if (d.details.length > 0) {
          return out("FailedToTakeOver", live, false, {
            diffs: d.details,
            error: d.degraded
              ? "cannot take over object: configuration differences are found between the manifest object and the corresponding object in the member cluster in degraded mode (full comparison is performed instead of partial comparison, as the manifest object is considered to be invalid by the member cluster API server)"
              : "cannot take over object: configuration differences are found between the manifest object and the corresponding object in the member cluster",
          });
        }
      } catch (e) {
        return out("FailedToTakeOver", live, false, {
          error: `failed to take over a pre-existing object: failed to calculate configuration diffs between the manifest object and the object from the member cluster: ${errorText(e)}`,
        });
      }
    }
    held = true;
  }

  // 3. ReportDiff.
  if (reportDiff) {
    if (!live) return out("FoundDiff", undefined, false, { diffs: [{ path: "/", valueInHub: "(the whole object)" }] });
    try {
      const d = await diffs(input, live);
      if (d.details.length === 0) return out("NoDiffFound", live, held);
      return out(d.degraded ? "FoundDiffInDegradedMode" : "FoundDiff", live, held, { diffs: d.details });
    } catch (e) {
      return out("FailedToReportDiff", live, held, {
        error: `failed to calculate configuration diffs between the manifest object and the object from the member cluster: ${errorText(e)}`,
      });
    }
  }

  // 4. Ownership is required to write.
  if (live && !held) return out("NotTakenOver", live, false, { error: "no ownership of the object in the member cluster; takeover is needed" });

  // The manifest's hash, without the work's trace (as on the object since the last apply).
  const hash = manifestHash(input.desired);
  // 5. Pre-apply drift detection.
  if (live && strategy.whenToApply === "IfNotDrifted" && annotationsOf(live)[MANIFEST_HASH_ANNOTATION] === hash) {
    try {
      const d = await diffs(input, live);
      if (d.details.length > 0) {
        return out(d.degraded ? "FoundDriftsInDegradedMode" : "FoundDrifts", live, true, {
          drifts: d.details,
          error: d.degraded
            ? "cannot apply manifest: drifts are found between the manifest and the object from the member cluster in degraded mode (full comparison is performed instead of partial comparison, as the manifest object is considered to be invalid by the member cluster API server)"
            : "cannot apply manifest: drifts are found between the manifest and the object from the member cluster",
        });
      }
    } catch (e) {
      return out("FailedToRunDriftDetection", live, true, {
        error: `failed to calculate pre-apply drifts between the manifest and the object from the member cluster: ${errorText(e)}`,
      });
    }
  }

  // 6. Apply.
  if (!input.readOnly) {
    const csa = strategy.type === "ClientSideApply";
    const { object, lastAppliedSet } = prepareManifest(input.traced, csa, hash);
    const optimisticLock = strategy.whenToApply === "IfNotDrifted";
    try {
      if (!live) {
        live = await client.create(ref, ref.namespace, object, input.fieldManager);
      } else if (csa && lastAppliedSet) {
        let original: unknown = null;
        try {
          original = JSON.parse(annotationsOf(live)[LAST_APPLIED_ANNOTATION] ?? "null");
        } catch {
          original = null;
        }
        const patch = threeWayMergePatch(original, object, live);
        if (Object.keys(patch).length > 0) {
          if (optimisticLock) patch.metadata = { ...(isObj(patch.metadata) ? patch.metadata : {}), resourceVersion: metaOf(live).resourceVersion };
          live = await client.mergePatch(ref, patch, input.fieldManager);
        }
      } else {
        const force = (strategy.type === "ServerSideApply" && strategy.serverSideApplyConfig?.force === true) || onlyOurManagers(live, input.fieldManager);
        const body = optimisticLock ? { ...object, metadata: { ...metaOf(object), resourceVersion: metaOf(live).resourceVersion } } : object;
        live = await client.apply(ref, body, input.fieldManager, force);
      }
    } catch (e) {
      return out("ManifestApplyFailed", live, live !== undefined, { error: `failed to apply the manifest: ${errorText(e)}` });
    }
  }
  const since = input.appliedSince;
  const appliedSince = since !== undefined && since.hash === hash ? since : { hash, at: input.now };

  // 7. Post-apply drift detection (full comparison only).
  let result: FleetApplyResult = "Applied";
  let drifts: PatchDetail[] | undefined;
  let error: string | undefined;
  if (strategy.comparisonOption === "FullComparison" && live) {
    try {
      const d = await diffs(input, live);
      if (d.details.length > 0) drifts = d.details;
    } catch (e) {
      result = "AppliedWithFailedDriftDetection";
      error = `failed to calculate post-apply drifts between the manifest object and the object from the member cluster: ${errorText(e)}`;
    }
  }

  // Availability.
  const availability = live ? trackAvailability(ref, live) : undefined;
  const extra: Partial<FleetOutcome> = { ...(availability ? { availability } : {}), ...(drifts ? { drifts } : {}), ...(error ? { error } : {}) };
  if (availability === "NotTrackable") extra.availableAt = appliedSince.at + input.unavailablePeriodSeconds * 1000;
  return { ...out(result, live, live !== undefined, extra), appliedSince };
}
