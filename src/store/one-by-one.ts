/** Many writes of a store that has no batches of its own, one after another. */
import { ApiError } from "../k8s/errors.ts";
import type { ManyOutcome, ManyWrite, Store } from "./types.ts";

/**
 * {@link Store.writeMany} for a store without batches: each write through `store.write` in turn,
 * a 409 (Conflict, or AlreadyExists for a create) answered `lost`, as a batch answers a lost
 * precondition. `known` is not used: each write reads the object afresh.
 * @throws ApiError other refusals, as {@link Store.write}
 */
export async function writeOneByOne(store: Store, writes: ManyWrite[]): Promise<ManyOutcome[]> {
  const out: ManyOutcome[] = [];
  for (const w of writes) {
    try {
      const r = await store.write(w.namespace, w.name, w.req, w.known ? { known: w.known } : undefined);
      out.push(r.object);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 409)) throw e;
      out.push("lost");
    }
  }
  return out;
}
