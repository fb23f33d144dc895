/**
 * Each ManagedClusterSet's member count, for its `ClusterSetEmpty` condition
 * (src/clusterprofile/clusterset-status.ts), kept in D1 (`clusterset_counts`) so that one
 * cluster's change costs a constant number of rows whatever the sets' sizes:
 *
 * - a ManagedCluster write that creates, deletes or relabels the cluster adds one statement to
 *   its own atomic batch, under the write's guard: every set's count moves by +1 or -1 where the
 *   cluster's labels before and after (bound as JSON) differ in whether they satisfy the set's
 *   stored requirements. It reads one row per set (a handful), never a set's members. A write
 *   that leaves the labels alone (a heartbeat, a status report) adds nothing;
 * - a ManagedClusterSet write that creates the set or changes its selector counts the set anew
 *   in its own batch (one COUNT over the label index rows of the set's first `In` requirement,
 *   or over every cluster for a selector without one, such as `global`'s), as OCM's controller
 *   lists a set's clusters; its removal deletes the row.
 *
 * Both happen inside D1's serialised batches, so the counts are exact whatever the order of
 * concurrent cluster and set writes, and a retried write (a lost precondition) changes nothing.
 * Membership is OCM's `GetClustersFromClusterSet` (api `cluster/v1beta2/helpers.go`): an
 * `ExclusiveClusterSetLabel` set holds the clusters whose
 * `cluster.open-cluster-management.io/clusterset` label is its name; a `LabelSelector` set those
 * its `metav1.LabelSelector` matches (`In`, `NotIn`, `Exists`, `DoesNotExist`, matchLabels; a
 * null selector matches nothing, `{}` everything). Clusters being deleted still count.
 *
 * @module
 */
import { resourceKey } from "../k8s/kind.ts";
import { fromLabelSelector } from "../k8s/labels.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { setCountShapes, storageOf, type GuardedBinder } from "../store/storage.ts";
import type { Env } from "../env.ts";
import { CLUSTERSET_LABEL, ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import type { CommitStatements, Change } from "../store/hooks.ts";

/**
 * One requirement of a set as stored: `k` the label key, `o` the operator (`in`, `notin`,
 * `exists`, `!` for DoesNotExist, `none` for a selector that matches nothing), `v` the values.
 */
export interface SetRequirement {
  k?: string;
  o: "in" | "notin" | "exists" | "!" | "none";
  v?: string[];
}

/**
 * A set's selector as the requirements its count row stores (their AND), following OCM's
 * `GetClustersFromClusterSet`: the clusterset label for an `ExclusiveClusterSetLabel` set, the
 * label selector's requirements for a `LabelSelector` one (`[{o: "none"}]` when it is null or
 * invalid: it selects nothing).
 */
export function setRequirements(set: KubeObject): SetRequirement[] {
  const sel = (set.spec?.clusterSelector ?? {}) as { selectorType?: string; labelSelector?: unknown };
  if ((sel.selectorType ?? "ExclusiveClusterSetLabel") === "ExclusiveClusterSetLabel") return [{ k: CLUSTERSET_LABEL, o: "in", v: [set.metadata.name] }];
  let selector;
  try {
    selector = fromLabelSelector(sel.labelSelector as never);
  } catch {
    return [{ o: "none" }];
  }
  if (selector.matchesNothing) return [{ o: "none" }];
  return selector.requirements.map((r): SetRequirement => {
    switch (r.operator) {
      case "=":
      case "==":
      case "in":
        return { k: r.key, o: "in", v: [...r.values] };
      case "!=":
      case "notin":
        return { k: r.key, o: "notin", v: [...r.values] };
      case "exists":
        return { k: r.key, o: "exists" };
      case "!":
        return { k: r.key, o: "!" };
      default:
        // gt/lt do not exist in a metav1.LabelSelector.
        return { o: "none" };
    }
  });
}

const CLUSTERS = resourceKey(ManagedClusterKind);

/** The values binding a count of `requirements`, and which shape (driven by its first `In` requirement, or over every cluster). */
function countValues(requirements: SetRequirement[]): { driven: boolean; values: Record<string, unknown> } {
  const first = requirements.find((r) => r.o === "in");
  const values: Record<string, unknown> = { requirements: JSON.stringify(requirements), clusters: CLUSTERS };
  if (!first) return { driven: false, values };
  return { driven: true, values: { ...values, k: first.k, v: JSON.stringify(first.v ?? []) } };
}

/**
 * The statements `change` adds to its own batch for the counts (see the module doc), bound by
 * `guarded` under the write's precondition: none unless a ManagedCluster is created, deleted or
 * relabelled, or a ManagedClusterSet is created, removed or given another selector.
 */
export function setCountStatements(change: Change, guarded: GuardedBinder): D1PreparedStatement[] {
  const { def, before, after } = change;
  if (def === ManagedClusterKind) {
    const was = before ? JSON.stringify(before.metadata.labels ?? {}) : null;
    const is = after ? JSON.stringify(after.metadata.labels ?? {}) : null;
    if (was === is) return [];
    return [guarded(setCountShapes.move, { before: was, after: is })];
  }
  if (def === ManagedClusterSetKind) {
    if (!after) return before ? [guarded(setCountShapes.drop)] : [];
    const requirements = setRequirements(after);
    if (before && JSON.stringify(setRequirements(before)) === JSON.stringify(requirements)) return [];
    const { driven, values } = countValues(requirements);
    return [guarded(driven ? setCountShapes.count.driven : setCountShapes.count.all, values)];
  }
  return [];
}
/** The set counts' commit statements (registered by the controller manifest, src/controllers.ts). */
export const setCountsStatements: CommitStatements = { name: "clusterset-counts", statements: setCountStatements };

/**
 * How many clusters `set` selects: its count row (one D1 row read). A row migration 0011 wrote
 * (marked `recount`), or a missing one (none should be), is counted once more and written, in one
 * statement, atomic with the cluster writes around it.
 * @throws errors of D1
 */
export async function readSetCount(env: Env, set: KubeObject): Promise<number> {
  const name = set.metadata.name;
  const counts = storageOf(env).setCounts;
  const row = await counts.read(name);
  if (row && row.recount === 0) return row.clusters;
  const { driven, values } = countValues(setRequirements(set));
  await counts.recount(name, driven, values);
  return (await counts.read(name))?.clusters ?? 0;
}
