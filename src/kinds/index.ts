/**
 * Every kind the hub serves. Adding a kind is one file in this folder plus one line here.
 */
import type { KindDefinition } from "../k8s/kind.ts";
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
import { BUILTIN_KINDS } from "./builtin/index.ts";
import { FLEET_SYSTEM_KINDS, placementKinds } from "./fleet.ts";

/**
 * KubeFleet's ClusterResourcePlacement and ResourcePlacement (v1 first, the preferred version, then
 * v1beta1, their storage), validated against the kinds {@link findKindByKind} finds when one is written.
 */
export const FLEET_PLACEMENT_KINDS = placementKinds((group, version, kind) => findKindByKind(group, version, kind));

/** All served kinds. */
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
  FLEET_PLACEMENT_KINDS.crpV1,
  FLEET_PLACEMENT_KINDS.crp,
  FLEET_PLACEMENT_KINDS.rpV1,
  FLEET_PLACEMENT_KINDS.rp,
  ...FLEET_SYSTEM_KINDS,
];

/** Finds a kind by group, version and plural (or short name / singular, as kubectl may use). */
export function findKind(group: string, version: string, resource: string): KindDefinition | undefined {
  return KINDS.find((k) => k.group === group && k.version === version && k.plural === resource);
}

/**
 * Finds a served kind by API group, version and kind name (`apps`, `v1`, `Deployment`), as a
 * REST mapper maps a GroupVersionKind: what a placement's resource selector names.
 */
export function findKindByKind(group: string, version: string, kind: string): KindDefinition | undefined {
  return KINDS.find((k) => k.group === group && k.version === version && k.kind === kind);
}

/** The groups served, each with its versions, in a stable order. */
export function servedGroups(): { group: string; versions: string[] }[] {
  const out: { group: string; versions: string[] }[] = [];
  for (const k of KINDS) {
    let g = out.find((x) => x.group === k.group);
    if (!g) out.push((g = { group: k.group, versions: [] }));
    if (!g.versions.includes(k.version)) g.versions.push(k.version);
  }
  return out;
}
