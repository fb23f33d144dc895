/**
 * The placement controller of KubeFleet's ClusterResourcePlacement and ResourcePlacement
 * (docs/kubefleet.md), one run per placement, serialised in its Durable Object (the replica set
 * object class, named `placement:<namespace>/<name>`: durable-objects/replicaset.ts). A run reads
 * the placement, selects its resources (src/fleet/select.ts), keeps its resource and policy
 * snapshots (a new index when the selection's hash or the policy changed; at most
 * `revisionHistoryLimit` of each), schedules it onto the ManagedClusters (src/fleet/schedule.ts,
 * only when the policy, the selection's first run or the clusters' membership calls for it),
 * writes one binding per picked cluster, rolls the rendered works (src/fleet/render.ts; each
 * cluster's objects through its overrides, src/fleet/overrides.ts and docs/overrides.md) out over
 * the clusters by KubeFleet's rolling update (src/fleet/rollout.ts), and writes the placement's
 * status from the works' status the agents report (src/fleet/status.ts), recording KubeFleet's
 * events when a condition turns True. Deleting the placement deletes its works and bindings
 * (its snapshots go with it: their ownerReferences) before its finalizer goes.
 *
 * What wakes a placement ({@link placementHook}): its own write (created, spec changed, deletion
 * started: run before the write returns); a change of an object its selectors may select (the
 * placements are listed and matched against the object, never the fleet's objects); a
 * ManagedCluster change that may add it a cluster or take one away (matched against each
 * placement's spec and current clusters, from that one cluster alone), or relabels one it has
 * (overrides read labels); a new override snapshot (src/overrides/snapshots.ts); a status report or deletion
 * of one of its works. All but its own write are notifications: runs shortly after, coalesced.
 */
import { canonicalJson as canonical, goJson } from "../k8s/canonical-json.ts";
import { racing } from "../k8s/racing.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { matchesLabelSelector, type LabelSelectorInput } from "../k8s/labels.ts";
import { setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { FLEET_PLACEMENT_KINDS, findKindByKind, servedKinds } from "../kinds/index.ts";
import { syncCustomKinds } from "../kinds/sync.ts";
import {
  ClusterResourceBindingKind,
  ClusterResourceSnapshotKind,
  ClusterSchedulingPolicySnapshotKind,
  ClusterResourceEnvelopeKind,
  CRP_CLEANUP_FINALIZER,
  FLEET_GROUP,
  IS_LATEST_SNAPSHOT_LABEL,
  NUMBER_OF_CLUSTERS_ANNOTATION,
  NUMBER_OF_ENVELOPED_OBJECTS_ANNOTATION,
  NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION,
  PARENT_BINDING_LABEL,
  PARENT_NAMESPACE_LABEL,
  PARENT_SNAPSHOT_INDEX_LABEL,
  PARENT_SNAPSHOT_NAME_ANNOTATION,
  PLACEMENT_CHANGE_COUNTER,
  PLACEMENT_TRACKING_LABEL,
  POLICY_INDEX_LABEL,
  RESOURCE_HASH_ANNOTATION,
  RESOURCE_INDEX_LABEL,
  ResourceBindingKind,
  ResourceEnvelopeKind,
  ResourceSnapshotKind,
  RP_CLEANUP_FINALIZER,
  SchedulingPolicySnapshotKind,
  CRP_GENERATION_ANNOTATION,
  SUBINDEX_ANNOTATION,
} from "../kinds/fleet.ts";
import type { PlacementPolicy, PlacementSpec, ResourceSelectorTerm } from "../kinds/fleet-validation.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { NamespaceKind } from "../kinds/namespace.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import { heldFromBirth } from "../work/deletion.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import type { AfterCommitHook, Change, CounterAt, HookTarget } from "../store/hooks.ts";
import { CommitGroups } from "../store/group-commit.ts";
import { withoutSpec, type PlacementWorksCache, type PlacementWorkChange } from "./works-cache.ts";
import type { ManyOutcome, ManyWrite, Store } from "../store/types.ts";
import { recordEvents } from "../events/record.ts";
import { identifierOf, isKindDisabled, selectResources, SelectionError, stripForDispatch, type Selected, type SelectionSource } from "./select.ts";
import { memberClusterOf, schedulePlacement, termMatches, untoleratedTaint, type ClusterDecision, type MemberCluster } from "./schedule.ts";
import { guessPlural, workName, type Manifest, type RenderedWork } from "./render.ts";
import { APPLIED_OVERRIDE_ANNOTATIONS, carriesRender, clusterRenderer, knowSpecJson, storedSpecJson, type ClusterRender } from "./overrides.ts";
import { freezeRendered, freezeTree } from "../k8s/frozen-json.ts";
import { placementOverrides } from "./override-snapshots.ts";
import { rolloutStep, type RolloutCluster } from "./rollout.ts";
import { perClusterStatus, placementConditions, type PerClusterStatus } from "./status.ts";
import { CLEANUP_FINALIZER_REMOVED, placementEvents, placementEventSpecs } from "./events.ts";
import type { WorkCondition } from "../work/rollout.ts";
import { ownChangeRun } from "./own-change.ts";
import { cachedPlacementLists, inNamespace, placementLists } from "./placement-lists.ts";
import { boundIndexes, externalStep, isExternal, resourceSnapshotName, snapshotSelection } from "./updaterun/gate.ts";
import { wakeUpdateRuns } from "./updaterun/wake.ts";
import {
  ClusterResourcePlacementEvictionKind,
  EVICTION_BLOCKED_ANNOTATION,
  EVICTION_EXECUTED,
  TARGET_CLUSTER_LABEL,
  type PlacementEvictionSpec,
} from "../kinds/fleet-eviction.ts";
import { evictionBlockedCondition } from "./eviction-unreachable.ts";

/** A placement: `namespace` "" for a ClusterResourcePlacement. */
export interface PlacementRef {
  namespace: string;
  name: string;
}

/** The outcome of a run: `rerun` when a write lost a race (run again at once), `gone` when nothing of the placement remains. */
export interface PlacementRunOutcome {
  rerun?: boolean;
  gone?: boolean;
  /**
   * The rollout is under way: picked clusters wait for the rolling update's budget, or their works'
   * Applied and Available are not known yet, so their reports move it on (the placement's object
   * then holds its next run back less: durable-objects/replicaset.ts).
   */
  awaitingReports?: boolean;
}

/** The kinds of a ClusterResourcePlacement's or a ResourcePlacement's objects. */
function kindsOf(ref: PlacementRef) {
  const cluster = ref.namespace === "";
  return {
    placement: cluster ? FLEET_PLACEMENT_KINDS.crp : FLEET_PLACEMENT_KINDS.rp,
    resourceSnapshot: cluster ? ClusterResourceSnapshotKind : ResourceSnapshotKind,
    policySnapshot: cluster ? ClusterSchedulingPolicySnapshotKind : SchedulingPolicySnapshotKind,
    binding: cluster ? ClusterResourceBindingKind : ResourceBindingKind,
    prefix: cluster ? "ClusterResourcePlacement" : "ResourcePlacement",
    finalizer: cluster ? CRP_CLEANUP_FINALIZER : RP_CLEANUP_FINALIZER,
  };
}

/** The tracking label's value and the works' base name: `<crp>`, or `<namespace>.<rp>` (KubeFleet's `WorkNameBaseFmt`). */
export function trackingValue(ref: PlacementRef): string {
  return ref.namespace ? `${ref.namespace}.${ref.name}` : ref.name;
}

/** The binding of a placement in a cluster: `<placement>-<cluster>` (KubeFleet adds a random suffix; Flotilla's is deterministic). */
export function bindingName(ref: PlacementRef, cluster: string): string {
  return `${ref.name}-${cluster}`;
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The selection source over the store: the served kinds (the hub's own and the custom resources'
 * of its CustomResourceDefinitions, as of the isolate's last `syncCustomKinds`, which a run calls
 * first) and their objects; a namespace's content (every served namespaced kind, about 50) in one
 * D1 round trip (`Storage.namespaceContent`), not one list per kind.
 */
export function storeSource(env: Env): SelectionSource {
  return {
    kind: findKindByKind,
    namespacedKinds: () => servedKinds().filter((k) => k.namespaced && k.storage === "d1" && !k.conversion),
    get: (def, ns, name) => admittedStoreOf(env, def).get(ns, name),
    list: async (def, ns) => (await admittedStoreOf(env, def).list(ns)).items,
    // The kinds listed are D1-stored and served as stored (`namespacedKinds`): read straight from
    // the storage, all in one round trip.
    listNamespace: (defs, ns) => storageOf(env).namespaceContent(defs, ns),
  };
}

/**
 * The objects a selection places: each as dispatched, envelopes opened (their `data` objects).
 * `error` is KubeFleet's `extractManifestsFromEnvelopeCR` refusal of the first envelope (in the
 * selection's order; its objects by key) wrapping an object it may not carry: one with a
 * namespace in a ClusterResourceEnvelope, one without in a ResourceEnvelope, or one of another
 * namespace (its messages). A placement's clusters get no works for such a selection, and report
 * WorkSynchronized False with the message (src/fleet/status.ts).
 */
export function manifestsOf(selected: readonly Selected[]): { manifests: Manifest[]; envelopes: number; error?: string } {
  const manifests: Manifest[] = [];
  let envelopes = 0;
  let error: string | undefined;
  for (const s of selected) {
    const isEnvelope = s.def.group === FLEET_GROUP && (s.def.kind === ClusterResourceEnvelopeKind.kind || s.def.kind === ResourceEnvelopeKind.kind);
    if (!isEnvelope) {
      manifests.push({ object: stripForDispatch(s.def, s.object), resource: s.def.plural });
      continue;
    }
    envelopes++;
    const data = ((s.object as unknown as { data?: Record<string, KubeObject> }).data ?? {}) as Record<string, KubeObject>;
    error ??= envelopeError(s, data);
    // KubeFleet's `extractManifestsFromEnvelopeCR` order: by each object's JSON as the apiserver
    // stores it (Go's encoding/json), greatest first.
    const inners = Object.entries(data)
      .filter(([, inner]) => inner && typeof inner === "object" && typeof inner.apiVersion === "string" && typeof inner.kind === "string")
      .map(([key, inner]) => ({ key, inner, json: goJson(inner) }))
      .sort((a, b) => (a.json < b.json ? 1 : a.json > b.json ? -1 : 0));
    for (const { key, inner } of inners) {
      const [g, v] = inner.apiVersion.includes("/") ? inner.apiVersion.split("/") : ["", inner.apiVersion];
      const def = findKindByKind(g ?? "", v ?? "", inner.kind);
      const object = structuredClone(inner);
      object.metadata ??= { name: key } as KubeObject["metadata"];
      manifests.push({
        object,
        resource: def?.plural ?? guessPlural(inner.kind),
        envelope: {
          name: s.object.metadata.name,
          ...(s.object.metadata.namespace ? { namespace: s.object.metadata.namespace } : {}),
          type: s.def.kind as "ClusterResourceEnvelope" | "ResourceEnvelope",
        },
      });
    }
  }
  return { manifests, envelopes, ...(error !== undefined ? { error } : {}) };
}

/**
 * KubeFleet's `extractManifestsFromEnvelopeCR` checks of one envelope's `data` (keys in order),
 * with its messages: the first refusal, or undefined. It reads each object's `metadata.namespace`
 * as written, not its kind's scope (as KubeFleet does).
 */
function envelopeError(envelope: Selected, data: Record<string, KubeObject>): string | undefined {
  const ens = envelope.object.metadata.namespace ?? "";
  // klog.KObj / klog.KRef: `namespace/name`, or `name` without a namespace.
  const ref = (ns: string, name: string) => (ns ? `${ns}/${name}` : name);
  const envRef = ref(ens, envelope.object.metadata.name);
  const cluster = envelope.def.kind === ClusterResourceEnvelopeKind.kind;
  for (const key of Object.keys(data).sort()) {
    const meta = (data[key] as Partial<KubeObject> | undefined)?.metadata;
    const ns = typeof meta?.namespace === "string" ? meta.namespace : "";
    const resRef = ref(ns, typeof meta?.name === "string" ? meta.name : "");
    if (cluster && ns !== "") return `a namespaced object ${key} (${resRef}) has been wrapped in a cluster resource envelope ${envRef}`;
    if (!cluster && ns === "") return `a cluster scope object ${key} (${resRef}) has been wrapped in a resource envelope ${envRef}`;
    if (ns !== ens) return `a namespaced object ${key} (${resRef}) in has been wrapped in a resource envelope from another namespace (${envRef})`;
  }
  return undefined;
}

/** The objects of `def` (in the placement's namespace) a placement owns: read through the label index by its tracking label. */
async function owned(env: Env, def: KindDefinition, ref: PlacementRef): Promise<KubeObject[]> {
  const { items } = await admittedStoreOf(env, def).listPage(ref.namespace || undefined, {
    index: { key: PLACEMENT_TRACKING_LABEL, values: [ref.name] },
    filter: (o) => o.metadata.labels?.[PLACEMENT_TRACKING_LABEL] === ref.name,
  });
  return items;
}

/**
 * The works of a placement, by cluster: every chunk (`<base>-work`, `<base>-1`, ...), one query
 * per chunk name; from `cache` (the placement object's copy) when it holds them, else read and
 * kept there (`nowMs`, epoch ms: when).
 */
async function worksOf(env: Env, ref: PlacementRef, cache?: PlacementWorksCache, nowMs = 0): Promise<Map<string, KubeObject[]>> {
  const held = cache?.current(nowMs);
  if (held) return held;
  cache?.startFill();
  let out: Map<string, KubeObject[]>;
  try {
    out = await readWorks(env, ref);
  } catch (e) {
    cache?.cancelFill();
    throw e;
  }
  cache?.fill([...out.values()].flat(), nowMs);
  return out;
}

/** The works of a placement read from the store, by cluster (see {@link worksOf}). */
async function readWorks(env: Env, ref: PlacementRef): Promise<Map<string, KubeObject[]>> {
  const base = trackingValue(ref);
  const out = new Map<string, KubeObject[]>();
  for (let i = 0; ; i++) {
    const found = (await admittedStoreOf(env, ManifestWorkKind).listNamed(workName(base, i))).filter(
      (w) => w.metadata.labels?.[PLACEMENT_TRACKING_LABEL] === base,
    );
    if (found.length === 0) break;
    for (const w of found) out.set(w.metadata.namespace!, [...(out.get(w.metadata.namespace!) ?? []), w]);
  }
  return out;
}

/** At most this many bytes of selected objects (as JSON) go into one resource snapshot; more go into sub-snapshots. */
export const SNAPSHOT_CHUNK_BYTES = 800 * 1024;

/** The selected objects split into resource snapshots of at most {@link SNAPSHOT_CHUNK_BYTES} each (in order; at least one). */
function snapshotChunks(objects: KubeObject[]): KubeObject[][] {
  const chunks: KubeObject[][] = [[]];
  let size = 0;
  for (const o of objects) {
    const bytes = JSON.stringify(o).length;
    if (size + bytes > SNAPSHOT_CHUNK_BYTES && chunks[chunks.length - 1]!.length > 0) {
      chunks.push([]);
      size = 0;
    }
    chunks[chunks.length - 1]!.push(o);
    size += bytes;
  }
  return chunks;
}

const indexOf = (o: KubeObject, label: string) => Number(o.metadata.labels?.[label] ?? "-1");

/** What a new snapshot index holds: its master's spec and annotations, and its sub-snapshots' (a large selection). */
interface SnapshotBody {
  spec: Record<string, unknown>;
  annotations: Record<string, string>;
  subs?: { spec: Record<string, unknown>; annotations: Record<string, string> }[];
}

/**
 * Keeps the latest snapshot of a kind (its master: the one `hashOf` answers for); makes a new
 * index when `hash` differs, with its sub-snapshots `<name>-<index>-<j>` (KubeFleet's
 * `ResourceSnapshotNameWithSubindexFmt`), moves the `is-latest-snapshot` label, and deletes the
 * indexes past `limit` (the new one counts).
 */
async function ensureSnapshot(
  env: Env,
  def: KindDefinition,
  ref: PlacementRef,
  placement: KubeObject,
  indexLabel: string,
  name: (index: number) => string,
  hash: string,
  hashOf: (o: KubeObject) => string | undefined,
  body: (index: number) => SnapshotBody,
  limit: number,
): Promise<{ snapshot: KubeObject; created: boolean; hadPrevious: boolean } | "lost"> {
  const store = admittedStoreOf(env, def);
  const everything = await owned(env, def, ref);
  const all = everything.filter((o) => hashOf(o) !== undefined).sort((a, b) => indexOf(a, indexLabel) - indexOf(b, indexLabel));
  const latest = all.filter((s) => s.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] === "true").pop() ?? all[all.length - 1];
  if (latest && hashOf(latest) === hash) return { snapshot: latest, created: false, hadPrevious: true };
  const index = latest ? indexOf(latest, indexLabel) + 1 : 0;
  const b = body(index);
  const owner = {
    apiVersion: `${FLEET_GROUP}/v1beta1`,
    kind: kindsOf(ref).placement.kind,
    name: placement.metadata.name,
    uid: placement.metadata.uid!,
    // controllerutil.SetControllerReference, as KubeFleet makes its snapshots.
    controller: true,
    blockOwnerDeletion: true,
  };
  const create = (objectName: string, spec: Record<string, unknown>, labels: Record<string, string>, annotations: Record<string, string>) =>
    racing(() =>
      store.write(ref.namespace, objectName, {
        verb: "create",
        body: {
          apiVersion: `${FLEET_GROUP}/v1beta1`,
          kind: def.kind,
          metadata: {
            name: objectName,
            ...(ref.namespace ? { namespace: ref.namespace } : {}),
            labels: { [PLACEMENT_TRACKING_LABEL]: ref.name, [indexLabel]: String(index), ...labels },
            annotations,
            ownerReferences: [owner],
          },
          spec,
        },
      }),
    );
  // The sub-snapshots first, so that a master (what readers look for) is never without them.
  for (const [j, sub] of (b.subs ?? []).entries()) {
    const r = await create(`${name(index)}-${j}`.replace(/-snapshot-(\d+)$/, "-$1"), sub.spec, {}, { ...sub.annotations, [SUBINDEX_ANNOTATION]: String(j) });
    if (r === "lost" || r === null) return "lost";
  }
  const created = await create(name(index), b.spec, { [IS_LATEST_SNAPSHOT_LABEL]: "true" }, b.annotations);
  if (created === "lost" || created === null) return "lost";
  for (const old of all) {
    if (old.metadata.labels?.[IS_LATEST_SNAPSHOT_LABEL] !== "true") continue;
    const body2 = { ...old, metadata: { ...old.metadata, labels: { ...old.metadata.labels, [IS_LATEST_SNAPSHOT_LABEL]: "false" } } };
    if ((await racing(() => store.write(ref.namespace, old.metadata.name, { verb: "update", body: body2 }, { known: old }))) === "lost") return "lost";
  }
  // revisionHistoryLimit: the oldest indexes go, masters and sub-snapshots.
  const excess = all.length + 1 - limit;
  const gone = new Set(all.slice(0, Math.max(0, excess)).map((o) => indexOf(o, indexLabel)));
  for (const old of everything.filter((o) => gone.has(indexOf(o, indexLabel)))) {
    await racing(() => store.write(ref.namespace, old.metadata.name, { verb: "delete", preconditions: { uid: old.metadata.uid } }));
  }
  return { snapshot: created, created: true, hadPrevious: all.length > 0 };
}

/** Sets `next` into `current` conditions (keeping transition times) and drops types not in `next`. */
function mergeConditions(current: Condition[] | undefined, next: Omit<Condition, "lastTransitionTime">[], now: string): Condition[] {
  const out = structuredClone(current ?? []).filter((c) => next.some((n) => n.type === c.type));
  for (const n of next) setCondition(out, n, now);
  return next.map((n) => out.find((c) => c.type === n.type)!);
}

/** The placement as its Events name it (KubeFleet's recorder: the v1beta1 object). */
function placementRef(k: ReturnType<typeof kindsOf>, ref: PlacementRef, placement: KubeObject) {
  return { kind: k.placement.kind, apiVersion: `${FLEET_GROUP}/v1beta1`, name: ref.name, namespace: ref.namespace, uid: placement.metadata.uid };
}

/** Deletes the placement's works and bindings, then its finalizer. */
async function cleanUp(env: Env, ref: PlacementRef, placement: KubeObject | null): Promise<PlacementRunOutcome> {
  const k = kindsOf(ref);
  const works = [...(await worksOf(env, ref)).values()].flat().filter((w) => !w.metadata.deletionTimestamp);
  const results = await admittedStoreOf(env, ManifestWorkKind).writeMany(
    works.map((w) => ({ namespace: w.metadata.namespace!, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w })),
  );
  let raced = results.includes("lost");
  const bindings = await owned(env, k.binding, ref);
  for (const b of bindings) {
    if ((await racing(() => admittedStoreOf(env, k.binding).write(ref.namespace, b.metadata.name, { verb: "delete" }))) === "lost") raced = true;
  }
  if (!placement) return raced ? { rerun: true } : { gone: true };
  const finalizers = (placement.metadata.finalizers ?? []).filter((f) => f !== k.finalizer);
  if (finalizers.length !== (placement.metadata.finalizers ?? []).length) {
    const r = await racing(() =>
      admittedStoreOf(env, k.placement).write(
        ref.namespace,
        ref.name,
        { verb: "update", body: { ...placement, metadata: { ...placement.metadata, finalizers } } },
        { known: placement },
      ),
    );
    if (r === "lost") raced = true;
    else
      await recordEvents(env, placementEventSpecs(placementRef(k, ref, placement), [CLEANUP_FINALIZER_REMOVED])).catch((e: unknown) =>
        console.error(`placement ${trackingValue(ref)}: could not record events`, e),
      );
  }
  return raced ? { rerun: true } : {};
}

/** What a run reads before it schedules: its selection, and its resource and policy snapshots (made when they changed). */
interface Prelude {
  selected: Selected[];
  manifests: Manifest[];
  /** Why the selection's envelopes cannot be placed (see {@link manifestsOf}), if they cannot. */
  envelopeError?: string;
  snapshot: KubeObject;
  policySnapshot: KubeObject;
  /** A new policy snapshot replaced an earlier one in this run (the scheduler starts afresh). */
  policyReplaced: boolean;
}

/**
 * Steps 1 and 2 of a run ({@link runPlacement}): the placement's resources selected and its
 * resource and policy snapshots kept; `outcome` when the run ends there (invalid selectors, a
 * lost write race).
 */
async function readPrelude(env: Env, ref: PlacementRef, placement: KubeObject, nowMs: number): Promise<Prelude | { outcome: PlacementRunOutcome }> {
  const k = kindsOf(ref);
  const spec = (placement.spec ?? {}) as PlacementSpec;
  const generation = placement.metadata.generation ?? 1;
  const now = stamp(nowMs);
  const limit = spec.revisionHistoryLimit ?? 10;
  const policy: PlacementPolicy = spec.policy ?? { placementType: "PickAll" };
  // 1. Resources. A selector may name a CRD's custom resources and a namespace may hold them: the
  // isolate's custom kinds are brought up to date first (src/kinds/sync.ts).
  await syncCustomKinds(env);
  let selected: Selected[];
  try {
    selected = await selectResources(storeSource(env), ref, spec.resourceSelectors ?? []);
  } catch (e) {
    if (!(e instanceof SelectionError)) throw e;
    // KubeFleet sets this one condition (`SetConditions`), leaving the others as they were.
    const conditions = structuredClone((placement.status?.conditions ?? []) as Condition[]);
    setCondition(
      conditions,
      {
        type: `${k.prefix}Scheduled`,
        status: "False",
        reason: "InvalidResourceSelectors",
        message: `The resource selectors are invalid: ${e.message}`,
        observedGeneration: generation,
      },
      now,
    );
    return { outcome: await writeStatus(env, ref, placement, { ...(placement.status ?? {}), conditions }) };
  }
  const { manifests, envelopes, error: envelopeError } = manifestsOf(selected);
  const contents = selected.map((s) => stripForDispatch(s.def, s.object));
  // KubeFleet's `resource.HashOf(resourceSnapshotSpec)`: the SHA-256 of the spec as Go writes it.
  const resourceHash = await sha256(goJson({ selectedResources: contents }));
  const rs = await ensureSnapshot(
    env,
    k.resourceSnapshot,
    ref,
    placement,
    RESOURCE_INDEX_LABEL,
    (i) => `${ref.name}-${i}-snapshot`,
    resourceHash,
    (o) => o.metadata.annotations?.[RESOURCE_HASH_ANNOTATION],
    () => {
      const [first, ...rest] = snapshotChunks(contents);
      return {
        spec: { selectedResources: first ?? [] },
        annotations: {
          [RESOURCE_HASH_ANNOTATION]: resourceHash,
          [NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION]: String(1 + rest.length),
          [NUMBER_OF_ENVELOPED_OBJECTS_ANNOTATION]: String(envelopes),
        },
        subs: rest.map((chunk) => ({ spec: { selectedResources: chunk }, annotations: {} })),
      };
    },
    limit,
  );
  if (rs === "lost") return { outcome: { rerun: true } };
  const snapshot = rs.snapshot;

  // 2. Policy. As KubeFleet (`getOrCreateSchedulingPolicySnapshot`), numberOfClusters is not part
  // of the policy's hash: changing it scales the placement on the latest snapshot (its
  // number-of-clusters annotation), keeping the clusters it has, rather than making a new one.
  const hashed: PlacementPolicy = { ...policy };
  delete hashed.numberOfClusters;
  const policyHash = await sha256(canonical(hashed));
  const ps = await ensureSnapshot(
    env,
    k.policySnapshot,
    ref,
    placement,
    POLICY_INDEX_LABEL,
    (i) => `${ref.name}-${i}`,
    policyHash,
    (o) => (o.spec as { policyHash?: string } | undefined)?.policyHash,
    () => ({
      spec: { policy, policyHash },
      // The placement's generation on the policy snapshot only (KubeFleet's resource snapshots carry none).
      annotations: {
        [CRP_GENERATION_ANNOTATION]: String(generation),
        ...(policy.placementType === "PickN" ? { [NUMBER_OF_CLUSTERS_ANNOTATION]: String(policy.numberOfClusters ?? 0) } : {}),
      },
    }),
    limit,
  );
  if (ps === "lost") return { outcome: { rerun: true } };
  let policySnapshot = ps.snapshot;
  // KubeFleet's `ensureLatestPolicySnapshot`: the latest snapshot carries the placement's
  // generation and, for PickN, its current numberOfClusters.
  {
    const annotations = { ...(policySnapshot.metadata.annotations ?? {}) };
    annotations[CRP_GENERATION_ANNOTATION] = String(generation);
    if (policy.placementType === "PickN" && policy.numberOfClusters !== undefined) annotations[NUMBER_OF_CLUSTERS_ANNOTATION] = String(policy.numberOfClusters);
    if (!deepEqual(annotations, policySnapshot.metadata.annotations ?? {})) {
      const body = { ...policySnapshot, metadata: { ...policySnapshot.metadata, annotations } };
      const r = await racing(() =>
        admittedStoreOf(env, k.policySnapshot).write(ref.namespace, policySnapshot.metadata.name, { verb: "update", body }, { known: policySnapshot }),
      );
      if (r === "lost" || r === null) return { outcome: { rerun: true } };
      policySnapshot = r;
    }
  }

  return {
    selected,
    manifests,
    ...(envelopeError !== undefined ? { envelopeError } : {}),
    snapshot,
    policySnapshot,
    policyReplaced: ps.created && ps.hadPrevious,
  };
}

/** What a run keeps for the next runs that only its works' status reports ask for (see {@link runPlacement}). */
interface HeldRun extends Omit<Prelude, "policyReplaced"> {
  /** The placement's resourceVersion after the run (its status write, or as read): a run of another version reads everything. */
  placementVersion: string | undefined;
  /** When it was read (epoch ms): kept at most `PLACEMENT_WORKS_RESYNC_MS` from then. */
  at: number;
  /** The bindings by name, as the runs wrote them. */
  bindings: Map<string, KubeObject>;
  renderFor: ReturnType<typeof clusterRenderer>;
  renders: Map<string, ClusterRender>;
  /** Each picked cluster's status as the last run folded it, by cluster. */
  folds: Map<string, ClusterFold>;
}

/**
 * One cluster's share of the placement's status, kept between runs: what it was computed from
 * (`key`: its works' versions, rollout state, decision and overrides; `bindingVersion`: its
 * binding's resourceVersion after the run), its status (`pcs`) and its `placementStatuses` entry.
 * A run whose inputs for the cluster are the same reuses them: a report of one cluster makes the
 * run compute, compare and write that cluster's status, not every cluster's.
 */
interface ClusterFold {
  key: string;
  bindingVersion: string | undefined;
  pcs: PerClusterStatus;
  entry: Record<string, unknown>;
}

/**
 * Reconciles one placement at `nowMs` (epoch ms). Idempotent: every run reads the current state
 * (its works from `cache`, the placement object's copy, when it holds them: src/fleet/works-cache.ts).
 * @throws errors of D1 or an unexpected write failure (the placement's object retries later);
 *   lost write races are reported as `rerun`
 */
export async function runPlacement(env: Env, ref: PlacementRef, nowMs: number, cache?: PlacementWorksCache): Promise<PlacementRunOutcome> {
  const k = kindsOf(ref);
  const placementStore = admittedStoreOf(env, k.placement);
  let placement = await placementStore.get(ref.namespace, ref.name);
  if (!placement || placement.metadata.deletionTimestamp) {
    cache?.invalidate();
    return cleanUp(env, ref, placement);
  }
  if (!(placement.metadata.finalizers ?? []).includes(k.finalizer)) {
    const body = { ...placement, metadata: { ...placement.metadata, finalizers: [...(placement.metadata.finalizers ?? []), k.finalizer] } };
    const r = await racing(() => placementStore.write(ref.namespace, ref.name, { verb: "update", body }, { known: placement! }));
    if (r === "lost" || r === null) return { rerun: true };
    placement = r;
  }
  const spec = (placement.spec ?? {}) as PlacementSpec;
  const generation = placement.metadata.generation ?? 1;
  const now = stamp(nowMs);
  // External: rolled out only by staged update runs, which bind each cluster to an index (src/fleet/updaterun/gate.ts).
  const external = isExternal(spec);
  // What the last run kept, when only its works' status reports came since (src/fleet/works-cache.ts):
  // its selection, snapshots, overrides and bindings are as it left them, so this run reads none of them.
  const epoch = cache?.runEpoch() ?? 0;
  const heldRun = external ? null : cache?.heldRun<HeldRun>(nowMs);
  const held = heldRun && heldRun.placementVersion === placement.metadata.resourceVersion ? heldRun : null;
  const policy: PlacementPolicy = spec.policy ?? { placementType: "PickAll" };
  const base = trackingValue(ref);
  let pre: Prelude;
  if (held) pre = { ...held, policyReplaced: false };
  else {
    const r = await readPrelude(env, ref, placement, nowMs);
    if ("outcome" in r) return r.outcome;
    pre = r;
  }
  const { selected, manifests, snapshot } = pre;
  let policySnapshot = pre.policySnapshot;
  const resourceIndex = snapshot.metadata.labels![RESOURCE_INDEX_LABEL]!;

  // 3. Scheduling, onto the ManagedClusters.
  // The bindings by name (as the last run left them, or read through the label index).
  const heldBindings = held ? held.bindings : new Map((await owned(env, k.binding, ref)).map((b) => [b.metadata.name, b]));
  const bindings = [...heldBindings.values()];
  const bound = external ? boundIndexes(ref.name, bindings) : new Map<string, string>();
  const bindingOf = new Map(bindings.map((b) => [(b.spec as { targetCluster: string }).targetCluster, b]));
  const current = new Set(
    bindings.filter((b) => (b.spec as { state: string }).state !== "Unscheduled").map((b) => (b.spec as { targetCluster: string }).targetCluster),
  );
  // The ManagedClusters as the run before read them while only status reports woke the placement (src/fleet/works-cache.ts).
  let managedClusters = cache?.clustersHeld(nowMs);
  if (!managedClusters) {
    managedClusters = (await admittedStoreOf(env, ManagedClusterKind).list()).items;
    cache?.keepClusters(managedClusters, nowMs);
  }
  const clusters = managedClusters.map((mc) => memberClusterOf(mc, nowMs));
  const storedDecisions = new Map(
    bindings
      .filter((b) => (b.spec as { clusterDecision?: unknown }).clusterDecision)
      .map((b) => [(b.spec as { targetCluster: string }).targetCluster, (b.spec as { clusterDecision: ClusterDecision }).clusterDecision] as const),
  );
  const decision = schedulePlacement(policy, clusters, current, pre.policyReplaced, storedDecisions);
  const picked = new Map(decision.selected.map((d) => [d.clusterName, d]));
  const scheduledOk = policy.placementType === "PickAll" || decision.selected.length >= decision.desired;
  const scheduledMessage = scheduledOk
    ? `found all cluster needed as specified by the scheduling policy, found ${decision.selected.length} cluster(s)`
    : `could not find all clusters needed as specified by the scheduling policy, found ${decision.selected.length} cluster(s) instead`;
  let raced = false;
  {
    const status = {
      observedCRPGeneration: generation,
      conditions: mergeConditions(
        policySnapshot.status?.conditions as Condition[] | undefined,
        [
          {
            type: "Scheduled",
            status: scheduledOk ? "True" : "False",
            reason: scheduledOk ? "SchedulingPolicyFulfilled" : "SchedulingPolicyUnfulfilled",
            message: scheduledMessage,
            observedGeneration: generation,
          },
        ],
        now,
      ),
      targetClusters: [...decision.selected, ...decision.notSelected].slice(0, 1000),
    };
    if (canonical(status) !== canonical(policySnapshot.status ?? {})) {
      const r = await racing(() =>
        admittedStoreOf(env, k.policySnapshot).write(
          ref.namespace,
          policySnapshot.metadata.name,
          { verb: "update", subresource: "status", body: { ...policySnapshot, status } },
          { known: policySnapshot },
        ),
      );
      if (r === "lost") raced = true;
      else if (r) policySnapshot = r;
    }
  }

  // 4. Rollout of the rendered works, each cluster's objects through its overrides (src/fleet/overrides.ts).
  const renderFor = held ? held.renderFor : clusterRenderer(base, manifests, spec.strategy, await placementOverrides(env, ref, manifests), pre.envelopeError);
  // An External placement's clusters are rendered from the index a run bound them to (older ones read from their snapshots).
  const renderers = new Map<string, typeof renderFor>([[resourceIndex, renderFor]]);
  for (const i of new Set(bound.values())) {
    if (renderers.has(i)) continue;
    const sel = await snapshotSelection(env, k.resourceSnapshot, ref.namespace, ref.name, i);
    if (!sel) continue;
    const { manifests: m, error: envelopeError } = manifestsOf(sel);
    renderers.set(i, clusterRenderer(base, m, spec.strategy, await placementOverrides(env, ref, m), envelopeError));
  }
  for (const [c, i] of bound) if (!renderers.has(i)) bound.delete(c);
  /** The index cluster `c` is rolled out to: the latest, or (External) the one a run bound it to. */
  const indexFor = (c: string): string => (external ? (bound.get(c) ?? resourceIndex) : resourceIndex);
  const memberOf = new Map<string, MemberCluster>(clusters.map((c) => [c.name, c]));
  const renders = held ? held.renders : new Map<string, ClusterRender>();
  const renderOf = (c: string): ClusterRender => {
    let r = renders.get(c);
    if (!r) renders.set(c, (r = (renderers.get(indexFor(c)) ?? renderFor)(memberOf.get(c) ?? { name: c, labels: {} })));
    return r;
  };
  const works = await worksOf(env, ref, cache, nowMs);
  const gone = new Set(clusters.filter((c) => c.leaving).map((c) => c.name));
  const known = new Set(clusters.map((c) => c.name));
  const names = new Set([...picked.keys(), ...works.keys()]);
  const rolloutClusters: RolloutCluster[] = [];
  for (const c of names) {
    const ws = works.get(c);
    const first = ws?.find((w) => w.metadata.name === workName(base, 0)) ?? ws?.[0];
    // Current: the latest snapshot, and (picked) exactly the objects its overrides render for the cluster.
    const current = first?.metadata.labels?.[PARENT_SNAPSHOT_INDEX_LABEL] === indexFor(c) && (!picked.has(c) || carriesRender(base, ws!, renderOf(c)));
    rolloutClusters.push({
      name: c,
      picked: picked.has(c),
      ...(first
        ? {
            work: {
              current,
              generation: first.metadata.generation ?? 1,
              conditions: (first.status?.conditions ?? []) as WorkCondition[],
            },
          }
        : {}),
    });
  }
  const target = policy.placementType === "PickAll" ? decision.selected.length : decision.desired;
  const step = external ? externalStep(rolloutClusters, bound) : rolloutStep(rolloutClusters, target, spec.strategy?.rollingUpdate);
  const blocked = new Set(step.blocked);
  const toRender = new Set([...step.add, ...step.update]);
  // The apply strategy changes at once where the snapshot is current (KubeFleet's processApplyStrategyUpdates).
  for (const c of rolloutClusters) {
    if (!c.picked || !c.work?.current) continue;
    const ws = works.get(c.name) ?? [];
    const { works: rendered, specJson } = renderOf(c.name);
    const same =
      ws.length === rendered.length &&
      rendered.every((r, i) => {
        const w = ws.find((x) => x.metadata.name === r.name);
        return w && specIs(w, specJson[i]!) && canonical(pickAnnotations(w, r)) === canonical(r.annotations);
      });
    if (!same) toRender.add(c.name);
  }
  const toRemove = new Set([...step.remove, ...[...works.keys()].filter((c) => !picked.has(c) && (gone.has(c) || !known.has(c)))]);
  const writes: ManyWrite[] = [];
  for (const c of toRender) {
    const ws = works.get(c) ?? [];
    const { works: rendered, specJson: renderedJson, error, syncError } = renderOf(c);
    // An override that failed for the cluster, or envelopes that cannot be placed: its works stay as they are (never half-applied).
    if (error !== undefined || syncError !== undefined) continue;
    rendered.forEach((r: RenderedWork, i) => {
      const w = ws.find((x) => x.metadata.name === r.name);
      if (w && w.metadata.deletionTimestamp) return;
      if (
        w &&
        specIs(w, renderedJson[i]!) &&
        w.metadata.labels?.[PARENT_SNAPSHOT_INDEX_LABEL] === indexFor(c) &&
        canonical(pickAnnotations(w, r)) === canonical(r.annotations)
      )
        return;
      const metadata = {
        ...(w?.metadata ?? {}),
        // Born held for its agent, as OCM's agent would hold it at its first sight (src/work/deletion.ts).
        ...(w ? {} : { finalizers: heldFromBirth() }),
        name: r.name,
        namespace: c,
        labels: {
          ...(w?.metadata.labels ?? {}),
          [PLACEMENT_TRACKING_LABEL]: base,
          ...(ref.namespace ? { [PARENT_NAMESPACE_LABEL]: ref.namespace } : {}),
          [PARENT_BINDING_LABEL]: bindingName(ref, c),
          [PARENT_SNAPSHOT_INDEX_LABEL]: indexFor(c),
        },
        // Karmada's applied-overrides annotations are the rendering's alone (gone when no policy applies any more).
        annotations: {
          ...withoutKeys(w?.metadata.annotations, APPLIED_OVERRIDE_ANNOTATIONS),
          ...r.annotations,
          [PARENT_SNAPSHOT_NAME_ANNOTATION]: resourceSnapshotName(ref.name, indexFor(c)),
        },
      };
      const body = { apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWork", metadata, spec: frozenSpec(r, renderedJson[i]!) };
      writes.push({ namespace: c, name: r.name, req: w ? { verb: "update", body } : { verb: "create", body }, known: w ?? null });
    });
    for (const w of ws) {
      if (!rendered.some((r) => r.name === w.metadata.name) && !w.metadata.deletionTimestamp)
        writes.push({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w });
    }
  }
  for (const c of toRemove) {
    for (const w of works.get(c) ?? []) {
      if (!w.metadata.deletionTimestamp)
        writes.push({ namespace: c, name: w.metadata.name, req: { verb: "delete", preconditions: { uid: w.metadata.uid } }, known: w });
    }
  }
  const results = await writeInTurns(admittedStoreOf(env, ManifestWorkKind), writes);
  results.forEach((r, i) => {
    const wr = writes[i]!;
    if (r === "lost") {
      raced = true;
      cache?.invalidate();
      return;
    }
    // A delete answers the work as it was, or being deleted (finalizers): only the latter stays.
    if (r && (wr.req.verb !== "delete" || r.metadata.deletionTimestamp)) {
      cache?.apply(r);
      // Its version's spec JSON, known from the rendering (its spec is the rendered one): a later read of it is not serialised again.
      storedSpecJson(r);
    } else cache?.remove(wr.namespace, wr.name);
    const list = (works.get(wr.namespace) ?? []).filter((w) => w.metadata.name !== wr.name);
    if (r) list.push(r);
    works.set(wr.namespace, list);
  });

  // 5. Bindings, one per picked cluster (Unscheduled while its works are being removed).
  const perCluster: PerClusterStatus[] = [];
  const specWrites: ManyWrite[] = [];
  const wantStatus = new Map<string, Record<string, unknown>>();
  const stored = new Map<string, KubeObject>();
  const policySnapshotName = policySnapshot.metadata.name;
  // Each picked cluster's share of the status: kept from the last run where its inputs are the same (see ClusterFold).
  const folds = new Map<string, ClusterFold>();
  /** The clusters whose status this run computed (the others' came from `held.folds`). */
  const refolded = new Map<string, { key: string; pcs: PerClusterStatus }>();
  for (const [cluster, d] of [...picked].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const ws = (works.get(cluster) ?? []).filter((w) => !w.metadata.deletionTimestamp);
    const b = bindingOf.get(cluster);
    const key = `${generation}|${indexFor(cluster)}|${blocked.has(cluster)}|${ws.map((w) => `${w.metadata.uid}/${w.metadata.resourceVersion}`).join(",")}|${JSON.stringify(d)}`;
    const kept = held?.folds.get(cluster);
    if (kept && kept.key === key && b && kept.bindingVersion === b.metadata.resourceVersion) {
      perCluster.push(kept.pcs);
      folds.set(cluster, kept);
      continue;
    }
    const r = renderOf(cluster);
    const failed = r.error !== undefined || r.syncError !== undefined;
    const isCurrent =
      ws.length > 0 && ws.every((w) => w.metadata.labels?.[PARENT_SNAPSHOT_INDEX_LABEL] === indexFor(cluster)) && !blocked.has(cluster) && !failed;
    // The override snapshots pinned in the binding: the latest where the cluster was rendered (or failed to be), the binding's own while held back.
    const pinned = blocked.has(cluster)
      ? {
          clusterResourceOverrideSnapshots: (b?.spec as { clusterResourceOverrideSnapshots?: string[] } | undefined)?.clusterResourceOverrideSnapshots ?? [],
          resourceOverrideSnapshots:
            (b?.spec as { resourceOverrideSnapshots?: { name: string; namespace: string }[] } | undefined)?.resourceOverrideSnapshots ?? [],
        }
      : { clusterResourceOverrideSnapshots: r.clusterResourceOverrides, resourceOverrideSnapshots: r.resourceOverrides };
    const pcs = perClusterStatus(
      {
        cluster,
        reason: d.reason,
        works: isCurrent ? ws : [],
        current: blocked.has(cluster) ? false : (r.works.length === 0 && !failed) || isCurrent || failed ? true : null,
        overrides: {
          applied:
            pinned.clusterResourceOverrideSnapshots.length + pinned.resourceOverrideSnapshots.length > 0 ||
            (!blocked.has(cluster) && r.karmada.clusterOverrides.length + r.karmada.overrides.length > 0),
          ...(r.error !== undefined ? { error: r.error } : {}),
        },
        ...(r.syncError !== undefined ? { syncError: r.syncError } : {}),
      },
      generation,
      indexFor(cluster),
    );
    pcs.applicable = pinned;
    // An automatic eviction the budget refused (src/fleet/eviction-unreachable.ts).
    const evicted = evictionBlockedCondition(b, generation, () => clusters.find((m) => m.name === cluster)?.taints ?? []);
    if (evicted) pcs.conditions.push(evicted);
    perCluster.push(pcs);
    refolded.set(cluster, { key, pcs });
    const workIndex = ws[0]?.metadata.labels?.[PARENT_SNAPSHOT_INDEX_LABEL];
    // External: the state and snapshot are the run's (Scheduled until one binds the cluster).
    const bindingSpec = {
      state: external ? (bound.has(cluster) ? "Bound" : "Scheduled") : ws.length > 0 || r.works.length === 0 ? "Bound" : "Scheduled",
      resourceSnapshotName: external
        ? resourceSnapshotName(ref.name, indexFor(cluster))
        : workIndex !== undefined
          ? `${ref.name}-${workIndex}-snapshot`
          : snapshot.metadata.name,
      ...(pinned.resourceOverrideSnapshots.length ? { resourceOverrideSnapshots: pinned.resourceOverrideSnapshots } : {}),
      ...(pinned.clusterResourceOverrideSnapshots.length ? { clusterResourceOverrideSnapshots: pinned.clusterResourceOverrideSnapshots } : {}),
      schedulingPolicySnapshotName: policySnapshotName,
      targetCluster: cluster,
      clusterDecision: d,
      applyStrategy: spec.strategy?.applyStrategy ?? {},
    };
    const name = bindingName(ref, cluster);
    wantStatus.set(name, {
      ...(pcs.failedPlacements ? { failedPlacements: pcs.failedPlacements } : {}),
      ...(pcs.driftedPlacements ? { driftedPlacements: pcs.driftedPlacements } : {}),
      conditions: mergeConditions(
        b?.status?.conditions as Condition[] | undefined,
        pcs.conditions.filter((c) => c.type !== "Scheduled").map(withoutGeneration),
        now,
      ),
    });
    if (b && deepEqual(b.spec ?? null, bindingSpec) && b.metadata.labels?.[TARGET_CLUSTER_LABEL] === cluster) stored.set(name, b);
    // A new binding is created with its status (one commit, not a create and a status write).
    else specWrites.push(bindingWrite(ref, k.binding, b, cluster, bindingSpec, placement, b ? undefined : wantStatus.get(name)));
  }
  for (const [cluster, b] of bindingOf) {
    if (picked.has(cluster)) continue;
    if ((works.get(cluster) ?? []).length > 0) {
      const s = { ...(b.spec as Record<string, unknown>), state: "Unscheduled" };
      if (!deepEqual(s, b.spec))
        specWrites.push({ namespace: ref.namespace, name: b.metadata.name, req: { verb: "update", body: { ...b, spec: s } }, known: b });
    } else {
      specWrites.push({ namespace: ref.namespace, name: b.metadata.name, req: { verb: "delete", preconditions: { uid: b.metadata.uid } }, known: b });
    }
  }
  const bindingStore = admittedStoreOf(env, k.binding);
  /** Takes the bindings' writes into `heldBindings` (what the next report-driven run starts from); a lost race ends the run's keeping. */
  const tookBindings = (ws: ManyWrite[], results: (KubeObject | null | "lost")[]) =>
    results.forEach((r, i) => {
      const wr = ws[i]!;
      if (r === "lost") raced = true;
      else if (r && (wr.req.verb !== "delete" || r.metadata.deletionTimestamp)) heldBindings.set(wr.name, r);
      else heldBindings.delete(wr.name);
    });
  const specResults = await writeInTurns(bindingStore, specWrites);
  tookBindings(specWrites, specResults);
  for (const r of specResults) if (r && r !== "lost") stored.set(r.metadata.name, r);
  const statusWrites: ManyWrite[] = [];
  for (const [name, want] of wantStatus) {
    const b = stored.get(name);
    if (b && canonical(b.status ?? {}) !== canonical(want))
      statusWrites.push({ namespace: ref.namespace, name, req: { verb: "update", subresource: "status", body: { ...b, status: want } }, known: b });
  }
  tookBindings(statusWrites, await writeInTurns(bindingStore, statusWrites));
  // The runs of an External placement move on its bindings' changes (a cluster updated, removed).
  if (external && specWrites.length + statusWrites.length > 0) await wakeUpdateRuns(env, ref);

  // Unfilled PickN / PickFixed slots: as KubeFleet (`calculateFailedToScheduleClusterCount`,
  // `buildFailedToSchedulePerClusterPlacementStatuses`), one status per wanted cluster not picked,
  // at most one per decision not selected, each with that decision's reason.
  const unfilled: Record<string, unknown>[] = [];
  if (policy.placementType !== "PickAll") {
    const missing = Math.min(Math.max(0, decision.desired - decision.selected.length), decision.notSelected.length);
    const oldUnfilled = ((placement.status?.placementStatuses ?? []) as { clusterName?: string; conditions?: Condition[] }[]).filter((s) => !s.clusterName);
    for (let i = 0; i < missing; i++) {
      const cond = {
        type: "Scheduled",
        status: "False" as const,
        reason: "ScheduleFailed",
        message: decision.notSelected[i]!.reason,
        observedGeneration: generation,
      };
      unfilled.push({ conditions: mergeConditions(oldUnfilled[i]?.conditions, [cond], now) });
    }
  }

  // 6. The placement's status.
  const oldStatuses = new Map(
    ((placement.status?.placementStatuses ?? []) as { clusterName?: string; conditions?: Condition[] }[]).map((s) => [s.clusterName ?? "", s.conditions]),
  );
  // A run of what the last one kept compares only the entries it computed again (the others are as it wrote them).
  let entriesMoved = false;
  const oldEntries = held ? new Map(((placement.status?.placementStatuses ?? []) as Record<string, unknown>[]).map((s) => [s.clusterName, s])) : undefined;
  const placementStatuses = [
    ...perCluster.map((p) => {
      const kept = folds.get(p.clusterName);
      if (kept) return kept.entry;
      const built = {
        clusterName: p.clusterName,
        observedResourceIndex: p.observedResourceIndex,
        ...(p.applicable?.resourceOverrideSnapshots.length ? { applicableResourceOverrides: p.applicable.resourceOverrideSnapshots } : {}),
        ...(p.applicable?.clusterResourceOverrideSnapshots.length ? { applicableClusterResourceOverrides: p.applicable.clusterResourceOverrideSnapshots } : {}),
        ...(p.failedPlacements ? { failedPlacements: p.failedPlacements } : {}),
        ...(p.driftedPlacements ? { driftedPlacements: p.driftedPlacements } : {}),
        conditions: mergeConditions(oldStatuses.get(p.clusterName), p.conditions, now),
      };
      // A frozen copy (its lists are shared with the run's renders and bindings): the next runs
      // write it again while the cluster's state does not move, and the write path checks it
      // against the schema once (src/k8s/write.ts `trustedOmitted`).
      const entry = freezeTree(structuredClone(built));
      const f = refolded.get(p.clusterName)!;
      const name = bindingName(ref, p.clusterName);
      folds.set(p.clusterName, { key: f.key, pcs: f.pcs, entry, bindingVersion: heldBindings.get(name)?.metadata.resourceVersion });
      if (oldEntries && !entriesMoved) {
        const old = oldEntries.get(p.clusterName);
        if (!old || canonical(old) !== canonical(entry)) entriesMoved = true;
      }
      return entry;
    }),
    ...unfilled,
  ];
  const oldConditions = placement.status?.conditions as Condition[] | undefined;
  const conditions = mergeConditions(oldConditions, placementConditions(k.prefix, generation, { ok: scheduledOk, message: scheduledMessage }, perCluster), now);
  const status = {
    selectedResources: selected.map(identifierOf),
    observedResourceIndex: resourceIndex,
    placementStatuses,
    conditions,
  };
  // What changed, for a run of what the last one kept: the clusters it computed again, the order of
  // the entries, the unfilled slots and the placement's conditions (never the whole status serialised).
  const moved = held
    ? entriesMoved ||
      placementStatusesShape(placement.status?.placementStatuses) !== placementStatusesShape(placementStatuses) ||
      canonical(((placement.status?.placementStatuses ?? []) as { clusterName?: string }[]).filter((s) => !s.clusterName)) !== canonical(unfilled) ||
      canonical(placement.status?.conditions ?? null) !== canonical(conditions) ||
      placement.status?.observedResourceIndex !== resourceIndex ||
      canonical(placement.status?.selectedResources ?? null) !== canonical(status.selectedResources)
    : undefined;
  const { outcome, written } = await writeStatusOf(env, ref, placement, status, moved);
  if (cache && !external && !raced && !outcome.rerun) {
    const at = held?.at ?? nowMs;
    const keep: HeldRun = {
      placementVersion: (written ?? placement).metadata.resourceVersion,
      at,
      selected,
      manifests,
      ...(pre.envelopeError !== undefined ? { envelopeError: pre.envelopeError } : {}),
      snapshot,
      policySnapshot,
      bindings: heldBindings,
      renderFor,
      renders,
      folds,
    };
    cache.keepRun(keep, epoch, at);
  }
  // KubeFleet's events: a condition of the chain that turned True at this generation, the rollout completed (src/fleet/events.ts).
  const events = placementEvents(k.prefix, generation, oldConditions, conditions);
  if (events.length > 0 && !outcome.rerun) {
    await recordEvents(env, placementEventSpecs(placementRef(k, ref, placement), events), nowMs).catch((e: unknown) =>
      console.error(`placement ${base}: could not record events`, e),
    );
  }
  const awaiting = (!external && step.blocked.length > 0) || perCluster.some((p) => p.chain.Available === undefined || p.chain.Available === "Unknown");
  return { ...(raced || outcome.rerun ? { rerun: true } : {}), ...(awaiting ? { awaitingReports: true } : {}) };
}

/** Writes a placement's run makes per turn of the event loop: one D1 batch (src/store/d1/objects.ts `COMMIT_BATCH_ITEMS`). */
export const WRITES_PER_TURN = 50;

/** Resolves on a later turn of the event loop, after the I/O that arrived meanwhile (a timer, not a microtask). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Writes a run's works or bindings through `store`, {@link WRITES_PER_TURN} at a time, each batch
 * committed and its after-commit hooks run (for works: the clusters' objects push them to their
 * agents) before the next, with a turn of the event loop after each batch. A fleet's writes are
 * a long chain of in-memory work in one isolate (D1 commits, the calls into the clusters'
 * objects), and workerd reads its sockets only when nothing is runnable: without the turns, no
 * agent's report of a work pushed early was read, let alone acknowledged, before the last
 * cluster's work was pushed and the run's bindings and status were written (bench:crp at 1,000
 * clusters: nothing acknowledged for 1.6 s on the idle machine). Each turn lets the reports that
 * came meanwhile run first; the writes and their order are the same. (Made here, not in
 * `writeMany` for every writer: there a replica set update's hub CPU per report was 1.61-1.80 ms
 * against main's 1.34-1.59, bench:propagation, docs/scale.md. Each batch's commit waits for the
 * hooks of the one before, where the store overlaps them.) Returns
 * {@link Store.writeMany}'s outcomes, in order.
 * @throws what {@link Store.writeMany} throws (the batches before it stay committed, as before)
 */
export async function writeInTurns(store: Pick<Store, "writeMany">, writes: ManyWrite[]): Promise<ManyOutcome[]> {
  const results: ManyOutcome[] = [];
  for (let i = 0; i < writes.length; i += WRITES_PER_TURN) {
    results.push(...(await store.writeMany(writes.slice(i, i + WRITES_PER_TURN))));
    await nextTurn();
  }
  return results;
}

/** The frozen copy of each rendered work's spec that every cluster's work of a run shares. */
const frozenSpecs = new WeakMap<RenderedWork, Record<string, unknown>>();

/**
 * The spec of rendered work `r` as the works carry it: one deep-frozen copy per rendering, whose
 * JSON text the write path splices into each cluster's work (src/k8s/frozen-json.ts) and whose
 * schema check and validation it makes once, so that a fleet's works are not each checked,
 * copied and serialised (`json`: its canonical JSON, which the next runs compare).
 */
function frozenSpec(r: RenderedWork, json: string): Record<string, unknown> {
  let spec = frozenSpecs.get(r);
  if (!spec) {
    spec = freezeRendered(structuredClone(r.spec));
    knowSpecJson(spec, json);
    frozenSpecs.set(r, spec);
  }
  return spec;
}

/** Most work versions {@link specIs} remembers (past it, it starts afresh). */
const SPEC_MEMO_MAX = 50_000;
/** Work version (`<uid>/<generation>`) → the rendered spec (canonical JSON) its spec was found equal to. */
const specMemo = new Map<string, string>();

/**
 * Whether work `w`'s spec is `json` (a rendered spec as canonical JSON), remembered per work
 * version: a ManifestWork's generation moves with its spec, so a work whose uid and generation
 * were found equal to the same rendered spec before is not serialised again. A placement's run
 * compares every current cluster's works with the rendered ones, and each is some 30 KB for a
 * namespace of 50 objects: without this, every run at 1,000 clusters serialised 30 MB.
 */
function specIs(w: KubeObject, json: string): boolean {
  const key = `${w.metadata.uid}/${w.metadata.generation ?? 1}`;
  if (specMemo.get(key) === json) return true;
  if (storedSpecJson(w) !== json) return false;
  if (specMemo.size >= SPEC_MEMO_MAX) specMemo.clear();
  specMemo.set(key, json);
  return true;
}

/** A condition without `observedGeneration` (a binding's conditions are not about the placement's generation). */
function withoutGeneration(c: Omit<Condition, "lastTransitionTime">): Omit<Condition, "lastTransitionTime"> {
  const out = { ...c };
  delete out.observedGeneration;
  return out;
}

function pickAnnotations(w: KubeObject, r: RenderedWork): Record<string, string> {
  const a = w.metadata.annotations ?? {};
  const out = Object.fromEntries(Object.keys(r.annotations).map((k) => [k, a[k] ?? ""]));
  // Karmada's applied-overrides annotations: a stored one the rendering no longer has differs too.
  for (const k of APPLIED_OVERRIDE_ANNOTATIONS) if (a[k] !== undefined && r.annotations[k] === undefined) out[k] = a[k];
  return out;
}

/** `annotations` without `keys`. */
function withoutKeys(annotations: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  const out = { ...(annotations ?? {}) };
  for (const k of keys) delete out[k];
  return out;
}

/**
 * The write that makes a placement's binding in `cluster` say `spec` (created, or updated from
 * `b`); a create given `status` carries it (`withStatus`: the binding is born with the status
 * the run computed for it, as KubeFleet's rollout controller and work generator leave it after
 * its create, where a create and a status write would take two commits).
 */
function bindingWrite(
  ref: PlacementRef,
  def: KindDefinition,
  b: KubeObject | undefined,
  cluster: string,
  spec: Record<string, unknown>,
  placement: KubeObject,
  status?: Record<string, unknown>,
): ManyWrite {
  const name = bindingName(ref, cluster);
  const body = {
    apiVersion: `${FLEET_GROUP}/v1beta1`,
    kind: def.kind,
    metadata: {
      ...(b?.metadata ?? {}),
      name,
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      labels: { ...(b?.metadata.labels ?? {}), [PLACEMENT_TRACKING_LABEL]: ref.name, [TARGET_CLUSTER_LABEL]: cluster },
      ownerReferences: [
        {
          apiVersion: `${FLEET_GROUP}/v1beta1`,
          kind: kindsOf(ref).placement.kind,
          name: placement.metadata.name,
          uid: placement.metadata.uid!,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec,
    ...(!b && status ? { status } : {}),
  };
  return {
    namespace: ref.namespace,
    name,
    req: b ? { verb: "update", body } : { verb: "create", body, ...(status ? { withStatus: true as const } : {}) },
    known: b ?? null,
  };
}

async function writeStatus(env: Env, ref: PlacementRef, placement: KubeObject, status: Record<string, unknown>): Promise<PlacementRunOutcome> {
  return (await writeStatusOf(env, ref, placement, status)).outcome;
}

/** The clusters of a `placementStatuses` in order, as one string (unfilled slots as ""). */
function placementStatusesShape(statuses: unknown): string {
  return ((statuses ?? []) as { clusterName?: string }[]).map((s) => s.clusterName ?? "").join("\n");
}

/**
 * Writes the placement's status when it differs from the stored one: `moved` says whether it does
 * (known from what the run computed again), else the two are compared whole.
 * @returns the outcome, and the placement as written (none when nothing was)
 */
async function writeStatusOf(
  env: Env,
  ref: PlacementRef,
  placement: KubeObject,
  status: Record<string, unknown>,
  moved?: boolean,
): Promise<{ outcome: PlacementRunOutcome; written?: KubeObject }> {
  if (moved === false || (moved === undefined && canonical(status) === canonical(placement.status ?? {}))) return { outcome: {} };
  const r = await racing(() =>
    admittedStoreOf(env, kindsOf(ref).placement).write(
      ref.namespace,
      ref.name,
      { verb: "update", subresource: "status", body: { ...placement, status } },
      { known: placement },
    ),
  );
  return r === "lost" ? { outcome: { rerun: true } } : r ? { outcome: {}, written: r } : { outcome: {} };
}

// ---------------------------------------------------------------------------------------------
// What wakes a placement.

/**
 * What a change owes the placement controller: a run of one placement (`now`: before the write
 * returns, its own write or a staged update run's started cluster; `prompt`: at once, without the
 * writer waiting, an eviction decided or a binding's refusal mark changed; neither: a notification,
 * run within the object's share of time), an object its selectors may select, or a cluster.
 */
export type PlacementOwed =
  | { namespace: string; name: string; now?: true; prompt?: true }
  | { object: { group: string; kind: string; namespace: string; name: string; labels: (Record<string, string> | null)[] } }
  | { cluster: string; relabeled?: true };

/** The clusters of a staged update run's stages whose `Started` condition is True (KubeFleet's `stagesStatus[].clusters[]`). */
function startedClusters(run: KubeObject): Set<string> {
  const stages = (run.status as { stagesStatus?: { clusters?: { clusterName: string; conditions?: Condition[] }[] }[] } | undefined)?.stagesStatus ?? [];
  const out = new Set<string>();
  for (const st of stages)
    for (const c of st.clusters ?? []) if (c.conditions?.some((x) => x.type === "Started" && x.status === "True")) out.add(c.clusterName);
  return out;
}

/** Whether an eviction carries its Executed condition (decided, executed or refused). */
const executedSet = (e: KubeObject) => ((e.status?.conditions ?? []) as Condition[]).some((c) => c.type === EVICTION_EXECUTED);

const isPlacementKind = (def: KindDefinition) => def.group === FLEET_GROUP && (def.kind === "ClusterResourcePlacement" || def.kind === "ResourcePlacement");

/**
 * The ManagedCluster fields whose change wakes placements: its labels, taints (OCM's unavailable
 * and unreachable taints follow its Available condition, in the same write), acceptance and
 * deletion. An agent's status report that changes only its capacity, allocatable or claims wakes
 * none (a placement reads them at its next run): such a report's outbox row stays the scheduler's
 * alone to take over, and an agent's write never waits on a list of the placements.
 */
function schedulingView(mc: KubeObject | null): unknown {
  if (!mc) return null;
  const spec = (mc.spec ?? {}) as { taints?: unknown; hubAcceptsClient?: unknown };
  return {
    labels: mc.metadata.labels ?? {},
    deleting: !!mc.metadata.deletionTimestamp,
    taints: ((spec.taints ?? []) as { key: string; value?: string; effect: string }[]).map((t) => [t.key, t.value ?? "", t.effect]),
    accepts: spec.hubAcceptsClient ?? null,
  };
}

/**
 * What a committed change owes placements:
 * - a placement created, its spec changed (generation) or its deletion started: its run, awaited;
 *   removed, or its finalizer removed by someone else: a run shortly after;
 * - a ManifestWork of a placement (its tracking label) whose status changed or that was deleted:
 *   its placement's run shortly after;
 * - a ManagedCluster whose labels, taints, acceptance or deletion changed ({@link schedulingView}): the placements it may join or leave;
 * - any other object of a kind a placement may select: the placements whose selectors may match it
 *   (before or after the change).
 */
export function planPlacement(change: Change): PlacementOwed | null {
  const { def, namespace, name, before, after } = change;
  if (isPlacementKind(def)) return ownChangeRun(namespace, name, before, after, namespace ? RP_CLEANUP_FINALIZER : CRP_CLEANUP_FINALIZER);
  if (def === ManifestWorkKind) {
    const w = after ?? before;
    const tracking = w?.metadata.labels?.[PLACEMENT_TRACKING_LABEL];
    if (!tracking) return null;
    const ns = w?.metadata.labels?.[PARENT_NAMESPACE_LABEL] ?? "";
    const placementName = ns && tracking.startsWith(`${ns}.`) ? tracking.slice(ns.length + 1) : tracking;
    if (!after || (after.metadata.deletionTimestamp && !before?.metadata.deletionTimestamp)) return { namespace: ns, name: placementName };
    if (before && !deepEqual(before.status ?? null, after.status ?? null)) return { namespace: ns, name: placementName };
    return null;
  }
  if (def.group === FLEET_GROUP && (def.kind === "ClusterStagedUpdateRun" || def.kind === "StagedUpdateRun")) {
    // A staged update run's cluster started (in the status write after its binding was bound to
    // the run's snapshot): the placement renders that cluster's works now, owed by that commit, so
    // a crash before the run does not leave the cluster bound without them (src/fleet/updaterun).
    const placementName = (after?.spec as { placementName?: string } | undefined)?.placementName;
    if (!placementName || !after) return null;
    const startedBefore = before ? startedClusters(before) : new Set<string>();
    return [...startedClusters(after)].some((c) => !startedBefore.has(c)) ? { namespace, name: placementName, now: true } : null;
  }
  if (def.group === FLEET_GROUP && def.kind === ClusterResourceBindingKind.kind) {
    // An automatic eviction's refusal put on the binding or taken off (src/fleet/eviction-unreachable.ts
    // `markBinding`, the only writer of the annotation): the placement's status shows it, at once.
    const mark = (o: KubeObject | null) => o?.metadata.annotations?.[EVICTION_BLOCKED_ANNOTATION] ?? null;
    const placementName = (after ?? before)?.metadata.labels?.[PLACEMENT_TRACKING_LABEL];
    return placementName && after && mark(before) !== mark(after) ? { namespace: "", name: placementName, prompt: true } : null;
  }
  if (def.group === FLEET_GROUP && def.kind === ClusterResourcePlacementEvictionKind.kind) {
    // An eviction decided (its Executed condition set, in the write after its binding's deletion
    // or refusal mark): the placement runs at once, owed by that commit, so a crash before the run
    // does not lose it (src/fleet/eviction.ts).
    const placementName = (after?.spec as PlacementEvictionSpec | undefined)?.placementName;
    return placementName && after && executedSet(after) && !(before && executedSet(before)) ? { namespace: "", name: placementName, prompt: true } : null;
  }
  if (def === ManagedClusterKind) {
    if (deepEqual(schedulingView(before), schedulingView(after))) return null;
    // A label change re-renders the placements the cluster has (overrides select clusters and read labels by them).
    return before && after && !deepEqual(before.metadata.labels ?? {}, after.metadata.labels ?? {}) ? { cluster: name, relabeled: true } : { cluster: name };
  }
  if (isKindDisabled(def) || def.conversion) return null;
  const labelsOf = (o: KubeObject | null) => (o ? (o.metadata.labels ?? {}) : null);
  if (before && after && deepEqual(before.metadata.labels ?? {}, after.metadata.labels ?? {}) && deepEqual(stripped(before), stripped(after))) return null;
  return { object: { group: def.group, kind: def.kind, namespace, name, labels: [labelsOf(before), labelsOf(after)] } };
}

/** An object without what never reaches a member cluster (a status-only change wakes no placement). */
function stripped(o: KubeObject): unknown {
  const { status: _s, metadata, ...rest } = o as KubeObject & { status?: unknown };
  const { resourceVersion: _r, managedFields: _m, generation: _g, ...meta } = metadata as unknown as Record<string, unknown>;
  return { ...rest, metadata: meta };
}

/**
 * Whether `spec`'s selectors may select an object, before or after its change (`object.labels`:
 * its labels before and after, null where absent). `namespaceLabels` are the labels of the
 * object's namespace (for a Namespace selected by a label selector with its content); undefined:
 * unknown, and such a selector is taken to match.
 */
export function mayMatch(
  spec: PlacementSpec,
  isCRP: boolean,
  object: { group: string; kind: string; namespace: string; name: string; labels: (Record<string, string> | null)[] },
  namespaceLabels?: Record<string, string>,
): boolean {
  const selectors: ResourceSelectorTerm[] = spec.resourceSelectors ?? [];
  const labelMatch = (s: ResourceSelectorTerm) =>
    s.name
      ? s.name === object.name
      : !s.labelSelector || object.labels.some((l) => l !== null && matchesLabelSelector(s.labelSelector as LabelSelectorInput, l));
  const nwrs = selectors.find((s) => s.group === "" && s.kind === "Namespace" && s.selectionScope === "NamespaceWithResourceSelectors");
  for (const s of selectors) {
    const isNs = s.group === "" && s.kind === "Namespace";
    if (s.group === object.group && s.kind === object.kind) {
      if (!object.namespace && labelMatch(s)) return true;
      if (object.namespace && (!isCRP || (nwrs && nwrs.name === object.namespace)) && labelMatch(s)) return true;
    }
    if (isCRP && isNs && object.namespace && (s.selectionScope ?? "NamespaceWithResources") === "NamespaceWithResources") {
      if (s.name) {
        if (s.name === object.namespace) return true;
      } else if (!s.labelSelector || namespaceLabels === undefined || matchesLabelSelector(s.labelSelector as LabelSelectorInput, namespaceLabels)) return true;
    }
    if (
      isCRP &&
      isNs &&
      object.kind === "Namespace" &&
      object.group === "" &&
      (s.selectionScope ?? "NamespaceWithResources") === "NamespaceWithResources" &&
      labelMatch(s)
    )
      return true;
  }
  return false;
}

/**
 * Whether a change of ManagedCluster `mc` (null: removed) may change a placement's clusters (from
 * that one cluster alone), or, `relabeled`, what its overrides render for a cluster it has.
 */
export function clusterMayMatter(placement: KubeObject, clusterName: string, mc: KubeObject | null, relabeled = false): boolean {
  const spec = (placement.spec ?? {}) as PlacementSpec;
  const policy: PlacementPolicy = spec.policy ?? { placementType: "PickAll" };
  const has = ((placement.status?.placementStatuses ?? []) as { clusterName?: string }[]).some((s) => s.clusterName === clusterName);
  if (!mc) return has;
  // Only whether it is eligible and where it is matter here, not the date in an ineligible cluster's reason.
  const m = memberClusterOf(mc, 0);
  if (has) return m.leaving || relabeled;
  if (!m.eligible) return false;
  if (policy.placementType === "PickFixed") return (policy.clusterNames ?? []).includes(clusterName);
  const terms = policy.affinity?.clusterAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.clusterSelectorTerms ?? [];
  if (terms.length > 0 && !terms.some((t) => termMatches(t, m))) return false;
  if (untoleratedTaint(m, policy.tolerations)) return false;
  if (policy.placementType === "PickN") {
    const count = ((placement.status?.placementStatuses ?? []) as { clusterName?: string }[]).filter((s) => s.clusterName).length;
    return count < (policy.numberOfClusters ?? 0);
  }
  return true;
}

/** The placements a change of one object or cluster may concern (they are listed; the fleet's objects are not). */
async function placementsFor(
  env: Env,
  owed: Exclude<PlacementOwed, { namespace: string }>,
  mc: KubeObject | null | undefined,
  target?: HookTarget,
): Promise<PlacementRef[]> {
  const out: PlacementRef[] = [];
  const ns = "object" in owed ? owed.object.namespace : undefined;
  // The isolate's lists, checked by one read of the placements' change counter (src/fleet/placement-lists.ts).
  const lists = await placementLists(env, target);
  const crps = lists.crps;
  const rps = "object" in owed && !ns ? [] : ns === undefined ? lists.rps : inNamespace(lists.rps, ns);
  // The object's namespace's labels, read once when a placement selects namespaces by label.
  let nsLabels: Promise<Record<string, string> | undefined> | undefined;
  const namespaceLabels = () =>
    (nsLabels ??= ns
      ? admittedStoreOf(env, NamespaceKind)
          .get("", ns)
          .then((o) => o?.metadata.labels ?? {})
      : Promise.resolve(undefined));
  const byLabel = (p: KubeObject) =>
    ((p.spec as PlacementSpec | undefined)?.resourceSelectors ?? []).some((s) => s.kind === "Namespace" && !s.name && s.labelSelector);
  for (const p of [...crps, ...rps]) {
    const isCRP = !p.metadata.namespace;
    const hit =
      "object" in owed
        ? mayMatch((p.spec ?? {}) as PlacementSpec, isCRP, owed.object, byLabel(p) ? await namespaceLabels() : undefined)
        : clusterMayMatter(p, owed.cluster, mc === undefined ? null : mc, owed.relabeled === true);
    if (hit) out.push({ namespace: p.metadata.namespace ?? "", name: p.metadata.name });
  }
  return out;
}

/**
 * An object's change that no placement of the isolate's lists may concern (src/fleet/placement-lists.ts
 * `cachedPlacementLists`, judged by {@link mayMatch} as {@link placementsFor} judges it, a
 * namespace's labels taken to match): the placements' change counter and the value the lists were
 * read at, under which the hook's run would notify nobody (`AfterCommitHook.quiet`). Null for
 * other changes, or when a placement may concern it.
 */
export function quietPlacements(owed: PlacementOwed): CounterAt | null {
  const cached = cachedPlacementLists();
  if (!cached || !("object" in owed)) return null;
  const ns = owed.object.namespace;
  const candidates = ns ? [...cached.lists.crps, ...inNamespace(cached.lists.rps, ns)] : cached.lists.crps;
  if (candidates.some((p) => mayMatch((p.spec ?? {}) as PlacementSpec, !p.metadata.namespace, owed.object, undefined))) return null;
  return { counter: PLACEMENT_CHANGE_COUNTER, value: cached.counter };
}

/** The Durable Object of a placement: the replica set object class, named `placement:<namespace>/<name>`. */
function stub(env: Env, ref: PlacementRef) {
  return env.REPLICASETS.getByName(`placement:${ref.namespace}/${ref.name}`);
}

/** The prefix of a placement's target namespace in its object (a namespace never holds ':'). */
export const PLACEMENT_TARGET_PREFIX = "placement:";

async function reconcileNow(env: Env, ref: PlacementRef): Promise<void> {
  try {
    await stub(env, ref).reconcile(`${PLACEMENT_TARGET_PREFIX}${ref.namespace}`, ref.name);
  } catch (e) {
    console.error(`placement ${trackingValue(ref)}: could not run it; asking for a later run`, e);
    await reconcileSoon(env, ref);
  }
}

/**
 * Asks for a run of each placement of `refs` shortly after (notifications, coalesced in its
 * object): what an override's change owes the placements it may concern (src/overrides/snapshots.ts).
 * A failed notification is logged (the next change or report runs the placement).
 */
export async function notifyPlacements(env: Env, refs: readonly PlacementRef[]): Promise<void> {
  const results = await Promise.allSettled(refs.map((r) => reconcileSoon(env, r)));
  for (const r of results) if (r.status === "rejected") console.error("placement notification failed", r.reason);
}

/** Most notifications one group carries (one call per placement among them). */
const NOTIFY_GROUP_MAX = 500;

/** A notification on its way to a placement's object: which placement, and the change. */
interface Notification {
  ref: PlacementRef;
  change: PlacementWorkChange;
}

/** The notification groups of each placement object namespace binding (one per isolate), made on first use. */
const notifyGroups = new WeakMap<DurableObjectNamespace, CommitGroups<Notification, void>>();

/**
 * Sends a group of notifications: one `notifyPlacement` call per placement among them, in parallel.
 * @throws when a call fails (the group's notifications are then sent again one by one: telling an
 *   object twice of a change is harmless)
 */
async function sendNotifications(env: Env, items: Notification[]): Promise<void[]> {
  const byTarget = new Map<string, Notification[]>();
  for (const n of items) {
    const key = `${n.ref.namespace}/${n.ref.name}`;
    const xs = byTarget.get(key);
    if (xs) xs.push(n);
    else byTarget.set(key, [n]);
  }
  await Promise.all(
    [...byTarget.values()].map((ns) =>
      stub(env, ns[0]!.ref).notifyPlacement(
        `${PLACEMENT_TARGET_PREFIX}${ns[0]!.ref.namespace}`,
        ns[0]!.ref.name,
        ns.map((n) => n.change),
      ),
    ),
  );
  return items.map(() => undefined);
}

/**
 * Asks for a run of the placement shortly after (its object's alarm), without waiting for it,
 * handing over what changed (`change`: the work as stored without its spec, a work removed, or
 * nothing known; `prompt`: run at once). Notifications that come while one is in flight go
 * together when it returns (group commit, src/store/group-commit.ts, as the replica sets' in
 * src/work/replicaset.ts): during a rollout, the reports of many clusters reach the placement's
 * object in a few calls, not one each.
 * @throws when the object cannot be reached
 */
async function reconcileSoon(env: Env, ref: PlacementRef, change: PlacementWorkChange = {}): Promise<void> {
  let groups = notifyGroups.get(env.REPLICASETS);
  if (!groups) {
    groups = new CommitGroups((items: Notification[]) => sendNotifications(env, items), NOTIFY_GROUP_MAX);
    notifyGroups.set(env.REPLICASETS, groups);
  }
  await groups.run({ ref, change });
}

/** What a committed change of a placement's work hands its object ({@link PlacementWorkChange}); nothing for another change. */
function workChangeOf(change: Change | undefined): PlacementWorkChange {
  if (change?.def !== ManifestWorkKind) return {};
  return change.after ? { work: withoutSpec(change.after) } : { removed: { namespace: change.namespace, name: change.name } };
}

/**
 * The placement controller's after-commit hook ({@link planPlacement}): runs the placement a
 * write of it calls for before the write returns, and notifies the placements an object's, a
 * cluster's or a work's change may concern. Idempotent: a run reads the current state.
 */
export const placementHook: AfterCommitHook<PlacementOwed> = {
  name: "fleet-placements",
  plan: planPlacement,
  quiet: quietPlacements,
  async run(env, owed, target) {
    if ("namespace" in owed) {
      const ref = { namespace: owed.namespace, name: owed.name };
      if (!owed.now) return reconcileSoon(env, ref, owed.prompt ? { prompt: true } : workChangeOf(target.change));
      await reconcileNow(env, ref);
      return {
        rewrote: target.resource === `${FLEET_GROUP}/${kindsOf(ref).placement.plural}` && target.namespace === owed.namespace && target.name === owed.name,
      };
    }
    const mc =
      "cluster" in owed ? (target.change ? target.change.after : await admittedStoreOf(env, ManagedClusterKind).getCommitted("", owed.cluster)) : undefined;
    const refs = await placementsFor(env, owed, mc, target);
    const results = await Promise.allSettled(refs.map((r) => reconcileSoon(env, r, { prompt: true })));
    for (const r of results) if (r.status === "rejected") console.error("placement notification failed", r.reason);
  },
};
