/**
 * The placement controller's writer over D1 (the plan itself is src/placement/plan.ts): each
 * object the controller computed is committed only when it changed, with the resourceVersion it
 * was read at as the precondition.
 */
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { ApiError } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { commitObject } from "../k8s/store.ts";
import type { Saved } from "./plan.ts";

/**
 * Commits one computed object to D1 unless it equals `current`. A conflict with a concurrent
 * user write is not an error: that write triggers its own run, and this one yields.
 * @throws whatever the commit throws besides Conflict, AlreadyExists and NotFound.
 */
export async function save(db: DrizzleD1Database, def: KindDefinition, current: KubeObject | null, next: KubeObject | null): Promise<Saved> {
  if (current && next && JSON.stringify(current) === JSON.stringify(next)) return { written: false, conflict: false };
  const k = { namespace: (next ?? current)!.metadata.namespace ?? "", name: (next ?? current)!.metadata.name };
  try {
    const stored = await commitObject(db, def, k, next, current ? Number(current.metadata.resourceVersion) : null);
    return { written: true, stored };
  } catch (e) {
    // A concurrent user write to the same object triggers its own run; this one yields.
    if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound")) return { written: false, conflict: true };
    throw e;
  }
}
