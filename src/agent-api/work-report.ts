/**
 * A work status report, as the agent sends it over HTTP (`PUT /agent/v1/clusters/{name}/works/{work}/status`,
 * src/agent-api/routes.ts) or over its channel (a `report` message, durable-objects/cluster/connection.ts):
 * one write path for both, so both answer the same and the group commit batches both.
 */
import { ApiError, conflict, notFound, tooManyRequests } from "../k8s/errors.ts";
import type { Condition, KubeObject } from "../k8s/meta.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { WaitUntil } from "../store/outbox.ts";
import type { Env } from "../env.ts";
import { deliveredWorks, type WorkCopies } from "./delivered.ts";
import { computeWrite } from "../k8s/write.ts";
import { clock } from "../clock.ts";
import { holdForCleanup, MANIFEST_WORK_CLEANUP_FINALIZER, releaseCleanupFinalizer, WORK_DELETING_CONDITION } from "../work/deletion.ts";

/**
 * Writes the status an agent observed on work `workName` of `cluster`'s namespace, pinned by the
 * work's `uid` (a different uid means the work was deleted and created again). Written through the
 * status subresource path of the kind's store (src/store/store.ts), which validates the status as any
 * status write (422 invalid values, 400 unknown fields) and lets the replica set controller see
 * it; with `waitUntil` (the request's, or the Durable Object's), the commit may share a D1 batch
 * with other reports (group commit), and the report answers once committed: its after-commit
 * hooks (the replica set's notification) run after, under `waitUntil` (WriterMode `"returns"`). `rawBytes` is the report's size in bytes, for the cache of
 * delivered works (src/agent-api/delivered.ts). Returns the work as stored (null: nothing stored).
 *
 * The first report of a work puts OCM's cleanup finalizer on it (its agent holds it now); a report
 * with `released` confirms a deletion instead: the finalizer goes, and with it the work
 * (src/work/deletion.ts).
 *
 * `copies` is where the copy of the work to write on is looked up (the cluster object's pushes,
 * then the isolate's, src/agent-api/delivered.ts `workCopies`; by default the isolate's alone).
 * @throws ApiError 404 (no such work), 409 (uid differs; `released` for a work not being deleted), 400/422 (invalid status)
 */
export async function reportWorkStatus(
  env: Env,
  cluster: string,
  workName: string,
  report: { uid: string; status: Record<string, unknown>; released?: true },
  rawBytes: number,
  waitUntil: WaitUntil,
  copies: WorkCopies = deliveredWorks,
): Promise<KubeObject | null> {
  const ref = { group: ManifestWorkKind.group, plural: ManifestWorkKind.plural, kind: ManifestWorkKind.kind, name: workName };
  if (report.released) return released(env, cluster, workName, report.uid, waitUntil, copies);
  // The report pins the work by its uid, not its resourceVersion: it is written as
  // GuaranteedUpdate writes, again on a fresh read while other writers (admin patches, other
  // reports) commit first, the uid checked on each read (src/store/d1/write.ts `writeStored`).
  const write = (current: KubeObject) => {
    const { resourceVersion: _rv, ...metadata } = current.metadata;
    const status = keepDeleting(current, report.status);
    return admittedStoreOf(env, ManifestWorkKind).write(
      cluster,
      workName,
      { verb: "update", subresource: "status", body: { ...current, metadata, status }, preconditions: { uid: report.uid } },
      { known: current, waitUntil, mode: "returns" },
    );
  };
  let object: KubeObject | null | undefined;
  // The agent holds a work once it reports it: the first report puts OCM's cleanup finalizer on
  // the work before its status (src/work/deletion.ts), so a deletion the status may cause (a
  // TTL of 0 after Complete) already waits for the agent's confirmation.
  const seen = copies.get(cluster, workName);
  let fresh: KubeObject | undefined;
  /** `current` held for cleanup (the finalizer put on it first, when it lacks it); undefined when it changed meanwhile (nothing written). */
  const hold = async (current: KubeObject): Promise<KubeObject | undefined> => {
    if (current.metadata.deletionTimestamp || current.metadata.finalizers?.includes(MANIFEST_WORK_CLEANUP_FINALIZER)) return current;
    // A report that would be refused (400, 422) holds nothing either: no half write.
    const { resourceVersion: _rv, ...metadata } = current.metadata;
    computeWrite(
      ManifestWorkKind,
      { namespace: cluster, name: workName },
      current,
      { verb: "update", subresource: "status", body: { ...current, metadata, status: report.status } },
      { now: clock.now(), newUid: () => "" },
    );
    return holdForCleanup(env, current, { waitUntil, mode: "returns" });
  };
  if (!seen || seen.metadata.uid !== report.uid || !(seen.metadata.deletionTimestamp || seen.metadata.finalizers?.includes(MANIFEST_WORK_CLEANUP_FINALIZER))) {
    // The work as its agent was pushed it (a replica set's, at its first report): the finalizer's
    // write is pinned to that copy's resourceVersion, so it reads nothing from D1 when the copy is
    // current, and writes nothing when it is stale (the work is then read fresh).
    if (seen?.metadata.uid === report.uid) fresh = await hold(seen);
    if (!fresh) {
      const current = await admittedStoreOf(env, ManifestWorkKind).get(cluster, workName);
      if (!current) throw notFound(ref);
      if (current.metadata.uid !== report.uid)
        throw conflict(ref, `the work's uid is ${current.metadata.uid}, not ${report.uid}: it was deleted and created again`);
      // Changed again meanwhile: the status is written on a fresh read, the agent's next report adds the finalizer.
      fresh = (await hold(current)) ?? current;
    }
  }
  // The work as the last poll delivered it, when this isolate answered that poll: the first
  // attempt commits on it with its resourceVersion as the commit's precondition, so a stale copy
  // is refused and the write made again on a fresh read (404 once the work is gone, 409 when its
  // uid differs: the report is then made again below, on a read of its own). A report that
  // changes nothing of the copy commits nothing, so nothing checked the copy: it is made again on
  // a fresh read too.
  const delivered = fresh ? undefined : seen;
  if (delivered && delivered.metadata.uid === report.uid) {
    try {
      const written = (await write(delivered)).object;
      if (written !== delivered) object = written;
    } catch (e) {
      if (!(e instanceof ApiError && (e.code === 409 || e.code === 404))) throw e;
      copies.forget(cluster, workName);
    }
  }
  if (object === undefined) {
    const current = fresh ?? (await admittedStoreOf(env, ManifestWorkKind).get(cluster, workName));
    if (!current) throw notFound(ref);
    if (current.metadata.uid !== report.uid)
      throw conflict(ref, `the work's uid is ${current.metadata.uid}, not ${report.uid}: it was deleted and created again`);
    object = (await write(current)).object;
  }
  if (object) copies.stored(cluster, object, rawBytes);
  return object;
}

/**
 * The status to store for a report on `current`: the report's, with the hub's `Deleting`
 * condition kept while the work is being deleted (an agent that has not seen the deletion yet
 * reports the conditions it knows; the deletion stays shown until the agent confirms).
 */
function keepDeleting(current: KubeObject, status: Record<string, unknown>): Record<string, unknown> {
  if (!current.metadata.deletionTimestamp) return status;
  const held = ((current.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === WORK_DELETING_CONDITION);
  const reported = Array.isArray(status.conditions) ? (status.conditions as Condition[]) : [];
  if (!held || reported.some((c) => c.type === WORK_DELETING_CONDITION)) return status;
  return { ...status, conditions: [...reported, held] };
}

/**
 * The agent removed what work `workName` (uid `uid`) applied: the cleanup finalizer goes (read
 * fresh; a write that loses to another is made again on a fresh read, up to 5 times).
 * @returns the work as stored (null: gone)
 * @throws ApiError 404 (no such work), 409 (uid differs, or the work is not being deleted), 429
 *   (other writers won 5 times: the agent confirms again later)
 */
async function released(env: Env, cluster: string, workName: string, uid: string, waitUntil: WaitUntil, copies: WorkCopies): Promise<KubeObject | null> {
  const ref = { group: ManifestWorkKind.group, plural: ManifestWorkKind.plural, kind: ManifestWorkKind.kind, name: workName };
  copies.forget(cluster, workName);
  for (let attempt = 0; ; attempt++) {
    const current = await admittedStoreOf(env, ManifestWorkKind).get(cluster, workName);
    if (!current) throw notFound(ref);
    if (current.metadata.uid !== uid) throw conflict(ref, `the work's uid is ${current.metadata.uid}, not ${uid}: it was deleted and created again`);
    if (!current.metadata.deletionTimestamp) throw conflict(ref, "the work is not being deleted: nothing to confirm");
    const out = await releaseCleanupFinalizer(env, current, { waitUntil, mode: "returns" });
    if (out !== undefined) return out;
    if (attempt >= 4) throw tooManyRequests("the work kept changing while its cleanup finalizer was being removed; confirm again", 1);
  }
}
