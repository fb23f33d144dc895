/**
 * The scheduler view's consistency check against the store (src/placement/view.ts): every
 * applied change carries the object's resourceVersion, and the store's log of committed writes
 * (D1's `events` table, src/placement/view-d1.ts `d1ChangeLog`) says which objects were written
 * since a watermark; one whose version is newer than the view's was missed (its trigger never
 * came) and is replayed as the trigger it should have carried.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { mergeTriggers, type Trigger, type ViewResource } from "./plan.ts";

/** The kinds whose writes the view follows, by plural. */
export type FollowedResource = ViewResource | "managedclusters" | "placementdecisions";

/** The store's log of committed writes (D1's `events` table), as {@link catchUp} reads it. */
export interface ChangeLog {
  /**
   * The latest committed resourceVersion, and every object of the followed kinds written after
   * `version` (with the version of its last write). `expired`: the log no longer reaches back
   * to `version` (older entries were pruned).
   */
  since(
    version: number,
  ): Promise<{ latest: number; expired: boolean; changed: { resource: FollowedResource; namespace: string; name: string; resourceVersion: number }[] }>;
  /** One object as stored now, or null. */
  read(resource: FollowedResource, namespace: string, name: string): Promise<KubeObject | null>;
}

/** What {@link catchUp} asks of the view (src/placement/view.ts `SchedulerView`). */
export interface CatchingUpView {
  /** The resourceVersion the view holds for an object (0 when it holds none). */
  versionOf(resource: string, namespace: string, name: string): number;
  /** The trigger a missed write of `object` (null: gone) calls for, or null when it needs none. */
  missedChange(resource: FollowedResource, namespace: string, name: string, object: KubeObject | null): Trigger | null;
}

/**
 * The consistency check of the view against the store: every object of the followed kinds
 * written after `watermark` (a version up to which the view has every write) whose version is
 * newer than the one the view holds was missed (its trigger never came); it is read back and
 * turned into the trigger it should have carried. Returns that trigger and the new watermark,
 * or undefined when the view cannot be repaired and must be rebuilt: the log was pruned past
 * the watermark, or the store's latest version is below it (the store went back in time, as
 * after a restore).
 * @throws whatever the log throws
 */
export async function catchUp(view: CatchingUpView, log: ChangeLog, watermark: number): Promise<{ trigger: Trigger; watermark: number } | undefined> {
  const { latest, expired, changed } = await log.since(watermark);
  if (expired || latest < watermark) return undefined;
  let trigger: Trigger = {};
  for (const c of changed) {
    if (view.versionOf(c.resource, c.namespace, c.name) >= c.resourceVersion) continue;
    const missed = view.missedChange(c.resource, c.namespace, c.name, await log.read(c.resource, c.namespace, c.name));
    if (missed) trigger = mergeTriggers(trigger, missed);
  }
  return { trigger, watermark: latest };
}
