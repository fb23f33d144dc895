/**
 * What a PlacementDecision's change wakes in the add-on manager and the policy propagator, and
 * the interest check before it: their hooks for a decision (the controller manifest,
 * src/controllers.ts, lists them beside the controllers' own hooks). OCM's consumers do the same
 * in their informers' event handlers: the add-on manager's `enqueueByPlacement` and the
 * propagator's `placementDecisionMapper` queue only the ClusterManagementAddOns and
 * PlacementBindings that name the decision's placement; a decision no one names queues nothing.
 * Here each hook plans on a decision that moved, and before its run the check answers from the
 * isolate's index of the placements named, so that a decision no ClusterManagementAddOn's
 * `installStrategy.placements` and no PlacementBinding's `placementRef` names runs neither
 * controller (nor its list reads).
 *
 * Freshness, as the placement lists' (src/fleet/placement-lists.ts): every write of either kind
 * sets the `counters` row {@link PLACEMENT_REFERENCE_CHANGE_COUNTER} to its resourceVersion in the
 * write's own D1 batch (`KindDefinition.changeCounter`). A check reads that one row by key (once
 * for the hook runs of commits finished together: src/store/hooks.ts `sharedRead`) and lists both
 * kinds again only when it differs from the value the isolate's index was built at. The check runs
 * after the decision committed, so an add-on or binding committed before it is always seen; one
 * committed after it runs its own controller, which reads the decisions then. Nothing is stale: the
 * index only saves the lists while neither kind changed.
 */
import type { Env } from "../env.ts";
import type { KubeObject } from "../k8s/meta.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { sharedRead, type AfterCommitHook, type HookTarget } from "../store/hooks.ts";
import { storageOf } from "../store/storage.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { PLACEMENT_REFERENCE_CHANGE_COUNTER, PlacementDecisionKind } from "../kinds/placement.ts";
import { PLACEMENT_LABEL } from "../scheduling/grouping.ts";
import { addonsForPlacements } from "../addons/manager.ts";
import { reconcilePlacement } from "../policy/propagator.ts";
import { decisionsMoved } from "./changes.ts";
import { ClusterManagementAddOnKind } from "../kinds/addon.ts";
import { PlacementBindingKind } from "../kinds/policy.ts";

/** The kinds whose objects name placements, and the placements (`<namespace>/<name>`) each names. */
export type PlacementReferrer = "ClusterManagementAddOn" | "PlacementBinding";

/** The placements named by a ClusterManagementAddOn (as stored): its `installStrategy.placements`. */
function addonPlacements(o: KubeObject): string[] {
  const placements = (o.spec as { installStrategy?: { placements?: { namespace?: string; name?: string }[] } } | undefined)?.installStrategy?.placements;
  return (placements ?? []).map((p) => `${p.namespace ?? ""}/${p.name ?? ""}`);
}

/** The placement named by a PlacementBinding: its `placementRef.name`, in the binding's namespace. */
function bindingPlacements(o: KubeObject): string[] {
  const name = (o as unknown as { placementRef?: { name?: string } }).placementRef?.name;
  return name ? [`${o.metadata.namespace ?? ""}/${name}`] : [];
}

const REFERRERS: Record<PlacementReferrer, { def: KindDefinition; placementsOf: (o: KubeObject) => string[] }> = {
  ClusterManagementAddOn: { def: ClusterManagementAddOnKind, placementsOf: addonPlacements },
  PlacementBinding: { def: PlacementBindingKind, placementsOf: bindingPlacements },
};

/** The isolate's index (per referrer kind, the placements its objects name) and the counter's value read before it was listed. */
let cached: { counter: number; named: Record<PlacementReferrer, ReadonlySet<string>> } | null = null;

/** How many times this isolate listed the two kinds ({@link placementNamed} found its index stale): for tests. */
let listings = 0;

/** How many times this isolate listed ClusterManagementAddOns and PlacementBindings for the index since it started. */
export function placementReferenceListings(): number {
  return listings;
}

async function index(env: Env, counter: number): Promise<Record<PlacementReferrer, ReadonlySet<string>>> {
  if (cached && cached.counter === counter) return cached.named;
  listings++;
  const [addons, bindings] = await Promise.all(
    (["ClusterManagementAddOn", "PlacementBinding"] as const).map(async (kind) => {
      const { def, placementsOf } = REFERRERS[kind];
      return new Set((await admittedStoreOf(env, def).list()).items.flatMap(placementsOf));
    }),
  );
  const named: Record<PlacementReferrer, ReadonlySet<string>> = { ClusterManagementAddOn: addons!, PlacementBinding: bindings! };
  // An index built at an older counter never replaces one built at a newer.
  if (!cached || cached.counter <= counter) cached = { counter, named };
  return named;
}

/**
 * Whether an object of kind `referrer` names placement `placement` (`<namespace>/<name>`): one D1
 * read by key of the change counter (shared by the hook runs of `target`'s group), and the lists
 * of both kinds only when it moved (see the module comment).
 * @throws errors of D1
 */
export async function placementNamed(env: Env, referrer: PlacementReferrer, placement: string, target?: HookTarget): Promise<boolean> {
  const counter = await sharedRead(target, "counter/placement-references", () => storageOf(env).changeCounter(PLACEMENT_REFERENCE_CHANGE_COUNTER));
  return (await index(env, counter))[referrer].has(placement);
}

/** What a PlacementDecision's change owes a consumer: its placement, `<namespace>/<name>`. */
export interface DecisionOwed {
  placement: string;
}

/**
 * The add-on manager's wake-up by a PlacementDecision (OCM's `enqueueByPlacement`): a decision
 * whose decisions moved ({@link decisionsMoved}) owes a run of the ClusterManagementAddOns
 * installed by its placement (src/addons/manager.ts `addonsForPlacements`), made only when one
 * names it ({@link placementNamed}). The manager's other changes are its own hook's
 * (src/addons/controller.ts).
 */
export const addonDecisionHook: AfterCommitHook<DecisionOwed> = {
  name: "addons-decision",
  plan(change) {
    const placement = decisionsMoved(change);
    return placement ? { placement } : null;
  },
  async run(env, owed, target) {
    if (!(await placementNamed(env, "ClusterManagementAddOn", owed.placement, target))) return;
    await addonsForPlacements(env, [owed.placement], undefined, target);
  },
};

/**
 * The policy propagator's wake-up by a PlacementDecision (OCM's `placementDecisionMapper`): a
 * decision created, deleted or whose decisions (status) changed owes the runs of the policies
 * bound to its placement (src/policy/propagator.ts `reconcilePlacement`), made only when a
 * PlacementBinding names it ({@link placementNamed}). A Placement's own create or delete owes
 * nothing: the scheduler writes its first decision (every placement has one, empty or not), and
 * its decisions are deleted with it, so its policies run once, on the decision's change. The
 * propagator's other changes are its own hook's (src/policy/controller.ts).
 */
export const policyDecisionHook: AfterCommitHook<DecisionOwed> = {
  name: "policy-decision",
  plan(change) {
    if (change.def !== PlacementDecisionKind) return null;
    const { before, after } = change;
    const placement = (after ?? before)?.metadata.labels?.[PLACEMENT_LABEL];
    if (!placement || (before && after && JSON.stringify(before.status ?? null) === JSON.stringify(after.status ?? null))) return null;
    return { placement: `${change.namespace}/${placement}` };
  },
  async run(env, owed, target) {
    if (!(await placementNamed(env, "PlacementBinding", owed.placement, target))) return;
    const slash = owed.placement.indexOf("/");
    await reconcilePlacement(env, owed.placement.slice(0, slash), owed.placement.slice(slash + 1), target);
  },
};
