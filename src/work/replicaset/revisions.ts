/**
 * A ManifestWorkReplicaSet's revision history, after OCM's enhancement "Support Rollback for
 * ManifestWorkReplicaSet" (open-cluster-management-io/enhancements
 * `enhancements/sig-architecture/229-manifestworkreplicaset-rollback`, PR #164): one `apps/v1`
 * ControllerRevision per distinct `spec.manifestWorkTemplate` (src/kinds/controllerrevision.ts),
 * as StatefulSets and DaemonSets keep theirs, written and read through the store.
 *
 * - Name `<replica set>-<hash>`: the hash is the enhancement's `ComputeHash` (FNV-32a, the
 *   collision count mixed in, `rand.SafeEncodeString`) over the template as the works carry it
 *   (canonical JSON of the ManifestWork kind's defaults applied; Go's `DeepHashObject` prints Go
 *   values, which a TypeScript hub cannot reproduce, so the hashes differ from OCM's but are as
 *   stable). A name taken by another template bumps `status.collisionCount`.
 * - Labels: the replica set's (`work.open-cluster-management.io/manifestworkreplicaset`,
 *   `<namespace>.<name>`) and {@link CONTROLLER_HASH_LABEL}; owned by the replica set
 *   (`controller: true`), so deleting it deletes its history.
 * - `data`: `{spec: {manifestWorkTemplate}}` as the user wrote it (what an undo writes back);
 *   `revision`: higher is newer; a template that comes back (an undo) gets the next number again.
 * - At most `spec.revisionHistoryLimit` (default 10) revisions besides the live ones
 *   (`status.currentRevision` and `status.updateRevision`) are kept: the oldest go first.
 *
 * KubeFleet's resource snapshots (src/fleet/controller.ts `ensureSnapshot`, what update runs
 * pick by `resourceSnapshotIndex`) are not reused: they are fleet kinds owned by a placement,
 * numbered by an index label with an `is-latest` label and split into sub-snapshots, while OCM's
 * design names ControllerRevisions by hash and undoes through the spec; both keep
 * `revisionHistoryLimit` the same way (the oldest beyond it deleted).
 */
import type { KubeObject } from "../../k8s/meta.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";
import { racing } from "../../k8s/racing.ts";
import { ManifestWorkKind, MWRS_LABEL } from "../../kinds/manifestwork.ts";
import { ControllerRevisionKind, revisionNumber } from "../../kinds/controllerrevision.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import type { ReplicaSetSpec } from "./run.ts";

/** The label naming the revision (hash) a ControllerRevision or a generated ManifestWork carries (OCM's enhancement). */
export const CONTROLLER_HASH_LABEL = "work.open-cluster-management.io/controller-hash";

/** `spec.revisionHistoryLimit`'s default (the enhancement's, as a Deployment's). */
export const DEFAULT_REVISION_HISTORY_LIMIT = 10;

/** The spec a work stores for `template` (the ManifestWork kind's defaults applied), so that defaults never make a written work look out of date. */
export function defaultedTemplate(template: Record<string, unknown> | undefined): Record<string, unknown> {
  const defaulted = {
    apiVersion: "",
    kind: "",
    metadata: { name: "", uid: "", resourceVersion: "", creationTimestamp: "" },
    spec: structuredClone(template ?? {}),
  } as KubeObject;
  ManifestWorkKind.defaults?.(defaulted);
  return defaulted.spec ?? {};
}

/** Kubernetes' `rand.SafeEncodeString` alphabet (no vowels, no 0/1/3: no words, no look-alikes). */
const ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789";

/**
 * The revision hash of a template (`templateJson`: canonical JSON of the defaulted template), as
 * the enhancement's `ComputeHash`: FNV-32a over it, then the collision count as 8 little-endian
 * bytes when set, printed in decimal and encoded with `rand.SafeEncodeString`.
 * @example templateHash('{"workload":{}}') // a string such as "6b6dcbd695"
 */
export function templateHash(templateJson: string, collisionCount?: number): string {
  let h = 0x811c9dc5;
  const feed = (b: number) => {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  };
  for (const b of new TextEncoder().encode(templateJson)) feed(b);
  if (collisionCount !== undefined && collisionCount > 0) {
    const c = collisionCount >>> 0;
    for (const b of [c & 0xff, (c >>> 8) & 0xff, (c >>> 16) & 0xff, (c >>> 24) & 0xff, 0, 0, 0, 0]) feed(b);
  }
  return [...String(h >>> 0)].map((ch) => ALPHANUMS[ch.charCodeAt(0) % ALPHANUMS.length]).join("");
}

/** The name of a replica set's ControllerRevision for `hash`: `<name>-<hash>`. */
export function revisionName(name: string, hash: string): string {
  return `${name}-${hash}`;
}

/** The template a ControllerRevision holds (`data.spec.manifestWorkTemplate`), or undefined. */
export function revisionTemplate(revision: KubeObject): Record<string, unknown> | undefined {
  const data = revision.data as { spec?: { manifestWorkTemplate?: Record<string, unknown> } } | undefined;
  return data?.spec?.manifestWorkTemplate;
}

/** A replica set's ControllerRevisions, oldest first (by `revision`). */
export async function listRevisions(env: Env, namespace: string, key: string): Promise<KubeObject[]> {
  const { items } = await admittedStoreOf(env, ControllerRevisionKind).listPage(namespace, { filter: (o) => o.metadata.labels?.[MWRS_LABEL] === key });
  return items.sort((a, b) => revisionNumber(a) - revisionNumber(b));
}

/** Reads one of a replica set's revisions by hash; null when it is gone. */
export async function readRevision(env: Env, namespace: string, name: string, hash: string): Promise<KubeObject | null> {
  return admittedStoreOf(env, ControllerRevisionKind).get(namespace, revisionName(name, hash));
}

/**
 * What {@link syncHistory} found: the update revision's hash, the collision count it took,
 * whether the revision was new (`NewRevisionCreated`) or an older one found again
 * (`FoundNewRevision`, an undo), or unchanged since the last run.
 */
export interface HistorySync {
  hash: string;
  collisionCount: number;
  change: "created" | "found" | "unchanged";
}

/**
 * Makes sure the replica set's current template has its ControllerRevision, the newest one
 * (the enhancement's "Reconstruct ManifestWorkReplicaSet history"), and prunes the history to
 * `spec.revisionHistoryLimit` non-live revisions. Cheap when nothing changed: a template whose
 * hash is already `status.updateRevision` reads nothing.
 * @returns the sync, or "lost" when a write lost a race (the run is repeated)
 * @throws errors of D1 or an unexpected write failure
 */
export async function syncHistory(env: Env, mwrs: KubeObject, templateJson: string): Promise<HistorySync | "lost"> {
  const namespace = mwrs.metadata.namespace!;
  const name = mwrs.metadata.name;
  const status = (mwrs.status ?? {}) as { updateRevision?: string; currentRevision?: string; collisionCount?: number };
  let collisionCount = status.collisionCount ?? 0;
  if (status.updateRevision && status.updateRevision === templateHash(templateJson, collisionCount)) {
    return { hash: status.updateRevision, collisionCount, change: "unchanged" };
  }
  const spec = (mwrs.spec ?? {}) as ReplicaSetSpec;
  const key = `${namespace}.${name}`;
  const store = admittedStoreOf(env, ControllerRevisionKind);
  const history = await listRevisions(env, namespace, key);
  const newest = history.length > 0 ? revisionNumber(history[history.length - 1]!) : 0;
  let hash = templateHash(templateJson, collisionCount);
  let found: KubeObject | undefined;
  for (;;) {
    const taken = history.find((r) => r.metadata.name === revisionName(name, hash)) ?? (await store.get(namespace, revisionName(name, hash)));
    if (!taken) break;
    if (canonicalJson(defaultedTemplate(revisionTemplate(taken))) === templateJson) {
      found = taken;
      break;
    }
    collisionCount++;
    hash = templateHash(templateJson, collisionCount);
  }
  let change: HistorySync["change"] = "found";
  if (!found) {
    change = "created";
    const r = await racing(() =>
      store.write(namespace, revisionName(name, hash), {
        verb: "create",
        body: {
          apiVersion: "apps/v1",
          kind: "ControllerRevision",
          metadata: {
            name: revisionName(name, hash),
            namespace,
            labels: { [MWRS_LABEL]: key, [CONTROLLER_HASH_LABEL]: hash },
            ownerReferences: [
              {
                apiVersion: "work.open-cluster-management.io/v1alpha1",
                kind: "ManifestWorkReplicaSet",
                name,
                uid: mwrs.metadata.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          data: { spec: { manifestWorkTemplate: structuredClone(spec.manifestWorkTemplate ?? {}) } },
          revision: newest + 1,
        },
      }),
    );
    if (r === "lost" || r === null) return "lost";
    history.push(r);
  } else if (revisionNumber(found) !== newest) {
    // The current template's revision is the newest (the enhancement: after an undo, its number is bumped).
    const r = await racing(() => store.write(namespace, found.metadata.name, { verb: "update", body: { ...found, revision: newest + 1 } }, { known: found }));
    if (r === "lost" || r === null) return "lost";
    history.splice(history.indexOf(found), 1, r);
  }
  await pruneHistory(env, mwrs, [hash, status.currentRevision], history);
  return { hash, collisionCount, change };
}

/**
 * History maintenance: deletes the oldest of the replica set's revisions beyond
 * `spec.revisionHistoryLimit` (default 10) that are not live (`live`: hashes, the update and the
 * current revision). `history`, when given, is the list already read (oldest first).
 * @throws errors of D1 or an unexpected write failure (a revision already gone is fine)
 */
export async function pruneHistory(env: Env, mwrs: KubeObject, live: (string | undefined)[], history?: KubeObject[]): Promise<void> {
  const namespace = mwrs.metadata.namespace!;
  const name = mwrs.metadata.name;
  const limit = ((mwrs.spec ?? {}) as ReplicaSetSpec).revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT;
  const all = history ?? (await listRevisions(env, namespace, `${namespace}.${name}`));
  const liveNames = new Set(live.filter((h): h is string => !!h).map((h) => revisionName(name, h)));
  const old = all.filter((r) => !liveNames.has(r.metadata.name)).sort((a, b) => revisionNumber(a) - revisionNumber(b));
  const store = admittedStoreOf(env, ControllerRevisionKind);
  for (const r of old.slice(0, Math.max(0, old.length - limit))) {
    await racing(() => store.write(namespace, r.metadata.name, { verb: "delete", preconditions: { uid: r.metadata.uid } }));
  }
}
