/**
 * What a change of one of Karmada's override policies owes the renderers other than Karmada's own
 * propagation policies (those re-render through src/fleet/karmada/controller.ts's hook):
 * KubeFleet's placements, ManifestWorkReplicaSets and template add-ons, which apply Karmada's
 * OverridePolicies and ClusterOverridePolicies after KubeFleet's overrides (docs/overrides.md "One
 * order everywhere"). An OverridePolicy or ClusterOverridePolicy created, its spec changed, or
 * removed asks for a run of:
 *
 * - the ClusterResourcePlacements and ResourcePlacements whose `status.selectedResources` hold an
 *   object the policy's `resourceSelectors` (before or after the change) may select (by
 *   apiVersion, kind, namespace and name; a label selector may select any object of its kind,
 *   the status has no labels; none: every object, of the policy's namespace for an
 *   OverridePolicy), or an envelope;
 * - the ManifestWorkReplicaSets of an OverridePolicy's namespace (every one for a
 *   ClusterOverridePolicy) with a manifest the selectors may select;
 * - for a ClusterOverridePolicy, every template add-on (ClusterManagementAddOn).
 *
 * Each run re-renders its clusters and writes the works of those whose rendering changed only,
 * rolled out under its own strategy (a placement's `rollingUpdate`, a replica set's placementRefs'
 * `rolloutStrategy`, an add-on's install strategy), as for a change of KubeFleet's overrides
 * (src/overrides/snapshots.ts). Karmada's policies have no snapshots: a run reads them as they are.
 */
import { deepEqual } from "../k8s/fieldmanager.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { ClusterResourceEnvelopeKind, FLEET_GROUP, ResourceEnvelopeKind } from "../kinds/fleet.ts";
import { ClusterOverridePolicyKind, OverridePolicyKind, type OverrideSpec } from "../kinds/karmada-override.ts";
import type { KarmadaResourceSelector } from "../kinds/karmada.ts";
import { ManifestWorkReplicaSetKind } from "../kinds/manifestwork.ts";
import { ClusterManagementAddOnKind } from "../kinds/addon.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { notifyPlacements, type PlacementRef } from "../fleet/controller.ts";
import { reevaluateReplicaSet } from "../work/replicaset.ts";
import { addonOverridesChanged } from "../addons/manager.ts";

/** What a policy's change owes: its namespace ("" for a ClusterOverridePolicy) and its selectors before and after (null: the policy was absent). */
export interface KarmadaPolicyOwed {
  namespace: string;
  name: string;
  selectors: (KarmadaResourceSelector[] | null)[];
}

const selectorsOf = (o: KubeObject | null): KarmadaResourceSelector[] | null => (o ? (((o.spec ?? {}) as OverrideSpec).resourceSelectors ?? []) : null);

/** A policy created, its spec changed, or removed (its selectors, before and after, say what it may have touched). */
export function planKarmadaPolicy(change: Change): KarmadaPolicyOwed | null {
  const { def, namespace, name, before, after } = change;
  if (def !== OverridePolicyKind && def !== ClusterOverridePolicyKind) return null;
  if (deepEqual(before?.spec ?? null, after?.spec ?? null)) return null;
  return { namespace, name, selectors: [selectorsOf(before), selectorsOf(after)] };
}

/** An object as a policy's selectors may see it without its labels (a status entry, a manifest): null labels match any label selector. */
interface Identity {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  labels: Record<string, string> | null;
}

/**
 * Whether selectors (of a policy of `policyNamespace`, "" for a ClusterOverridePolicy) may select
 * `o` (Karmada's `ResourceMatches`; an unknown label set may match; an OverridePolicy selects the
 * objects of its namespace alone).
 */
export function maySelect(selectors: readonly KarmadaResourceSelector[], policyNamespace: string, o: Identity): boolean {
  if (policyNamespace && o.namespace !== policyNamespace) return false;
  if (selectors.length === 0) return true;
  return selectors.some((s) => {
    if (s.apiVersion !== o.apiVersion || s.kind !== o.kind) return false;
    if (s.namespace && s.namespace !== o.namespace) return false;
    if (s.name) return s.name === o.name;
    return true;
  });
}

/**
 * The placements a policy's change may concern (see the module comment).
 * @throws errors of D1
 */
export async function placementsOfPolicy(env: Env, owed: KarmadaPolicyOwed): Promise<PlacementRef[]> {
  const sets = owed.selectors.filter((s): s is KarmadaResourceSelector[] => s !== null);
  const crps = (await admittedStoreOf(env, FLEET_PLACEMENT_KINDS.crp).list()).items;
  const rps = (await admittedStoreOf(env, FLEET_PLACEMENT_KINDS.rp).list(owed.namespace || undefined)).items;
  const out: PlacementRef[] = [];
  for (const p of [...crps, ...rps]) {
    const selected = (p.status?.selectedResources ?? []) as { group?: string; version: string; kind: string; name: string; namespace?: string }[];
    const hit = selected.some((r) => {
      if (r.group === FLEET_GROUP && (r.kind === ClusterResourceEnvelopeKind.kind || r.kind === ResourceEnvelopeKind.kind)) return true;
      const o = { apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind, namespace: r.namespace ?? "", name: r.name, labels: null };
      return sets.some((s) => maySelect(s, owed.namespace, o));
    });
    if (hit) out.push({ namespace: p.metadata.namespace ?? "", name: p.metadata.name });
  }
  return out;
}

/**
 * The ManifestWorkReplicaSets a policy's change may concern: of its namespace (any, for a
 * ClusterOverridePolicy), with a manifest its selectors may select (a replica set's manifests are
 * objects of its namespace to Karmada's policies: src/work/replicaset/overrides.ts).
 * @throws errors of D1
 */
export async function replicaSetsOfPolicy(env: Env, owed: KarmadaPolicyOwed): Promise<{ namespace: string; name: string }[]> {
  const sets = owed.selectors.filter((s): s is KarmadaResourceSelector[] => s !== null);
  const { items } = await admittedStoreOf(env, ManifestWorkReplicaSetKind).list(owed.namespace || undefined);
  return items
    .filter((rs) => {
      const ns = rs.metadata.namespace ?? "";
      const manifests = ((rs.spec as { manifestWorkTemplate?: { workload?: { manifests?: unknown[] } } } | undefined)?.manifestWorkTemplate?.workload
        ?.manifests ?? []) as KubeObject[];
      return manifests.some((m) => {
        if (!m || typeof m !== "object" || typeof m.metadata !== "object" || m.metadata === null) return false;
        const o = { apiVersion: m.apiVersion, kind: m.kind, namespace: ns, name: m.metadata.name, labels: m.metadata.labels ?? {} };
        return sets.some((s) => maySelect(s, owed.namespace, o));
      });
    })
    .map((rs) => ({ namespace: rs.metadata.namespace ?? "", name: rs.metadata.name }));
}

/** The hook of Karmada's override policies for KubeFleet's placements, replica sets and add-ons ({@link planKarmadaPolicy}). */
export const karmadaPolicyHook: AfterCommitHook<KarmadaPolicyOwed> = {
  name: "karmada-override-policies",
  plan: planKarmadaPolicy,
  async run(env, owed) {
    await notifyPlacements(env, await placementsOfPolicy(env, owed));
    for (const rs of await replicaSetsOfPolicy(env, owed)) await reevaluateReplicaSet(env, rs.namespace, rs.name);
    if (!owed.namespace)
      for (const cma of (await admittedStoreOf(env, ClusterManagementAddOnKind).list()).items) await addonOverridesChanged(env, cma.metadata.name);
  },
};
