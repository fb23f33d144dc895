/**
 * The AppliedManifestWork record: what the agent applied for each work, kept on the member
 * cluster so that it survives agent restarts (OCM keeps a cluster-scoped AppliedManifestWork per
 * work, `status.appliedResources[]`). Flotilla keeps one ConfigMap per work in the agent's
 * namespace, labelled `flotilla.dev/applied-manifest-work=true`, with one key `record.json`
 * holding a {@link WorkRecord}.
 *
 * Flotilla does not put ownerReferences on applied objects (OCM points them at the
 * AppliedManifestWork): a namespaced ConfigMap cannot own cluster-scoped or other-namespace
 * objects. Ownership is read from the records instead; see cleanup.ts.
 */
import { createHash } from "node:crypto";
import { statusCodeOf } from "../kube.ts";
import type { DynamicClient, GroupVersionResource, ObjectRef } from "./dynamic.ts";
import { isObj, type AppliedResource, type DeleteOption, type ManifestWork } from "./types.ts";

/** Label on every record ConfigMap. */
export const RECORD_LABEL = "flotilla.dev/applied-manifest-work";
/** Annotation holding the work's name on its record. */
export const RECORD_WORK_ANNOTATION = "flotilla.dev/work-name";
/** The ConfigMap key holding the JSON record. */
export const RECORD_KEY = "record.json";

const CONFIGMAPS: GroupVersionResource = { group: "", version: "v1", resource: "configmaps" };

/** One work's record (the content of `record.json`). */
export interface WorkRecord {
  /** The ManifestWork's name (in the cluster's namespace on the hub). */
  workName: string;
  /** The ManifestWork's `metadata.uid` last seen. */
  workUid: string;
  /** `spec.deleteOption` last seen: it decides what happens when the work disappears. */
  deleteOption?: DeleteOption;
  /** What this work holds on the cluster, sorted by group/version/resource/namespace/name (as OCM's). */
  appliedResources: AppliedResource[];
  /** The work last applied (metadata and spec), so drift is still repaired after a restart while the hub is unreachable. */
  work?: ManifestWork;
  /**
   * The hub is deleting the work (the agent saw its deletionTimestamp): what it applied goes at
   * once, even when the work then disappears before the agent confirmed.
   */
  deleting?: true;
  /**
   * RFC 3339 time since which the work is missing from the hub's list without the agent having
   * seen it deleted (OCM's AppliedManifestWork `status.evictionStartTime`): its resources are kept
   * for the eviction grace period from then, then released.
   */
  evictionStartTime?: string;
}

/** SHA-256 of `text`, base64url. */
function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/**
 * The record ConfigMap's name: `flotilla-work-<work name>`, or `flotilla-work-<sha256 hex, 40>`
 * when that would exceed 253 characters.
 */

export function recordName(workName: string): string {
  const plain = `flotilla-work-${workName}`;
  return plain.length <= 253 ? plain : `flotilla-work-${createHash("sha256").update(workName).digest("hex").slice(0, 40)}`;
}

/** Sorts applied resources as OCM's `appliedResources` (group, version, resource, namespace, name). */
export function sortApplied(list: readonly AppliedResource[]): AppliedResource[] {
  const key = (r: AppliedResource) => [r.group, r.version, r.resource, r.namespace, r.name].join("\u0000");
  return [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

function parseRecord(cm: Record<string, unknown>): WorkRecord | undefined {
  const data = isObj(cm.data) ? cm.data : {};
  const raw = data[RECORD_KEY];
  if (typeof raw !== "string") return undefined;
  try {
    const r: unknown = JSON.parse(raw);
    if (!isObj(r) || typeof r.workName !== "string" || !Array.isArray(r.appliedResources)) return undefined;
    return r as unknown as WorkRecord;
  } catch {
    return undefined;
  }
}

/**
 * Reads and writes the records in one namespace. Writes are skipped when the record did not
 * change since this store last read or wrote it.
 */
export class RecordStore {
  /** SHA-256 of each record's JSON as last read or written (to skip writes that change nothing). */
  private readonly saved = new Map<string, string>();

  /**
   * @param client the member cluster's dynamic client.
   * @param namespace the agent's namespace (e.g. `flotilla-agent`).
   */
  constructor(
    private readonly client: DynamicClient,
    private readonly namespace: string,
  ) {}

  private ref(workName: string): ObjectRef {
    return { ...CONFIGMAPS, namespace: this.namespace, name: recordName(workName) };
  }

  /**
   * Every record in the namespace, by work name. ConfigMaps with the label but no readable
   * record are skipped.
   *
   * @throws the client's error when the list fails.
   */
  async list(): Promise<Map<string, WorkRecord>> {
    let items: Record<string, unknown>[];
    try {
      items = await this.client.list(CONFIGMAPS, this.namespace, `${RECORD_LABEL}=true`);
    } catch (e) {
      if (statusCodeOf(e) === 404) return new Map();
      throw e;
    }
    const out = new Map<string, WorkRecord>();
    for (const cm of items) {
      const r = parseRecord(cm);
      if (!r) continue;
      out.set(r.workName, r);
      this.saved.set(r.workName, digest(JSON.stringify(r)));
    }
    return out;
  }

  /**
   * Creates or replaces a work's record (no request when it is unchanged).
   *
   * @throws the client's error when the write fails.
   */
  async save(record: WorkRecord): Promise<void> {
    const text = JSON.stringify(record);
    const hash = digest(text);
    if (this.saved.get(record.workName) === hash) return;
    const ref = this.ref(record.workName);
    const body = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: ref.name,
        namespace: this.namespace,
        labels: { [RECORD_LABEL]: "true" },
        annotations: { [RECORD_WORK_ANNOTATION]: record.workName },
      },
      data: { [RECORD_KEY]: text },
    };
    try {
      await this.client.replace(ref, body, "work-agent");
    } catch (e) {
      if (statusCodeOf(e) !== 404) throw e;
      await this.client.create(CONFIGMAPS, this.namespace, body, "work-agent");
    }
    this.saved.set(record.workName, hash);
  }

  /**
   * Deletes a work's record; a missing one is fine.
   *
   * @throws the client's error for other failures.
   */
  async remove(workName: string): Promise<void> {
    try {
      await this.client.delete(this.ref(workName));
    } catch (e) {
      if (statusCodeOf(e) !== 404) throw e;
    }
    this.saved.delete(workName);
  }
}
