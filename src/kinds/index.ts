/**
 * Every kind the hub serves. Adding a kind is one file in this folder plus one line here.
 *
 * Custom resources' kinds: besides {@link KINDS}, the hub serves the kinds of its stored
 * `apiextensions.k8s.io/v1` CustomResourceDefinitions (src/kinds/crd.ts), as kube-apiserver's
 * apiextensions-apiserver serves a CRD's resources once it is Established
 * (`pkg/apiserver/customresource_handler.go`, whose `crdInfo` cache is rebuilt when the CRD's
 * resourceVersion moves). **How kind lookup finds them** (the interface for the routes, RBAC,
 * watch, GC, the namespace controller and placements):
 * - `syncCustomKinds(env)` (src/kinds/sync.ts, apart so that this module reads no storage and
 *   the Node programs and tests that list the kinds need none) brings the isolate's cache up to
 *   date: one D1 read by key (the `counters` row `CRD_CHANGE_COUNTER`, which every CRD write sets
 *   to its resourceVersion in its own batch: `KindDefinition.changeCounter`); only when it moved
 *   are the CRDs listed (one range read of the CRD kind) and the custom kinds rebuilt (a CRD whose
 *   resourceVersion did not move keeps its definitions, so they stay `===` across refreshes). A
 *   controller run calls it before it looks a kind up; an API request calls `refreshCustomKinds`,
 *   which checks only every few seconds or after this isolate wrote a CRD, and at once when a path
 *   names a kind the isolate does not know (src/kinds/sync.ts says what staleness that allows).
 * - {@link findKind}`(group, version, plural)` answers the hub's own kinds first, then the custom
 *   kinds of the isolate's last sync; {@link findKindByKind} the same by group, version and kind.
 * - {@link servedKinds}`()`: {@link KINDS} then the custom kinds, for what walks every kind
 *   (discovery, OpenAPI, namespace deletion, the garbage collector, resource selection).
 * - `customKindsOf(crd)` (src/kinds/crd.ts) builds the kinds of one CRD object without the cache.
 *
 * Only served versions of an Established CRD are kinds. All versions of one CRD share one D1
 * range (`resourceKey`: `<group>/<plural>`): the `storage` version's kind stores them, every other
 * served version is that kind seen through a `VersionConversion` (conversion strategy `None`: only
 * `apiVersion` changes), so a list, a watch or a write in any version sees the same objects.
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { crdKind, customKindsOf } from "./crd.ts";
import { BootstrapTokenKind } from "./bootstraptoken.ts";
import { ManagedClusterKind } from "./managedcluster.ts";
import { ManagedClusterSetKind } from "./managedclusterset.ts";
import { ManifestWorkKind, ManifestWorkReplicaSetKind } from "./manifestwork.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "./placement.ts";
import { NamespaceKind } from "./namespace.ts";
import { ClusterRoleBindingKind, ClusterRoleKind, RoleBindingKind, RoleKind } from "./rbac.ts";
import { SelfSubjectAccessReviewKind, SelfSubjectReviewKind, SelfSubjectRulesReviewKind, SubjectAccessReviewKind } from "./reviews.ts";
import { SecretKind } from "./secret.ts";
import { ServiceAccountKind } from "./serviceaccount.ts";
import { WebhookReceiverKind } from "./webhookreceiver.ts";
import { ClusterViewManagedClusterKind, ClusterViewManagedClusterSetKind } from "./clusterview.ts";
import { ClusterProfileKind } from "./clusterprofile.ts";
import { EventKind, EventsV1EventKind } from "./event.ts";
import { ADDON_KINDS } from "./addon.ts";
import { PlacementBindingKind, PolicyKind, PolicySetKind } from "./policy.ts";
import { LeaseKind } from "./lease.ts";
import { ControllerRevisionKind } from "./controllerrevision.ts";
import { BUILTIN_KINDS } from "./builtin/index.ts";
import { FLEET_SYSTEM_KINDS, placementKinds } from "./fleet.ts";
import { KARMADA_KINDS } from "./karmada.ts";
import { KARMADA_OVERRIDE_KINDS } from "./karmada-override.ts";
import { FLEET_OVERRIDE_KINDS } from "./fleet-override.ts";
import { FLEET_UPDATERUN_KINDS } from "./fleet-updaterun.ts";
import { FLEET_EVICTION_KINDS } from "./fleet-eviction.ts";

/**
 * KubeFleet's ClusterResourcePlacement and ResourcePlacement (v1 first, the preferred version, then
 * v1beta1, their storage), validated against the kinds {@link findKindByKind} finds when one is written.
 */
export const FLEET_PLACEMENT_KINDS = placementKinds((group, version, kind) => findKindByKind(group, version, kind));

/**
 * `apiextensions.k8s.io/v1` CustomResourceDefinition (src/kinds/crd.ts); its validation refuses
 * a CRD whose group and plural one of {@link KINDS} already serves.
 */
export const CustomResourceDefinitionKind: KindDefinition = crdKind(() => ({ builtins: KINDS, crds: cache.crds }));

/** All the hub's own kinds (custom resources' kinds are {@link servedKinds}). */
export const KINDS: KindDefinition[] = [
  ManagedClusterKind,
  ManagedClusterSetKind,
  ManagedClusterSetBindingKind,
  PlacementKind,
  PlacementDecisionKind,
  AddOnPlacementScoreKind,
  ManifestWorkKind,
  ManifestWorkReplicaSetKind,
  BootstrapTokenKind,
  WebhookReceiverKind,
  NamespaceKind,
  SecretKind,
  ClusterRoleKind,
  ClusterRoleBindingKind,
  RoleKind,
  RoleBindingKind,
  SelfSubjectAccessReviewKind,
  SelfSubjectRulesReviewKind,
  SubjectAccessReviewKind,
  SelfSubjectReviewKind,
  ClusterViewManagedClusterKind,
  ClusterViewManagedClusterSetKind,
  ServiceAccountKind,
  ClusterProfileKind,
  EventKind,
  EventsV1EventKind,
  ...ADDON_KINDS,
  PolicyKind,
  PlacementBindingKind,
  PolicySetKind,
  LeaseKind,
  ...BUILTIN_KINDS,
  ControllerRevisionKind,
  FLEET_PLACEMENT_KINDS.crpV1,
  FLEET_PLACEMENT_KINDS.crp,
  FLEET_PLACEMENT_KINDS.rpV1,
  FLEET_PLACEMENT_KINDS.rp,
  ...FLEET_SYSTEM_KINDS,
  ...FLEET_OVERRIDE_KINDS,
  ...FLEET_UPDATERUN_KINDS,
  ...FLEET_EVICTION_KINDS,
  CustomResourceDefinitionKind,
  ...KARMADA_KINDS,
  ...KARMADA_OVERRIDE_KINDS,
];

/**
 * Finds a kind by group, version and plural: one of {@link KINDS}, else a custom resource's kind
 * as of the isolate's last `syncCustomKinds`.
 */
export function findKind(group: string, version: string, resource: string): KindDefinition | undefined {
  return (
    KINDS.find((k) => k.group === group && k.version === version && k.plural === resource) ??
    cache.kinds.find((k) => k.group === group && k.version === version && k.plural === resource)
  );
}

/**
 * Finds a served kind by API group, version and kind name (`apps`, `v1`, `Deployment`), as a
 * REST mapper maps a GroupVersionKind (an object's `apiVersion` and `kind`, what a placement's
 * resource selector names): one of {@link KINDS}, else a custom resource's kind as of the
 * isolate's last `syncCustomKinds` (src/kinds/sync.ts).
 */
export function findKindByKind(group: string, version: string, kind: string): KindDefinition | undefined {
  return servedKinds().find((k) => k.group === group && k.version === version && k.kind === kind);
}

/** Every kind served: {@link KINDS}, then the custom kinds of the isolate's last `syncCustomKinds`. */
export function servedKinds(): readonly KindDefinition[] {
  return cache.kinds.length === 0 ? KINDS : [...KINDS, ...cache.kinds];
}

/** The CRD change counter the isolate's custom kinds were built at: a cache of documents derived from {@link servedKinds} (OpenAPI) rebuilds when it moves. */
export function customKindsVersion(): number {
  return cache.counter;
}

/** One CRD's kinds in the cache, by the resourceVersion they were built at. */
interface CacheEntry {
  resourceVersion: string;
  kinds: KindDefinition[];
}

/** The isolate's custom kinds: the CRD change counter's value they were built at, each CRD's kinds by CRD name. */
let cache: { counter: number; byCrd: Map<string, CacheEntry>; kinds: KindDefinition[]; crds: readonly KubeObject[] } = {
  counter: 0,
  byCrd: new Map(),
  kinds: [],
  crds: [],
};

/**
 * Replaces the isolate's custom kinds with those of `crds`, as of CRD change counter `counter`
 * (what src/kinds/sync.ts `syncCustomKinds` read); a call with a counter older than the cache's
 * changes nothing (a request that read an older counter never replaces a newer cache).
 */
export function setCustomKinds(crds: readonly KubeObject[], counter: number): void {
  if (counter < cache.counter) return;
  const byCrd = new Map<string, CacheEntry>();
  for (const crd of crds) {
    const rv = crd.metadata.resourceVersion ?? "";
    const old = cache.byCrd.get(crd.metadata.name);
    byCrd.set(crd.metadata.name, old && old.resourceVersion === rv ? old : { resourceVersion: rv, kinds: customKindsOf(crd) });
  }
  cache = { counter, byCrd, kinds: [...byCrd.values()].flatMap((e) => e.kinds), crds };
}

/** The groups served (custom resources' groups included), each with its versions, in a stable order. */
export function servedGroups(): { group: string; versions: string[] }[] {
  const out: { group: string; versions: string[] }[] = [];
  for (const k of servedKinds()) {
    let g = out.find((x) => x.group === k.group);
    if (!g) out.push((g = { group: k.group, versions: [] }));
    if (!g.versions.includes(k.version)) g.versions.push(k.version);
  }
  return out;
}
