/**
 * A controller's write that may lose a race: controllers write what they computed from what they
 * read, and another writer may have changed or removed the object meanwhile. As client-go's
 * controllers requeue on a conflict instead of failing, such a write's loss is a value, not an
 * error: the controller's next run sees the current state.
 */
import { ApiError } from "./errors.ts";
import type { KubeObject } from "./meta.ts";

/**
 * Runs `write` (a store write); a lost race (409 Conflict, 409 AlreadyExists, 404 NotFound) is
 * answered `"lost"` instead of thrown.
 * @returns the object as stored (null when deleted), or `"lost"`
 * @throws any other error of the write (another ApiError, errors of D1)
 * @example const r = await racing(() => storeOf(env, PolicyKind).write(ns, name, { verb: "update", body }));
 */
export async function racing(write: () => Promise<{ object: KubeObject | null }>): Promise<KubeObject | null | "lost"> {
  try {
    return (await write()).object;
  } catch (e) {
    if (e instanceof ApiError && (e.reason === "Conflict" || e.reason === "AlreadyExists" || e.reason === "NotFound")) return "lost";
    throw e;
  }
}
