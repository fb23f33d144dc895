/**
 * The isolate's lists of the objects that select other objects for placement: KubeFleet's
 * ClusterResourcePlacements and ResourcePlacements, Karmada's PropagationPolicies and
 * ClusterPropagationPolicies. Every write of an object a placement may select owes the placement
 * controller and the Karmada controller a look at them (src/fleet/controller.ts `placementHook`,
 * src/fleet/karmada/controller.ts `karmadaHook`): listed afresh, that was four D1 list reads per
 * write, two round trips of them, whether or not any placement exists.
 *
 * Freshness, as the RBAC authorizer's (src/auth/rbac-store.ts): every write of one of the four
 * kinds sets the `counters` row {@link PLACEMENT_CHANGE_COUNTER} to its resourceVersion in the
 * write's own D1 batch (`KindDefinition.changeCounter`). A look reads that one row by key and
 * lists the four kinds again only when it differs from the value the isolate's lists were read
 * at. The hooks look after their write committed, so a placement committed before the write is
 * always seen; one committed after it selects the object in its own run (it reads the objects
 * after its commit). Nothing is stale: the cache only saves the lists while no placement changed.
 *
 * Before the commit, the hooks' `quiet` (src/store/hooks.ts `AfterCommitHook.quiet`) judges the
 * write by the lists as the isolate holds them ({@link cachedPlacementLists}): when none of them may
 * concern the object, the commit writes its outbox row only if the counter moved from the value
 * they were read at, in its own atomic batch. Unmoved, nothing is owed (no outbox row, no read of
 * the counter, no deletion of the row); moved, the hooks run as above and read the lists again.
 */
import type { Env } from "../env.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { HookTarget } from "../store/hooks.ts";
import { storageOf } from "../store/storage.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import { PLACEMENT_CHANGE_COUNTER } from "../kinds/fleet.ts";
import { ClusterPropagationPolicyKind, PropagationPolicyKind } from "../kinds/karmada.ts";

/**
 * Every stored placement and propagation policy, each list in the store's order (by namespace,
 * then name). Shared by the isolate's callers: read only.
 */
export interface PlacementLists {
  /** ClusterResourcePlacements (as stored, v1beta1). */
  crps: readonly KubeObject[];
  /** ResourcePlacements of every namespace (as stored, v1beta1). */
  rps: readonly KubeObject[];
  /** PropagationPolicies of every namespace. */
  pps: readonly KubeObject[];
  /** ClusterPropagationPolicies. */
  cpps: readonly KubeObject[];
}

/** The isolate's lists and the change counter's value read before they were listed. */
let cached: { counter: number; lists: PlacementLists } | null = null;

/** The counter's read of one commit's hook runs (both hooks of a write share it; no other request's promise is awaited). */
const counterReads = new WeakMap<HookTarget, Promise<number>>();

/** How many times this isolate listed the four kinds ({@link placementLists} found its lists stale): for tests and benchmarks. */
let listings = 0;

/** How many times this isolate listed the placements and policies since it started (see {@link placementLists}). */
export function placementListings(): number {
  return listings;
}

/**
 * The stored placements and policies ({@link PlacementLists}): one D1 read by key of the change
 * counter (shared by the hook runs of `target`, one commit's), and the four lists again only when
 * it moved since the isolate last listed them (see the module comment).
 * @throws errors of D1
 */
export async function placementLists(env: Env, target?: HookTarget): Promise<PlacementLists> {
  let read = target ? counterReads.get(target) : undefined;
  if (!read) {
    read = storageOf(env).changeCounter(PLACEMENT_CHANGE_COUNTER);
    if (target) counterReads.set(target, read);
  }
  const counter = await read;
  if (cached && cached.counter === counter) return cached.lists;
  listings++;
  const [crps, rps, pps, cpps] = await Promise.all(
    [FLEET_PLACEMENT_KINDS.crp, FLEET_PLACEMENT_KINDS.rp, PropagationPolicyKind, ClusterPropagationPolicyKind].map(
      async (def) => (await admittedStoreOf(env, def).list()).items,
    ),
  );
  const lists: PlacementLists = { crps: crps!, rps: rps!, pps: pps!, cpps: cpps! };
  // A look that read an older counter never replaces lists read at a newer one.
  if (!cached || cached.counter <= counter) cached = { counter, lists };
  return lists;
}

/**
 * The isolate's lists and the change counter's value they were read at, as they are (no read):
 * what the hooks' `quiet` plans judge a write by before its commit (src/store/hooks.ts
 * `AfterCommitHook.quiet`); null before the first {@link placementLists}.
 */
export function cachedPlacementLists(): { counter: number; lists: PlacementLists } | null {
  return cached;
}

/** The objects of `list` in namespace `namespace` (list order kept). */
export function inNamespace(list: readonly KubeObject[], namespace: string): KubeObject[] {
  return list.filter((o) => (o.metadata.namespace ?? "") === namespace);
}
