/**
 * The override controller (kubefleet-dev/kubefleet `pkg/controllers/overrider`; docs/overrides.md):
 * for each ClusterResourceOverride and ResourceOverride, its finalizer
 * (`kubernetes-fleet.io/override-cleanup`) and its snapshots: a new
 * ClusterResourceOverrideSnapshot (ResourceOverrideSnapshot, in the override's namespace)
 * `<override>-<index>` whenever its spec's hash changes, labelled with the override
 * (`kubernetes-fleet.io/parent-resource-override`), its index (`kubernetes-fleet.io/override-index`)
 * and `kubernetes-fleet.io/is-latest-snapshot` (true on the newest only), owned by the override,
 * at most 10 kept (KubeFleet's revision history limit). When the override is deleted its
 * snapshots go, then its finalizer.
 *
 * A new snapshot, or the override's deletion, notifies the placements it may concern: the one its
 * `placement` names, or (KubeFleet waits for their next rollout; Flotilla does not) every
 * placement that selected an object the override (before or after the change) selects, or an
 * envelope. Their runs re-render the clusters the change touches and roll them out under each
 * placement's strategy (src/fleet/controller.ts). A ResourceOverride naming a
 * ManifestWorkReplicaSet (`placement.scope: ManifestWorkReplicaSet`) asks that replica set for a
 * run instead, which does the same under its placementRefs' rollout strategies; a
 * ClusterResourceOverride naming a template add-on (`scope: ClusterManagementAddOn`) runs that
 * add-on (src/addons/overrides.ts), which rolls the clusters it touches out by its install strategy.
 *
 * Its hook runs in the writer, before the override's write answers (the snapshot exists when
 * `kubectl apply` returns); after a crash the outbox sweep runs it again (idempotent: each run
 * reads the current state).
 */
import { canonicalJson as canonical } from "../k8s/canonical-json.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { racing } from "../k8s/racing.ts";
import { ClusterResourceEnvelopeKind, FLEET_GROUP, IS_LATEST_SNAPSHOT_LABEL, ResourceEnvelopeKind } from "../kinds/fleet.ts";
import {
  ClusterResourceOverrideKind,
  ClusterResourceOverrideSnapshotKind,
  OVERRIDE_FINALIZER,
  OVERRIDE_INDEX_LABEL,
  OVERRIDE_TRACKING_LABEL,
  ResourceOverrideKind,
  ResourceOverrideSnapshotKind,
  REPLICA_SET_SCOPE,
  ADDON_SCOPE,
  type ClusterResourceOverrideSpec,
  type ResourceOverrideSpec,
} from "../kinds/fleet-override.ts";
import { FLEET_PLACEMENT_KINDS } from "../kinds/index.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { AfterCommitHook, Change } from "../store/hooks.ts";
import { notifyPlacements, type PlacementRef } from "../fleet/controller.ts";
import { reevaluateReplicaSet } from "../work/replicaset.ts";
import { addonOverridesChanged } from "../addons/manager.ts";
import { overridesForPlacement } from "./kubefleet.ts";

/** KubeFleet's revision history limit of override snapshots. */
export const OVERRIDE_HISTORY_LIMIT = 10;

/** An override: `namespace` "" for a ClusterResourceOverride. `before`: its spec before the change (to notify what it stops selecting). */
export interface OverrideOwed {
  namespace: string;
  name: string;
  before?: unknown;
}

const isOverrideKind = (def: KindDefinition) => def.group === FLEET_GROUP && (def.kind === "ClusterResourceOverride" || def.kind === "ResourceOverride");

/** What of an override's spec says which placements it concerns (its placement and selectors: small, for the outbox row). */
function selectionOf(spec: Record<string, unknown>): unknown {
  const { placement, clusterResourceSelectors, resourceSelectors } = spec as AnySpec;
  return {
    ...(placement ? { placement } : {}),
    ...(clusterResourceSelectors ? { clusterResourceSelectors } : {}),
    ...(resourceSelectors ? { resourceSelectors } : {}),
  };
}

/** What a committed change owes the override controller: an override created, its spec changed (generation), its deletion started, or removed. */
export function planOverride(change: Change): OverrideOwed | null {
  const { def, namespace, name, before, after } = change;
  if (!isOverrideKind(def)) return null;
  const owed = { namespace, name, ...(before?.spec ? { before: selectionOf(before.spec) } : {}) };
  if (!after || !before) return owed;
  if (before.metadata.generation !== after.metadata.generation) return owed;
  if (!before.metadata.deletionTimestamp && after.metadata.deletionTimestamp) return owed;
  return null;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** KubeFleet's `overrideHash` ([]byte of the hex digest, so base64 in JSON). */
async function overrideHash(spec: unknown): Promise<string> {
  return btoa(await sha256(canonical(spec)));
}

const indexOf = (o: KubeObject) => Number(o.metadata.labels?.[OVERRIDE_INDEX_LABEL] ?? "-1");

/** The snapshots of an override, oldest first. */
async function snapshotsOf(env: Env, def: KindDefinition, namespace: string, name: string): Promise<KubeObject[]> {
  const { items } = await admittedStoreOf(env, def).listPage(namespace || undefined, {
    index: { key: OVERRIDE_TRACKING_LABEL, values: [name] },
    filter: (o) => o.metadata.labels?.[OVERRIDE_TRACKING_LABEL] === name && (o.metadata.namespace ?? "") === namespace,
  });
  return items.sort((a, b) => indexOf(a) - indexOf(b));
}

/**
 * Reconciles one override (see the module comment). Returns the specs whose selections the
 * placements should see again (none when nothing changed).
 * @throws errors of D1 or an unexpected write failure (the outbox sweep runs it again)
 */
export async function reconcileOverride(env: Env, namespace: string, name: string): Promise<{ rerun: boolean; changed: unknown[] }> {
  const def = namespace ? ResourceOverrideKind : ClusterResourceOverrideKind;
  const snapDef = namespace ? ResourceOverrideSnapshotKind : ClusterResourceOverrideSnapshotKind;
  const store = admittedStoreOf(env, def);
  const snapStore = admittedStoreOf(env, snapDef);
  const o = await store.get(namespace, name);
  const snapshots = await snapshotsOf(env, snapDef, namespace, name);
  const specs = snapshots
    .filter((s) => s.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true")
    .map((s) => (s.spec as { overrideSpec: unknown }).overrideSpec);
  if (!o || o.metadata.deletionTimestamp) {
    let rerun = false;
    for (const s of snapshots) {
      if ((await racing(() => snapStore.write(namespace, s.metadata.name, { verb: "delete", preconditions: { uid: s.metadata.uid } }))) === "lost")
        rerun = true;
    }
    if (o && (o.metadata.finalizers ?? []).includes(OVERRIDE_FINALIZER)) {
      const finalizers = (o.metadata.finalizers ?? []).filter((f) => f !== OVERRIDE_FINALIZER);
      const r = await racing(() => store.write(namespace, name, { verb: "update", body: { ...o, metadata: { ...o.metadata, finalizers } } }, { known: o }));
      if (r === "lost") rerun = true;
    }
    return { rerun, changed: [...specs, ...(o?.spec ? [o.spec] : [])] };
  }
  let current = o;
  if (!(o.metadata.finalizers ?? []).includes(OVERRIDE_FINALIZER)) {
    const body = { ...o, metadata: { ...o.metadata, finalizers: [...(o.metadata.finalizers ?? []), OVERRIDE_FINALIZER] } };
    const r = await racing(() => store.write(namespace, name, { verb: "update", body }, { known: o }));
    if (r === "lost" || r === null) return { rerun: true, changed: [] };
    current = r;
  }
  const hash = await overrideHash(current.spec ?? {});
  const last = snapshots[snapshots.length - 1];
  if (last && (last.spec as { overrideHash?: string }).overrideHash === hash) {
    if (last.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true") return { rerun: false, changed: [] };
    const body = { ...last, metadata: { ...last.metadata, labels: { ...last.metadata.labels, [IS_LATEST_SNAPSHOT_LABEL]: "true" } } };
    const r = await racing(() => snapStore.write(namespace, last.metadata.name, { verb: "update", body }, { known: last }));
    return { rerun: r === "lost", changed: [current.spec] };
  }
  // KubeFleet's order: the oldest past the limit go first, the latest is marked not latest, then the new one.
  for (const old of snapshots.slice(0, Math.max(0, snapshots.length - (OVERRIDE_HISTORY_LIMIT - 1)))) {
    if ((await racing(() => snapStore.write(namespace, old.metadata.name, { verb: "delete", preconditions: { uid: old.metadata.uid } }))) === "lost")
      return { rerun: true, changed: [] };
  }
  for (const s of snapshots) {
    if (s.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] !== "true") continue;
    const body = { ...s, metadata: { ...s.metadata, labels: { ...s.metadata.labels, [IS_LATEST_SNAPSHOT_LABEL]: "false" } } };
    if ((await racing(() => snapStore.write(namespace, s.metadata.name, { verb: "update", body }, { known: s }))) === "lost")
      return { rerun: true, changed: [] };
  }
  const index = last ? indexOf(last) + 1 : 0;
  const created = await racing(() =>
    snapStore.write(namespace, `${name}-${index}`, {
      verb: "create",
      body: {
        apiVersion: `${FLEET_GROUP}/v1beta1`,
        kind: snapDef.kind,
        metadata: {
          name: `${name}-${index}`,
          ...(namespace ? { namespace } : {}),
          labels: { [OVERRIDE_TRACKING_LABEL]: name, [IS_LATEST_SNAPSHOT_LABEL]: "true", [OVERRIDE_INDEX_LABEL]: String(index) },
          ownerReferences: [
            { apiVersion: `${FLEET_GROUP}/v1beta1`, kind: def.kind, name, uid: current.metadata.uid, controller: true, blockOwnerDeletion: true },
          ],
        },
        spec: { overrideSpec: current.spec, overrideHash: hash },
      },
    }),
  );
  if (created === "lost" || created === null) return { rerun: true, changed: [] };
  return { rerun: false, changed: [...specs, current.spec] };
}

type AnySpec = Partial<ClusterResourceOverrideSpec & ResourceOverrideSpec>;

/**
 * The placements an override's specs (`specs`, of the override `namespace`/`name`) may concern:
 * those a spec's `placement` lets it apply to whose `status.selectedResources` hold an object a
 * spec selects, or an envelope.
 * @throws errors of D1
 */
export async function placementsOfOverride(env: Env, namespace: string, name: string, specs: readonly unknown[]): Promise<PlacementRef[]> {
  if (specs.length === 0) return [];
  const crps = (await admittedStoreOf(env, FLEET_PLACEMENT_KINDS.crp).list()).items;
  const rps = (await admittedStoreOf(env, FLEET_PLACEMENT_KINDS.rp).list(namespace || undefined)).items;
  const out: PlacementRef[] = [];
  for (const p of [...crps, ...rps]) {
    const ref = { namespace: p.metadata.namespace ?? "", name: p.metadata.name };
    const selected = ((p.status?.selectedResources ?? []) as { group?: string; version: string; kind: string; name: string; namespace?: string }[]).map(
      (r) =>
        ({
          apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
          kind: r.kind,
          metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
        }) as KubeObject,
    );
    const hasEnvelope = selected.some(
      (o) => o.apiVersion.startsWith(`${FLEET_GROUP}/`) && (o.kind === ClusterResourceEnvelopeKind.kind || o.kind === ResourceEnvelopeKind.kind),
    );
    const hit = specs.some((raw) => {
      const spec = (raw ?? {}) as AnySpec;
      const picked = namespace
        ? overridesForPlacement(ref, selected, [], [{ name, namespace, spec: spec as ResourceOverrideSpec }]).ros
        : overridesForPlacement(ref, selected, [{ name, spec: spec as ClusterResourceOverrideSpec }], []).cros;
      if (picked.length > 0) return true;
      // An envelope's objects are not in the status: a placement with one is asked when the override names it (or none).
      const named = spec.placement;
      const mayName =
        !named || (named.scope === "Namespaced" ? ref.namespace === namespace && ref.name === named.name : !ref.namespace && ref.name === named.name);
      return hasEnvelope && mayName;
    });
    if (hit) out.push(ref);
  }
  return out;
}

/**
 * The ManifestWorkReplicaSets of `namespace` a ResourceOverride's `specs` name
 * (`placement.scope: ManifestWorkReplicaSet`), each once: their runs re-render the clusters the
 * change touches, under each replica set's rollout strategy (src/work/replicaset/overrides.ts).
 */
export function replicaSetsOfOverride(namespace: string, specs: readonly unknown[]): string[] {
  if (!namespace) return [];
  const names = new Set<string>();
  for (const raw of specs) {
    const placement = ((raw ?? {}) as AnySpec).placement;
    if (placement?.scope === REPLICA_SET_SCOPE && placement.name) names.add(placement.name);
  }
  return [...names];
}

/**
 * The template add-ons a ClusterResourceOverride's `specs` name (`placement.scope:
 * ClusterManagementAddOn`), each once (none for a ResourceOverride: `namespace` set).
 */
export function addonsOfOverride(namespace: string, specs: readonly unknown[]): string[] {
  if (namespace) return [];
  const names = new Set<string>();
  for (const raw of specs) {
    const placement = ((raw ?? {}) as AnySpec).placement;
    if (placement?.scope === ADDON_SCOPE && placement.name) names.add(placement.name);
  }
  return [...names];
}

/** The override controller's after-commit hook ({@link planOverride}, {@link reconcileOverride}). */
export const overrideHook: AfterCommitHook<OverrideOwed> = {
  name: "fleet-overrides",
  plan: planOverride,
  async run(env, owed) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { rerun, changed } = await reconcileOverride(env, owed.namespace, owed.name);
      const specs = owed.before !== undefined && attempt === 0 ? [owed.before, ...changed] : changed;
      if (changed.length > 0) {
        await notifyPlacements(env, await placementsOfOverride(env, owed.namespace, owed.name, specs));
        for (const rs of replicaSetsOfOverride(owed.namespace, specs)) await reevaluateReplicaSet(env, owed.namespace, rs);
        for (const addon of addonsOfOverride(owed.namespace, specs)) await addonOverridesChanged(env, addon);
      }
      if (!rerun) return;
    }
    throw new Error(`override ${owed.namespace ? `${owed.namespace}/` : ""}${owed.name}: kept losing races; the outbox sweep runs it again`);
  },
};
