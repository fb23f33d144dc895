/**
 * Letting go of applied resources (OCM `pkg/work/helper/helpers.go` `DeleteAppliedResources`):
 * when a manifest leaves a work, when a work disappears from the hub's list, and when the
 * cluster leaves. A resource is deleted only when
 * - the work's `deleteOption` does not orphan it (`Orphan` keeps everything, `SelectivelyOrphan`
 *   keeps what its `orphaningRules` list; `Foreground`, the default, deletes), and
 * - no other work's record holds the same object (same group/resource/namespace/name and uid),
 *   so a resource shared by two works goes only with the last one;
 * and the delete carries a UID precondition, so an object re-created under the same name by
 * someone else is left alone. ReadOnly manifests are never recorded, hence never deleted.
 * An object the delete leaves in place (held by its finalizers, with a deletionTimestamp) is
 * pending: still held, and deleted again at the next pass, as OCM keeps it in the
 * AppliedManifestWork's `appliedResources` until it is gone.
 */
import { describeKubeError, statusCodeOf } from "../kube.ts";
import type { DynamicClient } from "./dynamic.ts";
import { isObj, sameResource, type AppliedResource, type DeleteOption } from "./types.ts";

/**
 * Whether `deleteOption` keeps `r` when its work lets go: `Orphan` → always;
 * `SelectivelyOrphan` → when an orphaning rule names it (group, resource, namespace, name; an
 * absent group or namespace means ""); `Foreground` or none → never.
 */
export function isOrphaned(r: AppliedResource, deleteOption: DeleteOption | undefined): boolean {
  const policy = deleteOption?.propagationPolicy ?? "Foreground";
  if (policy === "Orphan") return true;
  if (policy !== "SelectivelyOrphan") return false;
  return (deleteOption?.selectivelyOrphans?.orphaningRules ?? []).some(
    (rule) => (rule.group ?? "") === r.group && rule.resource === r.resource && rule.name === r.name && (rule.namespace ?? "") === r.namespace,
  );
}

/** What {@link releaseResources} did with each resource. */
export interface ReleaseResult {
  /** Deleted (or already gone, or re-created by someone else: the UID precondition failed). */
  deleted: AppliedResource[];
  /** Kept because the delete option orphans them. */
  orphaned: AppliedResource[];
  /** Kept because another work still holds them. */
  shared: AppliedResource[];
  /** Deletes that failed for another reason, with the error: still held, to retry. */
  failed: Array<{ resource: AppliedResource; error: string }>;
  /** Deleted but still there, held by finalizers: still held, to check again. */
  pending: AppliedResource[];
}

/**
 * Lets go of `resources` for one work.
 *
 * @param client the member cluster's dynamic client.
 * @param resources what the work releases.
 * @param deleteOption the work's `spec.deleteOption` (last seen).
 * @param heldElsewhere every resource the OTHER works still hold.
 * @returns what was deleted, kept and failed; never throws.
 */
export async function releaseResources(
  client: DynamicClient,
  resources: readonly AppliedResource[],
  deleteOption: DeleteOption | undefined,
  heldElsewhere: readonly AppliedResource[],
): Promise<ReleaseResult> {
  const out: ReleaseResult = { deleted: [], orphaned: [], shared: [], failed: [], pending: [] };
  for (const r of resources) {
    if (isOrphaned(r, deleteOption)) {
      out.orphaned.push(r);
      continue;
    }
    if (heldElsewhere.some((o) => sameResource(o, r))) {
      out.shared.push(r);
      continue;
    }
    try {
      await client.delete(r, r.uid || undefined);
    } catch (e) {
      const code = statusCodeOf(e);
      if (code === 404 || code === 409) out.deleted.push(r);
      else out.failed.push({ resource: r, error: describeKubeError(e) });
      continue;
    }
    try {
      const left = await client.get(r);
      const meta = isObj(left.metadata) ? left.metadata : {};
      if (meta.deletionTimestamp && (!r.uid || meta.uid === r.uid)) out.pending.push(r);
      else out.deleted.push(r);
    } catch (e) {
      const code = statusCodeOf(e);
      if (code === 404) out.deleted.push(r);
      else out.failed.push({ resource: r, error: describeKubeError(e) });
    }
  }
  return out;
}
