/**
 * The policy propagator's after-commit hook (src/store/hooks.ts): what a write of a Policy,
 * PlacementBinding, PolicySet, Placement or PlacementDecision owes the propagator
 * (src/policy/propagator.ts), as OCM's propagator watches the same kinds:
 *
 * - a root Policy created, deleted, its spec (generation), labels or annotations changed: that
 *   policy's run (replicas and status) and its PolicySets' status;
 * - a replicated Policy whose `status.compliant` changed (the agent's report): its cluster's item
 *   of the root's status, alone ({@link recordReplicaCompliance});
 * - a PlacementBinding created, deleted or changed: the runs of the policies its subjects name,
 *   before and after (a PolicySet subject: the set's policies), and those sets' status;
 * - a PolicySet created, deleted or its policies changed: the runs of the policies that joined
 *   or left it (all of them on a create or delete; the others' placement is unchanged), and its
 *   status;
 * - a PlacementDecision's decisions changed (created, changed or deleted) wakes the propagator
 *   through its own hook (src/placement/consumers.ts `policyDecisionHook`: the runs of the
 *   policies bound to that placement, when a PlacementBinding names it); its owed value
 *   `{ namespace, placement }` is still run here for an outbox row written before.
 *
 * The propagator's own writes (replicas' spec and metadata, the status of roots and sets) owe
 * nothing, so a run never calls for itself.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { PlacementBindingKind, POLICY_GROUP, PolicyKind, PolicySetKind, ROOT_POLICY_LABEL } from "../kinds/policy.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { reconcilePlacement, reconcileSubjects, recordReplicaCompliance } from "./propagator.ts";

/**
 * What a change owes, in one namespace: the runs of root `policies` and of the policies of
 * `sets` (with those sets' status; a set's own change owes only the policies that joined or left
 * it, `expandSets: false`); the runs of the policies bound to `placement`; or the compliance of
 * the replica of `root` (`<ns>.<name>`) in `cluster`.
 */
export type PolicyOwed =
  | { namespace: string; policies: string[]; sets: string[]; expandSets?: boolean }
  | { namespace: string; placement: string }
  | { root: string; cluster: string };

interface Subject {
  apiGroup?: string;
  kind?: string;
  name?: string;
}

const json = (v: unknown) => JSON.stringify(v ?? null);
const subjectsOf = (o: KubeObject | null) =>
  ((o as unknown as { subjects?: Subject[] } | null)?.subjects ?? []).filter((s) => s.apiGroup === POLICY_GROUP && !!s.name);
const policiesOf = (o: KubeObject | null) => (o?.spec as { policies?: string[] } | undefined)?.policies ?? [];
const union = (a: string[], b: string[]) => [...new Set([...a, ...b])];

/** The binding fields that decide what it places (OCM's placement binding predicate). */
function bindingFields(o: KubeObject | null): string {
  const b = o as unknown as Record<string, unknown> | null;
  return json(b && [b.placementRef, b.subjects, b.bindingOverrides, b.subFilter]);
}

/** What `change` owes the propagator (see the module's docstring), or null. */
export function planPolicy(change: Change): PolicyOwed | null {
  const { def, namespace, name, before, after } = change;
  if (def === PolicyKind) {
    const root = (after ?? before)?.metadata.labels?.[ROOT_POLICY_LABEL];
    if (root !== undefined) {
      const was = (before?.status as { compliant?: string } | undefined)?.compliant;
      const is = (after?.status as { compliant?: string } | undefined)?.compliant;
      return before && after && was !== is ? { root, cluster: namespace } : null;
    }
    const changed =
      !before ||
      !after ||
      before.metadata.generation !== after.metadata.generation ||
      json(before.metadata.labels) !== json(after.metadata.labels) ||
      json(before.metadata.annotations) !== json(after.metadata.annotations) ||
      !!before.metadata.deletionTimestamp !== !!after.metadata.deletionTimestamp;
    return changed ? { namespace, policies: [name], sets: [] } : null;
  }
  if (def === PlacementBindingKind) {
    if (before && after && bindingFields(before) === bindingFields(after)) return null;
    const subjects = [...subjectsOf(before), ...subjectsOf(after)];
    return {
      namespace,
      policies: union(
        subjects.filter((s) => s.kind === "Policy").map((s) => s.name!),
        [],
      ),
      sets: union(
        subjects.filter((s) => s.kind === "PolicySet").map((s) => s.name!),
        [],
      ),
    };
  }
  if (def === PolicySetKind) {
    if (before && after && json(policiesOf(before)) === json(policiesOf(after))) return null;
    // Only the policies that joined or left the set: what the set decides for the others is unchanged.
    const was = new Set(policiesOf(before));
    const is = new Set(policiesOf(after));
    const moved = union(
      [...is].filter((p) => !was.has(p)),
      [...was].filter((p) => !is.has(p)),
    );
    return { namespace, policies: moved, sets: [name], expandSets: false };
  }
  return null;
}

/** The hook. Idempotent: a run reads the current state and writes only what differs. */
export const policyHook: AfterCommitHook<PolicyOwed> = {
  name: "policy-propagator",
  plan: planPolicy,
  async run(env, owed, target) {
    if ("root" in owed) {
      // The replica as stored when the run follows its commit; a sweep reads it.
      const replica = target.change?.def === PolicyKind ? target.change.after : undefined;
      await recordReplicaCompliance(env, owed.root, owed.cluster, replica);
      return;
    }
    if ("placement" in owed) {
      await reconcilePlacement(env, owed.namespace, owed.placement, target);
      return;
    }
    await reconcileSubjects(env, owed.namespace, owed.policies, owed.sets, owed.expandSets !== false);
    // A root's own write gets its status in the same request: the writer reads it back.
    return { rewrote: target.change?.def === PolicyKind || target.change?.def === PolicySetKind };
  },
};
