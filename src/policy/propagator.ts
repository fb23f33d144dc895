/**
 * The policy propagator, after OCM's governance-policy-propagator (`controllers/propagator`,
 * `controllers/common/common_status_update.go`, `controllers/policyset`):
 *
 * - a root Policy bound by a PlacementBinding (its `placementRef` a Placement of the same
 *   namespace, its `subjects` the Policy itself or a PolicySet holding it) is copied into the
 *   namespace of each cluster the Placement decides, named `<rootns>.<rootname>`, with the root's
 *   labels and annotations (only the `policy.open-cluster-management.io/` ones when
 *   `copyPolicyMetadata` is false), OCM's labels {@link ROOT_POLICY_LABEL},
 *   {@link CLUSTER_NAME_LABEL}, {@link CLUSTER_NAMESPACE_LABEL} and the Argo CD annotation, and the
 *   root's spec (its `remediationAction` set to `enforce` where a binding deciding the cluster
 *   says so in `bindingOverrides`, unless the root enforces already). A binding with `subFilter:
 *   restricted` places nothing: it only overrides on clusters other bindings place the policy on;
 * - the copy is removed when its cluster leaves the decisions, the binding (or the PolicySet, or
 *   the policy's place in it) goes, or the root is deleted or `disabled`; spec changes propagate;
 * - the root's status: `placement[]` (one item per binding that places it, directly or through a
 *   PolicySet, sorted as OCM sorts them), `status[]` (one item per decided cluster, sorted by
 *   name, with its replica's `status.compliant`) and `compliant` (OCM's `CalculateRootCompliance`:
 *   NonCompliant over Pending over unknown over Compliant, absent without clusters). A replica's
 *   compliance change (written by the cluster's agent) updates its cluster's item alone
 *   ({@link recordReplicaCompliance}): no run reads every replica for it;
 * - a PolicySet's status aggregates its policies as OCM's policy set controller does
 *   ({@link policySetStatus}).
 *
 * Every write goes through the store (src/store/store.ts), so watches and the agents' delivery
 * see them like any other. Runs are idempotent and read the current state; a lost write race is
 * run again, and a run that still fails throws, so that its outbox row is kept and swept later.
 */
import { CommitGroups } from "../store/group-commit.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import {
  ARGOCD_COMPARE_OPTIONS_ANNOTATION,
  CLUSTER_NAME_LABEL,
  CLUSTER_NAMESPACE_LABEL,
  fullPolicyName,
  PlacementBindingKind,
  POLICY_GROUP,
  PolicyKind,
  PolicySetKind,
  ROOT_POLICY_LABEL,
  type ComplianceState,
} from "../kinds/policy.ts";
import { PLACEMENT_LABEL } from "../scheduling/index.ts";
import type { Env } from "../env.ts";
import { storageKey } from "../store/storage.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { canonicalJson as canonical } from "../k8s/canonical-json.ts";
import { racing } from "../k8s/racing.ts";
import type { ManyWrite } from "../store/store.ts";
import { sharedRead, type HookTarget } from "../store/hooks.ts";

/** How many times a run is repeated after a lost write race before it gives up (and throws). */
const MAX_ATTEMPTS = 8;

/** A PlacementBinding's fields, as stored. */
interface Binding {
  metadata: { name: string };
  placementRef?: { apiGroup?: string; kind?: string; name?: string };
  subjects?: { apiGroup?: string; kind?: string; name?: string }[];
  bindingOverrides?: { remediationAction?: string };
  subFilter?: string;
}

/** A root policy's `status.placement[]` item. */
export interface PolicyPlacement {
  placementBinding: string;
  placement?: string;
  policySet?: string;
}

/** A root policy's `status.status[]` item. */
export interface ClusterCompliance {
  clustername: string;
  clusternamespace: string;
  compliant?: ComplianceState;
}

/** What the bindings of a namespace decide for one root policy. */
export interface PolicyDecisions {
  /** The clusters the policy is placed on, sorted, each with whether a binding overrides its remediation to enforce. */
  clusters: Map<string, { enforce: boolean }>;
  /** The root's `status.placement`, sorted as OCM sorts it. */
  placements: PolicyPlacement[];
}

const asBinding = (o: KubeObject) => o as unknown as Binding;
const setPolicies = (set: KubeObject | undefined): string[] => (set?.spec as { policies?: string[] } | undefined)?.policies ?? [];
const isEnforce = (v: string | undefined) => (v ?? "").toLowerCase() === "enforce";

/** The clusters a Placement decides, from its PlacementDecisions (`decisions` are the namespace's). */
function decidedBy(decisions: KubeObject[], placement: string): string[] {
  const out: string[] = [];
  for (const d of decisions) {
    if (d.metadata.labels?.[PLACEMENT_LABEL] !== placement) continue;
    for (const x of (d.status as { decisions?: { clusterName: string }[] } | undefined)?.decisions ?? []) out.push(x.clusterName);
  }
  return out;
}

/** True when a binding's `placementRef` is one this hub follows (OCM's `HasValidPlacementRef`, PlacementRule not served). */
function followsPlacement(b: Binding): boolean {
  return b.placementRef?.apiGroup === "cluster.open-cluster-management.io" && b.placementRef.kind === "Placement" && !!b.placementRef.name;
}

/**
 * What a namespace's bindings decide for the root policy `policy`, after OCM's
 * `GetClusterDecisions` and `singleClusterDecision`: bindings without `subFilter` place the policy
 * on their Placement's clusters (none while the policy is disabled); `restricted` ones place
 * nothing but are listed in `placements` when they share a cluster with the others; a binding
 * whose `bindingOverrides.remediationAction` is enforce makes that cluster's replica enforce.
 * Pure: the namespace's bindings, PolicySets, Placements (names) and PlacementDecisions are given.
 */
export function decide(policy: KubeObject, bindings: KubeObject[], sets: KubeObject[], placements: Set<string>, decisions: KubeObject[]): PolicyDecisions {
  const name = policy.metadata.name;
  const disabled = (policy.spec as { disabled?: boolean } | undefined)?.disabled === true;
  const clusters = new Map<string, { enforce: boolean }>();
  const listed: PolicyPlacement[] = [];
  const restricted: { items: PolicyPlacement[]; clusters: string[]; enforce: boolean }[] = [];
  for (const o of bindings) {
    const b = asBinding(o);
    const items: PolicyPlacement[] = [];
    const seenSets = new Set<string>();
    let direct = false;
    for (const s of b.subjects ?? []) {
      if (s.apiGroup !== POLICY_GROUP || !s.name) continue;
      if (s.kind === "Policy" && s.name === name && !direct) {
        direct = true;
        items.push({ placementBinding: b.metadata.name });
      } else if (s.kind === "PolicySet" && !seenSets.has(s.name)) {
        seenSets.add(s.name);
        if (setPolicies(sets.find((x) => x.metadata.name === s.name)).includes(name)) items.push({ placementBinding: b.metadata.name, policySet: s.name });
      }
    }
    if (items.length === 0 || !followsPlacement(b)) continue;
    const placement = b.placementRef!.name!;
    if (placements.has(placement)) for (const i of items) i.placement = placement;
    const decided = disabled ? [] : decidedBy(decisions, placement);
    const enforce = isEnforce(b.bindingOverrides?.remediationAction);
    if (b.subFilter === "restricted") {
      restricted.push({ items, clusters: decided, enforce });
      continue;
    }
    listed.push(...items);
    for (const c of decided) {
      const held = clusters.get(c);
      clusters.set(c, { enforce: (held?.enforce ?? false) || enforce });
    }
  }
  for (const r of restricted) {
    if (!r.clusters.some((c) => clusters.has(c))) continue;
    listed.push(...r.items);
    if (r.enforce) for (const c of r.clusters) if (clusters.has(c)) clusters.set(c, { enforce: true });
  }
  const key = (p: PolicyPlacement) => `${p.placementBinding} ${p.placement ?? ""}  ${p.policySet ?? ""}`;
  listed.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const sorted = new Map([...clusters].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { clusters: sorted, placements: listed };
}

/**
 * The replica of `root` for `cluster` (OCM's `buildReplicatedPolicy`), as the body of a create or
 * update; `current` is the replica as stored (its status and server fields are kept).
 */
export function replicaOf(root: KubeObject, cluster: string, enforce: boolean, current: KubeObject | undefined): KubeObject {
  const spec = structuredClone(root.spec ?? {}) as { copyPolicyMetadata?: boolean; remediationAction?: string };
  const ours = (k: string) => spec.copyPolicyMetadata !== false || k.startsWith(`${POLICY_GROUP}/`);
  const labels = Object.fromEntries(Object.entries(root.metadata.labels ?? {}).filter(([k]) => ours(k)));
  const annotations = Object.fromEntries(Object.entries(root.metadata.annotations ?? {}).filter(([k]) => ours(k)));
  const replicaName = fullPolicyName(root.metadata.namespace!, root.metadata.name);
  labels[CLUSTER_NAME_LABEL] = cluster;
  labels[CLUSTER_NAMESPACE_LABEL] = cluster;
  labels[ROOT_POLICY_LABEL] = replicaName;
  annotations[ARGOCD_COMPARE_OPTIONS_ANNOTATION] = "IgnoreExtraneous";
  if (enforce && !isEnforce(spec.remediationAction)) spec.remediationAction = "enforce";
  const metadata = current ? { ...current.metadata, labels, annotations } : { name: replicaName, namespace: cluster, labels, annotations };
  return { apiVersion: `${POLICY_GROUP}/v1`, kind: "Policy", metadata, spec, ...(current?.status ? { status: current.status } : {}) } as KubeObject;
}

/** Whether a stored replica already says what `want` says (labels, annotations, spec: OCM's `equivalentReplicatedPolicies`). */
function equivalent(stored: KubeObject, want: KubeObject): boolean {
  return (
    canonical(stored.metadata.labels ?? {}) === canonical(want.metadata.labels ?? {}) &&
    canonical(stored.metadata.annotations ?? {}) === canonical(want.metadata.annotations ?? {}) &&
    canonical(stored.spec ?? {}) === canonical(want.spec ?? {})
  );
}

/**
 * OCM's `CalculateRootCompliance`: NonCompliant when any cluster is, else Pending when any is,
 * else undefined when any has not reported, else Compliant; undefined without clusters.
 */
export function rootCompliance(entries: ClusterCompliance[]): ComplianceState | undefined {
  if (entries.length === 0) return undefined;
  let pending = false;
  let unknown = false;
  for (const e of entries) {
    if (e.compliant === "NonCompliant") return "NonCompliant";
    if (e.compliant === "Pending") pending = true;
    else if (e.compliant !== "Compliant") unknown = true;
  }
  if (pending) return "Pending";
  return unknown ? undefined : "Compliant";
}

/** A root's status with `status.status` and `compliant` set from `entries`, other fields kept. */
function withCompliance(status: Record<string, unknown>, entries: ClusterCompliance[], placements: PolicyPlacement[] | undefined): Record<string, unknown> {
  const next: Record<string, unknown> = { ...status };
  if (placements !== undefined) {
    if (placements.length > 0) next.placement = placements;
    else delete next.placement;
  }
  if (entries.length > 0) next.status = entries;
  else delete next.status;
  const compliant = rootCompliance(entries);
  if (compliant) next.compliant = compliant;
  else delete next.compliant;
  return next;
}

/** True for a Policy that is a replica (labelled with its root), which is never propagated itself. */
const isReplica = (p: KubeObject) => p.metadata.labels?.[ROOT_POLICY_LABEL] !== undefined;

/** The namespace's objects a run reads once for all the root policies it reconciles (bindings, sets, Placement names, decisions). */
interface NamespaceState {
  bindings: KubeObject[];
  sets: KubeObject[];
  placements: Set<string>;
  decisions: KubeObject[];
}

/** Reads a namespace's {@link NamespaceState}. */
async function readNamespace(env: Env, namespace: string): Promise<NamespaceState> {
  const [bindings, sets, placements, decisions] = await Promise.all([
    admittedStoreOf(env, PlacementBindingKind).list(namespace),
    admittedStoreOf(env, PolicySetKind).list(namespace),
    admittedStoreOf(env, PlacementKind).list(namespace),
    admittedStoreOf(env, PlacementDecisionKind).list(namespace),
  ]);
  return { bindings: bindings.items, sets: sets.items, placements: new Set(placements.items.map((p) => p.metadata.name)), decisions: decisions.items };
}

/**
 * Reconciles one root policy once: its replicas and its status. Returns false when a write lost
 * a race (the caller runs it again).
 */
async function reconcileOnce(
  env: Env,
  namespace: string,
  name: string,
  state: NamespaceState,
  root: KubeObject | null,
  replicas: KubeObject[],
): Promise<boolean> {
  if (root && isReplica(root)) return true;
  // Nothing placed and nothing to remove: nothing to read or write (most names of a long PolicySet).
  if (!root && replicas.length === 0) return true;
  const replicaName = fullPolicyName(namespace, name);
  const live = root && !root.metadata.deletionTimestamp ? root : null;
  const decided = live
    ? decide(live, state.bindings, state.sets, state.placements, state.decisions)
    : { clusters: new Map<string, { enforce: boolean }>(), placements: [] };
  const byCluster = new Map(replicas.map((r) => [r.metadata.namespace!, r]));
  let raced = false;
  // The replicas to create or update are written together, in D1 batches (writeStoredMany), then
  // those of clusters no longer decided are deleted together (only the replica read: uid precondition).
  const writes: ManyWrite[] = [];
  const compliance = new Map<string, ComplianceState | undefined>();
  for (const [cluster, { enforce }] of decided.clusters) {
    const current = byCluster.get(cluster);
    compliance.set(cluster, (current?.status as { compliant?: ComplianceState } | undefined)?.compliant);
    const want = replicaOf(live!, cluster, enforce, current);
    if (!current) writes.push({ namespace: cluster, name: replicaName, req: { verb: "create", body: want }, known: null });
    else if (!equivalent(current, want)) writes.push({ namespace: cluster, name: replicaName, req: { verb: "update", body: want }, known: current });
  }
  const written = await admittedStoreOf(env, PolicyKind).writeMany(writes);
  written.forEach((r, i) => {
    if (r === "lost" || !r) raced = true;
    else compliance.set(writes[i]!.namespace, (r.status as { compliant?: ComplianceState } | undefined)?.compliant);
  });
  const leaving = [...byCluster].filter(([cluster, r]) => !decided.clusters.has(cluster) && !r.metadata.deletionTimestamp);
  const deleted = await admittedStoreOf(env, PolicyKind).writeMany(
    leaving.map(([cluster, r]) => ({ namespace: cluster, name: replicaName, req: { verb: "delete", preconditions: { uid: r.metadata.uid } }, known: r })),
  );
  for (const [i, r] of deleted.entries()) {
    if (r === "lost" && (await admittedStoreOf(env, PolicyKind).get(leaving[i]![0], replicaName))) raced = true;
  }
  const entries: ClusterCompliance[] = [...compliance].map(([cluster, compliant]) => ({
    clustername: cluster,
    clusternamespace: cluster,
    ...(compliant ? { compliant } : {}),
  }));
  if (live) {
    const status = withCompliance((live.status ?? {}) as Record<string, unknown>, entries, decided.placements);
    if (canonical(status) !== canonical(live.status ?? {})) {
      const r = await racing(() =>
        admittedStoreOf(env, PolicyKind).write(namespace, name, { verb: "update", subresource: "status", body: { ...live, status } }, { known: live }),
      );
      if (r === "lost") raced = true;
    }
  }
  return !raced;
}

/**
 * Reconciles the root policies `names` of `namespace` (replicas and status, see the module's
 * docstring), then the status of the namespace's PolicySets that hold any of them or are named in
 * `sets`. A name that is not a root policy (absent: its leftover replicas are deleted; a replica)
 * is handled as such.
 * @throws when a run still loses write races after {@link MAX_ATTEMPTS}, or on a D1 or store failure
 */
export async function reconcilePolicies(env: Env, namespace: string, names: Iterable<string>, sets: Iterable<string> = []): Promise<void> {
  const all = new Set(names);
  const pending = new Set(all);
  for (let attempt = 0; pending.size > 0; attempt++) {
    if (attempt >= MAX_ATTEMPTS) throw new Error(`policy propagation in ${namespace}: ${[...pending].join(", ")} still racing after ${MAX_ATTEMPTS} attempts`);
    // Read once for all the names (a PolicySet may list thousands): the namespace's objects, the
    // roots and the replicas, so that a run's reads do not grow one by one with its names.
    const [state, roots, replicas] = await Promise.all([
      readNamespace(env, namespace),
      readRoots(env, namespace, pending),
      readReplicas(env, namespace, pending),
    ]);
    for (const name of [...pending])
      if (await reconcileOnce(env, namespace, name, state, roots.get(name) ?? null, replicas.get(name) ?? [])) pending.delete(name);
  }
  await refreshPolicySets(env, namespace, all, new Set(sets));
}

/** Up to this many names, roots are read one by one (by key); beyond, the namespace's Policies are listed once. */
const ROOTS_BY_KEY = 4;
/** Label values one replica read binds (D1 binds at most 100 parameters to a statement). */
const REPLICA_NAMES_PER_READ = 90;

/** The Policies of `namespace` named in `names` (roots or not), by name: read by key for a few, one list for more. */
async function readRoots(env: Env, namespace: string, names: Set<string>): Promise<Map<string, KubeObject>> {
  const found =
    names.size <= ROOTS_BY_KEY
      ? (await Promise.all([...names].map((name) => admittedStoreOf(env, PolicyKind).get(namespace, name)))).filter((p): p is KubeObject => !!p)
      : (await admittedStoreOf(env, PolicyKind).list(namespace)).items.filter((p) => names.has(p.metadata.name));
  return new Map(found.map((p) => [p.metadata.name, p]));
}

/**
 * The replicas of the roots `names` of `namespace`, by root name: read through the label index on
 * {@link ROOT_POLICY_LABEL} (`<ns>.<name>`), up to {@link REPLICA_NAMES_PER_READ} roots a query, so
 * that a read costs the replicas it finds, not a scan of every Policy.
 */
async function readReplicas(env: Env, namespace: string, names: Set<string>): Promise<Map<string, KubeObject[]>> {
  const keys = [...names].map((n) => fullPolicyName(namespace, n));
  const reads: Promise<KubeObject[]>[] = [];
  for (let i = 0; i < keys.length; i += REPLICA_NAMES_PER_READ) {
    const values = keys.slice(i, i + REPLICA_NAMES_PER_READ);
    reads.push(
      admittedStoreOf(env, PolicyKind)
        .listPage(undefined, { index: { key: ROOT_POLICY_LABEL, values } })
        .then((p) => p.items),
    );
  }
  const out = new Map<string, KubeObject[]>();
  const prefix = `${namespace}.`;
  for (const items of await Promise.all(reads))
    for (const r of items) {
      const label = r.metadata.labels?.[ROOT_POLICY_LABEL];
      if (!label?.startsWith(prefix) || r.metadata.name !== label) continue;
      const root = label.slice(prefix.length);
      out.set(root, [...(out.get(root) ?? []), r]);
    }
  return out;
}

/**
 * The root policies of `namespace` that the bindings on `placement` place (directly or through a
 * PolicySet), reconciled (a change of the placement's decisions, or of the Placement itself).
 * `target`: the hook run it serves, whose group shares the bindings list.
 */
export async function reconcilePlacement(env: Env, namespace: string, placement: string, target?: HookTarget): Promise<void> {
  // Most placements bind no policy: one read of the namespace's bindings (shared with the other
  // hook runs of `target`'s group, src/store/hooks.ts `sharedRead`) says so.
  const { items } = await sharedRead(target, `placementbindings/${namespace}`, () => admittedStoreOf(env, PlacementBindingKind).list(namespace));
  const bindings = items.filter((o) => asBinding(o).placementRef?.name === placement);
  if (bindings.length === 0) return;
  const policySets = bindings.some((o) => (asBinding(o).subjects ?? []).some((s) => s.kind === "PolicySet"))
    ? (await admittedStoreOf(env, PolicySetKind).list(namespace)).items
    : [];
  const names = new Set<string>();
  const sets = new Set<string>();
  for (const o of bindings) {
    for (const s of asBinding(o).subjects ?? []) {
      if (s.apiGroup !== POLICY_GROUP || !s.name) continue;
      if (s.kind === "Policy") names.add(s.name);
      if (s.kind === "PolicySet") {
        sets.add(s.name);
        for (const p of setPolicies(policySets.find((x) => x.metadata.name === s.name))) names.add(p);
      }
    }
  }
  if (names.size > 0 || sets.size > 0) await reconcilePolicies(env, namespace, names, sets);
}

/**
 * Reconciles the policies a binding's subjects name: its Policies, and the policies of its
 * PolicySets (read now; unless `expandSets` is false, for a set whose own change owes only the
 * policies that joined or left it), with those sets' status.
 */
export async function reconcileSubjects(env: Env, namespace: string, policies: string[], sets: string[], expandSets = true): Promise<void> {
  const names = new Set(policies);
  if (sets.length > 0 && expandSets) {
    const { items } = await admittedStoreOf(env, PolicySetKind).list(namespace);
    for (const s of items) if (sets.includes(s.metadata.name)) for (const p of setPolicies(s)) names.add(p);
  }
  await reconcilePolicies(env, namespace, names, sets);
}

/** One replica's compliance, on its way to its root's status. */
interface ComplianceReport {
  namespace: string;
  name: string;
  cluster: string;
  compliant: ComplianceState | undefined;
}

/** Most reports one group carries. */
const COMPLIANCE_GROUP_MAX = 500;

/** The report groups of each D1 binding (one per isolate), made on first use. */
const complianceGroups = new WeakMap<object, CommitGroups<ComplianceReport, void>>();

/**
 * Writes a group of reports: per root, one read and (when anything changed) one status write
 * holding every report of the group for it, run again on a lost race; then the PolicySets of the
 * roots written, once per namespace.
 * @throws when a root's status write still loses races after {@link MAX_ATTEMPTS} (the group's
 *   reports are then sent again one by one: recording a compliance twice is harmless)
 */
async function applyCompliance(env: Env, reports: ComplianceReport[]): Promise<void[]> {
  const byRoot = new Map<string, ComplianceReport[]>();
  for (const r of reports) {
    const key = `${r.namespace}/${r.name}`;
    const xs = byRoot.get(key);
    if (xs) xs.push(r);
    else byRoot.set(key, [r]);
  }
  const written = new Map<string, Set<string>>();
  await Promise.all(
    [...byRoot.values()].map(async (rs) => {
      const { namespace, name } = rs[0]!;
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const root = await admittedStoreOf(env, PolicyKind).get(namespace, name);
        if (!root || isReplica(root) || root.metadata.deletionTimestamp) return;
        const entries = structuredClone((root.status as { status?: ClusterCompliance[] } | undefined)?.status ?? []);
        let changed = false;
        // In order: a later report of a cluster wins.
        for (const r of rs) {
          const entry = entries.find((e) => e.clustername === r.cluster);
          if (!entry || entry.compliant === r.compliant) continue;
          if (r.compliant) entry.compliant = r.compliant;
          else delete entry.compliant;
          changed = true;
        }
        if (!changed) return;
        const status = withCompliance((root.status ?? {}) as Record<string, unknown>, entries, undefined);
        const w = await racing(() =>
          admittedStoreOf(env, PolicyKind).write(namespace, name, { verb: "update", subresource: "status", body: { ...root, status } }, { known: root }),
        );
        if (w === "lost") continue;
        if (!written.has(namespace)) written.set(namespace, new Set());
        written.get(namespace)!.add(name);
        return;
      }
      throw new Error(`policy ${namespace}/${name}: compliance reports still racing after ${MAX_ATTEMPTS} attempts`);
    }),
  );
  await Promise.all([...written].map(([namespace, names]) => refreshPolicySets(env, namespace, names, new Set())));
  return reports.map(() => undefined);
}

/**
 * Records a replica's compliance in its root's `status.status` item for `cluster` (and the
 * root's `compliant`), then refreshes the PolicySets holding the root: a report costs one read
 * and one write of its root, whatever the size of the fleet, and reports that arrive while one is
 * being written go together (group commit, src/store/group-commit.ts: a fleet turning compliant at
 * once costs a few writes of the root, not one each, nor a race between them). `replica` is the
 * replica as stored (undefined: read it; null: gone). A cluster the root does not list (not
 * decided, or before the root's first run) is left to the root's run.
 * @throws when the root's status write still loses races after {@link MAX_ATTEMPTS}
 */
export async function recordReplicaCompliance(env: Env, rootKey: string, cluster: string, replica: KubeObject | null | undefined): Promise<void> {
  const dot = rootKey.indexOf(".");
  if (dot <= 0 || dot === rootKey.length - 1) return;
  const current = replica === undefined ? await admittedStoreOf(env, PolicyKind).get(cluster, rootKey) : replica;
  const compliant = (current?.status as { compliant?: ComplianceState } | undefined)?.compliant;
  let groups = complianceGroups.get(storageKey(env));
  if (!groups) {
    groups = new CommitGroups((items: ComplianceReport[]) => applyCompliance(env, items), COMPLIANCE_GROUP_MAX);
    complianceGroups.set(storageKey(env), groups);
  }
  await groups.run({ namespace: rootKey.slice(0, dot), name: rootKey.slice(dot + 1), cluster, compliant });
}

/** OCM's policy set status message (`getStatusMessage`), without exclusions (refused). */
function statusMessage(disabled: string[], unknown: string[], deleted: string[], pending: string[]): string {
  const parts: string[] = [];
  if (pending.length > 0) parts.push(`Policies awaiting pending dependencies: ${pending.join(", ")}`);
  if (disabled.length > 0) parts.push(`Disabled policies: ${disabled.join(", ")}`);
  if (unknown.length > 0) parts.push(`No status provided while awaiting policy status: ${unknown.join(", ")}`);
  if (deleted.length > 0) parts.push(`Deleted policies: ${deleted.join(", ")}`);
  return parts.length === 0 ? "All policies are reporting status" : parts.join("; ");
}

/**
 * A PolicySet's status from its policies (OCM's policy set controller `processPolicySet`):
 * `placement` gathers the bindings that place the set (from its policies' `status.placement`
 * items naming it), sorted by binding; each enabled policy's compliance is its `status.status`
 * items for the clusters the set's bindings decide: NonCompliant over Pending over Compliant;
 * `compliant` is shown once every enabled policy reported one; `statusMessage` names policies
 * disabled, without status, or missing. Empty when the set holds no policy.
 * Pure: `policies` are the namespace's root policies by name.
 */
export function policySetStatus(set: KubeObject, policies: Map<string, KubeObject>, bindings: KubeObject[], decisions: KubeObject[]): Record<string, unknown> {
  const names = setPolicies(set);
  if (names.length === 0) return {};
  const setName = set.metadata.name;
  const clusters = new Set<string>();
  for (const o of bindings) {
    const b = asBinding(o);
    if (b.subFilter === "restricted" || !followsPlacement(b)) continue;
    if (!(b.subjects ?? []).some((s) => s.apiGroup === POLICY_GROUP && s.kind === "PolicySet" && s.name === setName)) continue;
    for (const c of decidedBy(decisions, b.placementRef!.name!)) clusters.add(c);
  }
  const placements = new Map<string, { placementBinding: string; placement?: string }>();
  const deleted: string[] = [];
  const disabled: string[] = [];
  const unknown: string[] = [];
  const pending: string[] = [];
  let found = 0;
  let aggregate: ComplianceState = "Compliant";
  for (const name of names) {
    const p = policies.get(name);
    if (!p) {
      deleted.push(name);
      continue;
    }
    const status = (p.status ?? {}) as { placement?: PolicyPlacement[]; status?: ClusterCompliance[] };
    for (const pl of status.placement ?? [])
      if (pl.policySet === setName)
        placements.set(pl.placementBinding, { placementBinding: pl.placementBinding, ...(pl.placement ? { placement: pl.placement } : {}) });
    if ((p.spec as { disabled?: boolean } | undefined)?.disabled) {
      disabled.push(name);
      continue;
    }
    let state: ComplianceState | undefined;
    for (const e of status.status ?? []) {
      if (!clusters.has(e.clustername)) continue;
      if (e.compliant === "NonCompliant") state = "NonCompliant";
      else if (e.compliant === "Pending" && state !== "NonCompliant") state = "Pending";
      else if (e.compliant === "Compliant" && state === undefined) state = "Compliant";
    }
    if (state === undefined) unknown.push(name);
    else if (state === "Pending") {
      pending.push(name);
      if (aggregate !== "NonCompliant") aggregate = "Pending";
    } else {
      found++;
      if (state === "NonCompliant") aggregate = "NonCompliant";
    }
  }
  const out: Record<string, unknown> = {};
  const placement = [...placements.values()].sort((a, b) => (a.placementBinding < b.placementBinding ? -1 : a.placementBinding > b.placementBinding ? 1 : 0));
  if (placement.length > 0) out.placement = placement;
  if (unknown.length === 0 && found + pending.length > 0) out.compliant = aggregate;
  out.statusMessage = statusMessage(disabled, unknown, deleted, pending);
  return out;
}

/**
 * Writes the status of the PolicySets of `namespace` that hold one of `policies` or are named in
 * `sets` (a set whose status is unchanged is not written).
 * @throws when a set's status write still loses races after {@link MAX_ATTEMPTS}
 */
export async function refreshPolicySets(env: Env, namespace: string, policies: Set<string>, sets: Set<string>): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const all = (await admittedStoreOf(env, PolicySetKind).list(namespace)).items;
    const concerned = all.filter((s) => sets.has(s.metadata.name) || setPolicies(s).some((p) => policies.has(p)));
    if (concerned.length === 0) return;
    const [roots, bindings, decisions] = await Promise.all([
      admittedStoreOf(env, PolicyKind).list(namespace),
      admittedStoreOf(env, PlacementBindingKind).list(namespace),
      admittedStoreOf(env, PlacementDecisionKind).list(namespace),
    ]);
    const byName = new Map(roots.items.filter((p) => !isReplica(p)).map((p) => [p.metadata.name, p]));
    let raced = false;
    for (const set of concerned) {
      const status = policySetStatus(set, byName, bindings.items, decisions.items);
      if (canonical(status) === canonical(set.status ?? {})) continue;
      const r = await racing(() =>
        admittedStoreOf(env, PolicySetKind).write(
          namespace,
          set.metadata.name,
          { verb: "update", subresource: "status", body: { ...set, status } },
          { known: set },
        ),
      );
      if (r === "lost") raced = true;
    }
    if (!raced) return;
  }
  throw new Error(`policy sets in ${namespace}: status still racing after ${MAX_ATTEMPTS} attempts`);
}
