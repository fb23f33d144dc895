/**
 * The hub's add-on manager (OCM's addon-manager, `pkg/addon` of open-cluster-management-io/ocm,
 * and the addon-framework's agent deploy and status controllers), for template add-ons:
 *
 * - {@link runClusterManagementAddOn}: installStrategy `Placements` creates a ManagedClusterAddOn
 *   (owned by the ClusterManagementAddOn) in each decided cluster's namespace and deletes those it
 *   created in clusters no longer decided; it resolves each cluster's configs (the
 *   ManagedClusterAddOn's `spec.configs`, over the placement strategy's `configs`, over the
 *   `supportedConfigs` defaults) with their spec hashes and rolls a change out by the placement's
 *   `rolloutStrategy` (src/work/rollout.ts, the same engine as ManifestWorkReplicaSets): a cluster
 *   chosen by the rollout gets the new `status.configReferences[].desiredConfig`. A deleted
 *   ClusterManagementAddOn takes every ManagedClusterAddOn of its name with it.
 * - {@link runManagedClusterAddOn}: renders the template (src/addons/render.ts) into the work
 *   `addon-<name>-deploy-0` when the desired configs are current, deletes it when the
 *   ManagedClusterAddOn goes, and writes OCM's status (conditions Configured, ManifestApplied,
 *   Available for `Customized`/`None` health, Progressing, RegistrationApplied when nothing is to
 *   register; healthCheck, relatedObjects, configReferences with lastAppliedConfig, namespace).
 *
 * As OCM's manager, it acts only on ManagedClusterAddOns in a ManagedCluster's namespace: one in
 * any other namespace gets no work and no status (its configs would be rendered where whoever
 * created it reads them). A registered add-on's hub permissions follow the template resolved for
 * it (src/addons/token-registration.ts `syncHubPermissions`), and go with it.
 *
 * Triggers (src/addons/controller.ts): writes of the add-on kinds and of add-on works' status, and
 * placement decision changes ({@link addonsForPlacements}). Each run reads
 * only the objects of its add-on (by name) and the placements it names, never every cluster.
 */
import { clock } from "../clock.ts";
import { setCondition, type Condition, type KubeObject } from "../k8s/meta.ts";
import { ADDON_GROUP, AddOnDeploymentConfigKind, AddOnTemplateKind, ClusterManagementAddOnKind, ManagedClusterAddOnKind } from "../kinds/addon.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import { PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import { sha256Hex } from "../kinds/bootstraptoken.ts";
import { PLACEMENT_LABEL } from "../scheduling/grouping.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { sharedRead, type HookTarget } from "../store/hooks.ts";
import { decisionGroups } from "../work/replicaset.ts";
import { computeRollout, type ClusterRolloutStatus, type DecisionGroup, type RolloutStrategy } from "../work/rollout.ts";
import { canonicalJson as canonical } from "../k8s/canonical-json.ts";
import { racing } from "../k8s/racing.ts";
import type { Env } from "../env.ts";
import { setSchedulerTimer } from "../timers.ts";
import { availability, manifestApplied, type AddonCondition } from "./health.ts";
import { syncHubPermissions, templateOf } from "./token-registration.ts";
import { addonOverrides, applyAddonOverrides, isOverrideConfig, type AddonOverrides } from "./overrides.ts";
import { APPLIED_OVERRIDES_ANNOTATION } from "../work/replicaset/overrides.ts";
import { APPLIED_OVERRIDE_ANNOTATIONS } from "../fleet/overrides.ts";
import {
  ADDON_NAME_LABEL,
  deployWorkName,
  HEALTH_CHECK_MODE_ANNOTATION,
  installNamespaceOf,
  probedWorkloads,
  renderDeployWork,
  type HealthCheckMode,
} from "./render.ts";

type Json = Record<string, unknown>;

/** A config an add-on uses: `{group, resource, namespace?, name}`. */
export interface ConfigRef {
  group: string;
  resource: string;
  namespace?: string;
  name: string;
}

/** A config with the hash of its spec (OCM's `ConfigSpecHash`), as `desiredConfig` holds it. */
export interface DesiredConfig extends ConfigRef {
  specHash: string;
}

/** One placement of a ClusterManagementAddOn's `installStrategy.placements[]`. */
export interface PlacementStrategy {
  namespace: string;
  name: string;
  configs?: ConfigRef[];
  rolloutStrategy?: RolloutStrategy;
}

/** The parts of a ClusterManagementAddOn's spec the manager reads. */
export interface CmaSpec {
  supportedConfigs?: { group?: string; resource: string; defaultConfig?: { namespace?: string; name: string } | null }[];
  installStrategy?: { type?: string; placements?: PlacementStrategy[] };
  addOnMeta?: Json;
}

const key = (c: { group?: string; resource: string }) => `${c.group ?? ""}/${c.resource}`;

/** The OCM owner reference of an object (controller, blocking its owner's foreground deletion). */
function ownerRef(obj: KubeObject) {
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name, uid: obj.metadata.uid, controller: true, blockOwnerDeletion: true };
}

/**
 * The configs of one add-on on one cluster, by `group/resource`: the ManagedClusterAddOn's own
 * `spec.configs` over the placement strategy's over the ClusterManagementAddOn's defaults (OCM's
 * order of precedence).
 */
export function resolveConfigs(cma: CmaSpec, placement: PlacementStrategy | undefined, mcaConfigs: ConfigRef[] | undefined): ConfigRef[] {
  const out = new Map<string, ConfigRef>();
  for (const s of cma.supportedConfigs ?? [])
    if (s.defaultConfig)
      out.set(key(s), {
        group: s.group ?? "",
        resource: s.resource,
        ...(s.defaultConfig.namespace ? { namespace: s.defaultConfig.namespace } : {}),
        name: s.defaultConfig.name,
      });
  for (const c of placement?.configs ?? []) out.set(key(c), { ...c, group: c.group ?? "" });
  for (const c of mcaConfigs ?? []) out.set(key(c), { ...c, group: c.group ?? "" });
  return [...out.values()].sort((a, b) => key(a).localeCompare(key(b)));
}

/** Reads a config object (an AddOnTemplate or AddOnDeploymentConfig); null when absent or of another kind. */
async function readConfig(env: Env, ref: ConfigRef): Promise<KubeObject | null> {
  if (ref.group !== ADDON_GROUP) return null;
  if (ref.resource === "addontemplates") return admittedStoreOf(env, AddOnTemplateKind).get("", ref.name);
  if (ref.resource === "addondeploymentconfigs") return admittedStoreOf(env, AddOnDeploymentConfigKind).get(ref.namespace ?? "", ref.name);
  return null;
}

/** The desired configs (with spec hashes) of `refs`; a config that does not exist is left out. */
async function hashed(env: Env, refs: ConfigRef[], cache: Map<string, DesiredConfig | null>): Promise<DesiredConfig[]> {
  const out: DesiredConfig[] = [];
  for (const r of refs) {
    const id = `${key(r)}/${r.namespace ?? ""}/${r.name}`;
    let d = cache.get(id);
    if (d === undefined) {
      const obj = await readConfig(env, r);
      d = obj ? { ...r, specHash: await sha256Hex(canonical(obj.spec ?? {})) } : null;
      cache.set(id, d);
    }
    if (d) out.push(d);
  }
  return out;
}

interface ConfigReference {
  group: string;
  resource: string;
  namespace?: string;
  name: string;
  lastObservedGeneration?: number;
  desiredConfig?: { namespace?: string; name: string; specHash: string } | null;
  lastAppliedConfig?: { namespace?: string; name: string; specHash: string } | null;
}

function specHash(c: DesiredConfig) {
  return { ...(c.namespace ? { namespace: c.namespace } : {}), name: c.name, specHash: c.specHash };
}

/** What identifies a config reference across runs: its group/resource, and an override's name (several overrides share one group/resource). */
const refKey = (c: { group?: string; resource: string; name: string }) => (isOverrideConfig(c) ? `${key(c)}/${c.name}` : key(c));

/** `status.configReferences` for `desired`, keeping each config's `lastAppliedConfig`. */
function configReferences(desired: DesiredConfig[], current: ConfigReference[] | undefined): ConfigReference[] {
  return desired.map((d) => {
    const before = current?.find((c) => refKey(c) === refKey(d));
    return {
      group: d.group,
      resource: d.resource,
      ...(d.namespace ? { namespace: d.namespace } : {}),
      name: d.name,
      lastObservedGeneration: before?.lastObservedGeneration ?? 0,
      desiredConfig: specHash(d),
      ...(before?.lastAppliedConfig ? { lastAppliedConfig: before.lastAppliedConfig } : {}),
    };
  });
}

const sameDesired = (refs: ConfigReference[] | undefined, desired: DesiredConfig[]) =>
  canonical((refs ?? []).map((r) => ({ k: refKey(r), d: r.desiredConfig ?? null }))) === canonical(desired.map((d) => ({ k: refKey(d), d: specHash(d) })));

const allApplied = (refs: ConfigReference[] | undefined) =>
  (refs ?? []).every((r) => r.desiredConfig && canonical(r.desiredConfig) === canonical(r.lastAppliedConfig ?? null));

/** The decided clusters of each placement strategy, in its decision groups (`missing`: its Placement does not exist). */
export async function decided(
  env: Env,
  strategies: PlacementStrategy[],
): Promise<{ strategy: PlacementStrategy; groups: DecisionGroup[]; missing: boolean }[]> {
  const out: { strategy: PlacementStrategy; groups: DecisionGroup[]; missing: boolean }[] = [];
  for (const s of strategies) {
    const placement = await admittedStoreOf(env, PlacementKind).get(s.namespace, s.name);
    const pds = placement
      ? (await admittedStoreOf(env, PlacementDecisionKind).list(s.namespace)).items.filter((d) => d.metadata.labels?.[PLACEMENT_LABEL] === s.name)
      : [];
    out.push({ strategy: s, groups: placement ? decisionGroups(placement, pds) : [], missing: !placement });
  }
  return out;
}

/** A cluster's rollout status from its ManagedClusterAddOn (ToApply unless its desired configs are `desired`). */
function addonRolloutStatus(cluster: string, mca: KubeObject | undefined, desired: DesiredConfig[], nowMs: number): ClusterRolloutStatus | null {
  const status = (mca?.status ?? {}) as { configReferences?: ConfigReference[]; conditions?: Condition[] };
  if (!mca || !sameDesired(status.configReferences, desired)) return null;
  const progressing = status.conditions?.find((c) => c.type === "Progressing");
  const since = progressing?.lastTransitionTime ? Date.parse(progressing.lastTransitionTime) : nowMs;
  if (allApplied(status.configReferences)) return { cluster, status: "Succeeded", sinceMs: since };
  if (progressing?.reason === "Failed") return { cluster, status: "Failed", sinceMs: since };
  return { cluster, status: "Progressing", sinceMs: since };
}

/**
 * One run of the manager for the ClusterManagementAddOn `name` (see the module comment).
 * The ManagedClusterAddOns whose configs it rolls out run inside this call. `cleanUp` false (a run
 * for a ManagedClusterAddOn's change) leaves the add-on's objects alone when the
 * ClusterManagementAddOn does not exist: one may be created before its ClusterManagementAddOn.
 * @throws errors of D1 or an unexpected write failure (the caller's outbox row keeps the work)
 */
export async function runClusterManagementAddOn(
  env: Env,
  name: string,
  nowMs: number,
  cleanUp = true,
  recheck: RecheckAddon = schedulerRecheck(env),
): Promise<void> {
  // A run asked for while one of the same add-on is in progress in this isolate (its own writes'
  // hooks, or another request) is folded into that run: it runs once more when it ends, so its
  // writes never set off a run per cluster they touch.
  const inProgress = running.get(name);
  if (inProgress) {
    inProgress.again ||= cleanUp ? "cleanUp" : "again";
    return;
  }
  const state: { again: false | "again" | "cleanUp" } = { again: false };
  running.set(name, state);
  let recheckAt: number;
  try {
    let passes = 0;
    let clean = cleanUp;
    for (;;) {
      state.again = false;
      recheckAt = await runOnce(env, name, nowMs, clean);
      // Set (or not) by the runs asked for while this pass ran.
      const asked = state.again as false | "again" | "cleanUp";
      if (!asked || ++passes > MAX_EXTRA_PASSES) break;
      clean = asked === "cleanUp";
    }
  } finally {
    running.delete(name);
  }
  // A rollout waiting on time (minSuccessTime, progressDeadline): run again when it is due.
  if (Number.isFinite(recheckAt)) await recheck(name, recheckAt);
}

/**
 * Asks for a run of the add-on `name` at `at` (epoch milliseconds): a rollout's timer
 * (minSuccessTime, progressDeadline, as OCM's rollout helpers requeue after them).
 */
export type RecheckAddon = (name: string, at: number) => Promise<void>;

/** The scheduler object's `addon:<name>` timer for an add-on's run (the manifest's `addon` timer, src/controllers.ts). */
function schedulerRecheck(env: Env): RecheckAddon {
  return (name, at) => setSchedulerTimer(env, `addon:${name}`, at);
}

/** The add-ons whose run is in progress in this isolate, and whether another run was asked for meanwhile. */
const running = new Map<string, { again: false | "again" | "cleanUp" }>();
/** Most extra passes one run makes for the runs asked for during it (the next trigger runs it again anyway). */
const MAX_EXTRA_PASSES = 3;

/** One pass of {@link runClusterManagementAddOn}. */
async function runOnce(env: Env, name: string, nowMs: number, cleanUp: boolean): Promise<number> {
  let recheckAt = Infinity;
  const cma = await admittedStoreOf(env, ClusterManagementAddOnKind).get("", name);
  const existing = await admittedStoreOf(env, ManagedClusterAddOnKind).listNamed(name);
  const mcas = new Map(existing.map((m) => [m.metadata.namespace!, m]));
  const store = admittedStoreOf(env, ManagedClusterAddOnKind);
  if (!cma || cma.metadata.deletionTimestamp) {
    if (!cleanUp) return recheckAt;
    // Every ManagedClusterAddOn of the add-on goes with it (OCM owns them all by the ClusterManagementAddOn).
    for (const m of existing)
      if (!m.metadata.deletionTimestamp)
        await racing(() => store.write(m.metadata.namespace!, name, { verb: "delete", preconditions: { uid: m.metadata.uid } }));
    return recheckAt;
  }
  const spec = (cma.spec ?? {}) as CmaSpec;
  const strategy = spec.installStrategy ?? {};
  const touched = new Set<string>();
  const hashes = new Map<string, DesiredConfig | null>();
  const progressions: Json[] = [];
  if (strategy.type === "Placements") {
    const placed = await decided(env, strategy.placements ?? []);
    const owner = new Map<string, PlacementStrategy>();
    for (const p of placed) for (const g of p.groups) for (const c of g.clusters) if (!owner.has(c)) owner.set(c, p.strategy);
    // Install where decided.
    for (const c of owner.keys()) {
      if (mcas.has(c)) continue;
      const body = {
        apiVersion: `${ADDON_GROUP}/v1alpha1`,
        kind: "ManagedClusterAddOn",
        metadata: { name, namespace: c, ownerReferences: [ownerRef(cma)] },
        spec: {},
      };
      const r = await racing(() => store.write(c, name, { verb: "create", body }));
      if (r && r !== "lost") mcas.set(c, r);
    }
    // Uninstall what this manager installed where no placement decides it any more. A missing
    // Placement (not one without decisions) uninstalls nothing, as for replica sets: one deleted
    // by mistake, or not restored yet, does not tear the agents down.
    const missing = placed.some((p) => p.missing);
    for (const [c, m] of missing ? [] : mcas) {
      if (owner.has(c) || m.metadata.deletionTimestamp) continue;
      if (!(m.metadata.ownerReferences ?? []).some((o) => o.uid === cma.metadata.uid)) continue;
      await racing(() => store.write(c, name, { verb: "delete", preconditions: { uid: m.metadata.uid } }));
      mcas.delete(c);
    }
    // Configs (and the overrides that apply to each cluster: src/addons/overrides.ts), rolled out per placement by its strategy.
    const overrides = await addonOverrides(env, name);
    for (const p of placed) {
      const clusters = [...new Set(p.groups.flatMap((g) => g.clusters))].filter((c) => owner.get(c) === p.strategy && mcas.has(c));
      const desired = new Map<string, DesiredConfig[]>();
      const statuses: ClusterRolloutStatus[] = [];
      for (const c of clusters) {
        const m = mcas.get(c)!;
        const d = [
          ...(await hashed(env, resolveConfigs(spec, p.strategy, (m.spec as { configs?: ConfigRef[] } | undefined)?.configs), hashes)),
          ...(await overrides.configsOf(c)),
        ];
        desired.set(c, d);
        const s = addonRolloutStatus(c, m, d, nowMs);
        if (s) statuses.push(s);
      }
      const groups = p.groups.map((g) => ({ ...g, clusters: g.clusters.filter((c) => desired.has(c)) }));
      const rollout = computeRollout(p.strategy.rolloutStrategy, groups, statuses, nowMs);
      if (rollout.recheckAfterMs !== undefined) recheckAt = Math.min(recheckAt, nowMs + rollout.recheckAfterMs);
      for (const c of rollout.toApply) {
        const m = mcas.get(c)!;
        const status = {
          ...((m.status ?? {}) as Json),
          configReferences: configReferences(desired.get(c)!, (m.status as { configReferences?: ConfigReference[] } | undefined)?.configReferences),
        };
        const r = await racing(() => store.write(c, name, { verb: "update", subresource: "status", body: { ...m, status } }, { known: m }));
        if (r && r !== "lost") {
          mcas.set(c, r);
          touched.add(c);
        }
      }
      const succeeded = statuses.filter((s) => s.status === "Succeeded").length;
      const failed = statuses.filter((s) => s.status === "Failed").length;
      const done = succeeded === clusters.length;
      const sample = (clusters.length > 0 ? desired.get(clusters[0]!)! : await hashed(env, resolveConfigs(spec, p.strategy, undefined), hashes)).filter(
        (d) => !isOverrideConfig(d),
      );
      const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
      const conditions: Condition[] = [];
      setCondition(
        conditions,
        done
          ? {
              type: "Progressing",
              status: "False",
              reason: "Completed",
              message: `${succeeded}/${clusters.length} completed with no errors, ${failed} failed ${rollout.timedOut.length} timeout.`,
            }
          : {
              type: "Progressing",
              status: "True",
              reason: "Progressing",
              message: `${clusters.length - succeeded - failed}/${clusters.length} progressing..., ${failed} failed ${rollout.timedOut.length} timeout.`,
            },
        at,
      );
      progressions.push({
        namespace: p.strategy.namespace,
        name: p.strategy.name,
        configReferences: sample.map((d) => ({ group: d.group, resource: d.resource, desiredConfig: specHash(d) })),
        conditions,
      });
    }
  }
  // The ManagedClusterAddOns whose status still shows an older addOnMeta or supportedConfigs run too.
  const supported = canonical((spec.supportedConfigs ?? []).map((x) => ({ group: x.group ?? "", resource: x.resource })));
  for (const [c, m] of mcas) {
    const st = (m.status ?? {}) as { addOnMeta?: unknown; supportedConfigs?: unknown };
    if (
      !m.metadata.deletionTimestamp &&
      (canonical(st.addOnMeta ?? {}) !== canonical(spec.addOnMeta ?? {}) || canonical(st.supportedConfigs ?? []) !== supported)
    )
      touched.add(c);
  }
  for (const c of touched) await runManagedClusterAddOn(env, c, name, nowMs);
  // The ClusterManagementAddOn's status: its default configs and, per placement, the rollout's progression.
  const defaults = await hashed(env, resolveConfigs({ supportedConfigs: spec.supportedConfigs }, undefined, undefined), hashes);
  const before = (cma.status ?? {}) as { installProgressions?: { conditions?: Condition[] }[] };
  for (const p of progressions) {
    const old = before.installProgressions?.find((x) => (x as Json).namespace === p.namespace && (x as Json).name === p.name)?.conditions ?? [];
    const c = (p.conditions as Condition[])[0]!;
    const kept = old.find((o) => o.type === c.type && o.status === c.status);
    if (kept) c.lastTransitionTime = kept.lastTransitionTime;
  }
  const status = {
    defaultconfigReferences: defaults.map((d) => ({ group: d.group, resource: d.resource, desiredConfig: specHash(d) })),
    installProgressions: progressions,
  };
  if (canonical(status) !== canonical(cma.status ?? {})) {
    await racing(() =>
      admittedStoreOf(env, ClusterManagementAddOnKind).write("", name, { verb: "update", subresource: "status", body: { ...cma, status } }, { known: cma }),
    );
  }
  return recheckAt;
}

/** `annotations` with {@link APPLIED_OVERRIDES_ANNOTATION} naming `snapshots` (removed when none). */
function withApplied(annotations: Record<string, string>, snapshots: string[], karmada: Record<string, string> = {}): Record<string, string> {
  if (snapshots.length > 0) annotations[APPLIED_OVERRIDES_ANNOTATION] = snapshots.join(",");
  else delete annotations[APPLIED_OVERRIDES_ANNOTATION];
  // Karmada's applied-overrides annotations: the rendering's alone.
  for (const k of APPLIED_OVERRIDE_ANNOTATIONS) delete annotations[k];
  return Object.assign(annotations, karmada);
}

/** The AddOnTemplate and AddOnDeploymentConfig of a cluster's configs (`desired`), read; null when not configured or absent. */
export async function configObjects(env: Env, desired: ConfigRef[]): Promise<{ templateRef?: ConfigRef; template: KubeObject | null; adc: KubeObject | null }> {
  const templateRef = desired.find((d) => d.group === ADDON_GROUP && d.resource === "addontemplates");
  const template = templateRef ? await admittedStoreOf(env, AddOnTemplateKind).get("", templateRef.name) : null;
  const configRef = desired.find((d) => d.group === ADDON_GROUP && d.resource === "addondeploymentconfigs");
  const adc = configRef ? await admittedStoreOf(env, AddOnDeploymentConfigKind).get(configRef.namespace ?? "", configRef.name) : null;
  return { ...(templateRef ? { templateRef } : {}), template, adc };
}

/** What a template add-on renders for one cluster ({@link renderAddonWork}). */
export interface AddonWorkRendering {
  /** The deploy work (src/addons/render.ts `renderDeployWork`), the overrides applied; without them when they fail. */
  body: KubeObject;
  /** The ClusterResourceOverrideSnapshots that apply to the cluster, by name. */
  applied: string[];
  /** Karmada's applied-overrides annotations of what its ClusterOverridePolicies applied (empty: none). */
  karmada: Record<string, string>;
  /** Why the overrides fail for the cluster (KubeFleet's message): then nothing is written there. */
  error?: string;
}

/**
 * Renders the template add-on `addon`'s deploy work for `cluster` from its AddOnTemplate and
 * AddOnDeploymentConfig, the cluster's overrides applied all or nothing: the one rendering of the
 * manager's run ({@link runManagedClusterAddOn}) and of the add-on's dry run (src/addons/dry-run.ts).
 * Pure but for the overrides' own reads done before (`overrides`).
 */
export function renderAddonWork(input: {
  addon: string;
  cluster: string;
  template: KubeObject | null;
  adc: KubeObject | null;
  installNamespace?: string;
  owner: { apiVersion: string; kind: string; name: string; uid: string };
  overrides: AddonOverrides;
}): AddonWorkRendering {
  const overridden = overrideRendering(input.overrides, input.cluster);
  const body = renderDeployWork({
    addon: input.addon,
    cluster: input.cluster,
    template: (input.template?.spec ?? {}) as { agentSpec?: Json; registration?: unknown[] },
    config: (input.adc?.spec ?? undefined) as never,
    installNamespace: input.installNamespace,
    owner: input.owner,
    override: overridden.override,
  });
  const error = overridden.error();
  return { body, applied: overridden.applied, karmada: overridden.karmada(), ...(error !== undefined ? { error } : {}) };
}

/**
 * The overrides of `cluster` as a rendering's hook (src/addons/render.ts `override`): what it
 * applied and, once the rendering ran, why it failed (the hook then leaves the manifests as they
 * are, and the caller writes nothing: all or nothing).
 */
function overrideRendering(
  overrides: AddonOverrides,
  cluster: string,
): { override?: (m: unknown[]) => unknown[]; applied: string[]; karmada: () => Record<string, string>; error: () => string | undefined } {
  if (overrides.empty) return { applied: [], karmada: () => ({}), error: () => undefined };
  const co = overrides.forCluster(cluster);
  let failure: string | undefined;
  let karmada: Record<string, string> = {};
  return {
    applied: co.kubefleet.clusterResourceOverrides,
    karmada: () => karmada,
    error: () => failure,
    override(manifests) {
      const r = applyAddonOverrides(co, manifests);
      if (r.error !== undefined) {
        failure = r.error;
        // The rendering goes on without the overrides; the caller writes nothing.
        return manifests;
      }
      karmada = r.karmada;
      return r.manifests;
    },
  };
}

interface McaStatus {
  conditions?: Condition[];
  configReferences?: ConfigReference[];
  [k: string]: unknown;
}

/**
 * One run for the ManagedClusterAddOn `name` in `cluster`'s namespace (see the module comment):
 * its deploy work and its status.
 * @throws errors of D1 or an unexpected write failure
 */
export async function runManagedClusterAddOn(env: Env, cluster: string, name: string, nowMs: number): Promise<void> {
  const works = admittedStoreOf(env, ManifestWorkKind);
  const workName = deployWorkName(name);
  const mca = await admittedStoreOf(env, ManagedClusterAddOnKind).get(cluster, name);
  let work = await admittedStoreOf(env, ManifestWorkKind).get(cluster, workName);
  if (!mca || mca.metadata.deletionTimestamp) {
    if (work && work.metadata.labels?.[ADDON_NAME_LABEL] === name && !work.metadata.deletionTimestamp) {
      await racing(() => works.write(cluster, workName, { verb: "delete", preconditions: { uid: work!.metadata.uid } }));
    }
    // Its hub permissions in other namespaces go with it (those in the cluster's go with their owner).
    await syncHubPermissions(env, cluster, name, null, null);
    return;
  }
  // OCM's manager acts only on ManagedClusterAddOns in a ManagedCluster's namespace (its
  // controllers pass by one whose cluster is not found): one in any other namespace gets no work
  // (whose rendering would show its configs to whoever reads that namespace) and no status, and a
  // work rendered for it before is deleted.
  if (!(await admittedStoreOf(env, ManagedClusterKind).getCommitted("", cluster))) {
    const ours = work?.metadata.labels?.[ADDON_NAME_LABEL] === name && (work.metadata.ownerReferences ?? []).some((o) => o.uid === mca.metadata.uid);
    if (work && ours && !work.metadata.deletionTimestamp)
      await racing(() => works.write(cluster, workName, { verb: "delete", preconditions: { uid: work!.metadata.uid } }));
    return;
  }
  const cma = await admittedStoreOf(env, ClusterManagementAddOnKind).get("", name);
  if (!cma) return;
  const spec = (cma.spec ?? {}) as CmaSpec;
  const status: McaStatus = structuredClone((mca.status ?? {}) as McaStatus);
  const hashes = new Map<string, DesiredConfig | null>();
  const placements = spec.installStrategy?.type === "Placements";
  const overrides = await addonOverrides(env, name, cluster);
  // Manual installs (and ManagedClusterAddOns no placement governs) take their configs at once.
  let desired: DesiredConfig[];
  const current = [
    ...(await hashed(env, resolveConfigs(spec, undefined, (mca.spec as { configs?: ConfigRef[] } | undefined)?.configs), hashes)),
    ...(await overrides.configsOf(cluster)),
  ];
  if (!placements || !(mca.metadata.ownerReferences ?? []).some((o) => o.uid === cma.metadata.uid)) {
    desired = current;
    status.configReferences = configReferences(desired, status.configReferences);
  } else {
    desired = (status.configReferences ?? [])
      .filter((r) => r.desiredConfig)
      .map((r) => ({
        group: r.group,
        resource: r.resource,
        ...(r.desiredConfig!.namespace ? { namespace: r.desiredConfig!.namespace } : {}),
        name: r.desiredConfig!.name,
        specHash: r.desiredConfig!.specHash,
      }));
  }
  const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  const conditions = status.conditions ?? [];
  const set = (c: AddonCondition) => setCondition(conditions, c, at);
  const { templateRef, template, adc } = await configObjects(env, desired);
  const installNamespace = (mca.spec as { installNamespace?: string } | undefined)?.installNamespace;
  const templateSpec = (template?.spec ?? {}) as { agentSpec?: Json; registration?: unknown[] };
  let mode: HealthCheckMode = "Lease";
  if (desired.length > 0) set({ type: "Configured", status: "True", reason: "ConfigurationsConfigured", message: "Configurations configured" });
  if (template) {
    // The configs' content must be what the rollout chose: a config changed since waits for its turn.
    // (The overrides' entries are as fresh as the cluster's overrides now: src/addons/overrides.ts.)
    const fresh = [
      ...(await hashed(
        env,
        desired.filter((d) => !isOverrideConfig(d)),
        new Map(),
      )),
      ...(await overrides.configsOf(cluster)),
    ];
    const upToDate = canonical(fresh.map(specHash)) === canonical(desired.map(specHash));
    const owner = { apiVersion: `${ADDON_GROUP}/v1alpha1`, kind: "ManagedClusterAddOn", name, uid: mca.metadata.uid };
    const overridden = renderAddonWork({ addon: name, cluster, template, adc, installNamespace, owner, overrides });
    const body = overridden.body;
    mode = body.metadata.annotations![HEALTH_CHECK_MODE_ANNOTATION] as HealthCheckMode;
    const overrideError = overridden.error;
    const annotations = withApplied({ ...(work?.metadata.annotations ?? {}), ...body.metadata.annotations }, overridden.applied, overridden.karmada);
    if (!work) body.metadata.annotations = withApplied({ ...body.metadata.annotations }, overridden.applied, overridden.karmada);
    const differs = !work || canonical(work.spec) !== canonical(body.spec) || canonical(work.metadata.annotations ?? {}) !== canonical(annotations);
    // All or nothing: a cluster whose overrides fail keeps the work it had (or gets none).
    if (upToDate && differs && overrideError === undefined && !work?.metadata.deletionTimestamp) {
      const next = work
        ? {
            ...work,
            metadata: {
              ...work.metadata,
              labels: { ...(work.metadata.labels ?? {}), ...body.metadata.labels },
              annotations,
              ownerReferences: body.metadata.ownerReferences,
            },
            spec: body.spec,
          }
        : body;
      const r = await racing(() =>
        works.write(cluster, workName, work ? { verb: "update", body: next } : { verb: "create", body: next }, work ? { known: work } : {}),
      );
      if (r && r !== "lost") work = r;
    }
    const workStatus = (work?.status ?? {}) as {
      conditions?: { type: string; status: string; observedGeneration?: number; message?: string; reason?: string }[];
      resourceStatus?: { manifests?: never[] };
    };
    const applied = manifestApplied(work ? { conditions: workStatus.conditions } : null);
    if (applied) set(applied);
    const probed = probedWorkloads(((body.spec as { workload?: { manifests?: never[] } }).workload?.manifests ?? []) as never[]);
    const avail = availability(name, mode, applied, workStatus.resourceStatus?.manifests, probed);
    if (avail) set(avail);
    // Progressing: the desired configs are applied once the work at their content is applied and available.
    const generation = work?.metadata.generation ?? 0;
    const workAt = (t: string) => workStatus.conditions?.find((c) => c.type === t && c.observedGeneration === generation)?.status;
    const refs = status.configReferences ?? [];
    if (upToDate && overrideError === undefined && work && workAt("Applied") === "True" && workAt("Available") === "True") {
      for (const r of refs) {
        r.lastAppliedConfig = r.desiredConfig ?? null;
        r.lastObservedGeneration = generation;
      }
    }
    // Overridden (KubeFleet's condition, per cluster): absent when no override names the add-on;
    // said of the overrides the rollout chose for the cluster (until its turn, it keeps the last).
    if (!overrides.empty && upToDate) {
      if (overrideError !== undefined)
        set({
          type: "Overridden",
          status: "False",
          reason: "OverriddenFailed",
          message: `Failed to apply the override rules on the resources: ${overrideError}`,
        });
      else if (overridden.applied.length > 0 || Object.keys(overridden.karmada).length > 0)
        set({ type: "Overridden", status: "True", reason: "OverriddenSucceeded", message: "Successfully applied the override rules on the resources" });
      else set({ type: "Overridden", status: "True", reason: "NoOverrideSpecified", message: "No override rules are configured for the selected resources" });
    }
    if (overrideError !== undefined && upToDate)
      set({ type: "Progressing", status: "False", reason: "Failed", message: `Failed to apply the override rules on the resources: ${overrideError}` });
    else if (applied?.status === "False") set({ type: "Progressing", status: "False", reason: "Failed", message: applied.message });
    else if (allApplied(refs)) set({ type: "Progressing", status: "False", reason: "Completed", message: "completed with no errors." });
    else set({ type: "Progressing", status: "True", reason: "Progressing", message: "progressing... work is not ready" });
    if ((templateSpec.registration ?? []).length === 0)
      set({ type: "RegistrationApplied", status: "True", reason: "NilRegistration", message: "Registration of the addon agent is configured" });
    // With the token driver the agent's ServiceAccount is the subject (src/addons/token-registration.ts): kept.
    else if (status.kubeClientDriver !== "token")
      status.registrations = [
        {
          signerName: "kubernetes.io/kube-apiserver-client",
          subject: {
            user: `system:open-cluster-management:cluster:${cluster}:addon:${name}:agent:${name}-agent`,
            groups: [`system:open-cluster-management:cluster:${cluster}:addon:${name}`, `system:open-cluster-management:addon:${name}`, "system:authenticated"],
          },
        },
      ];
  } else if (templateRef) {
    set({ type: "Progressing", status: "False", reason: "ConfigurationUnsupported", message: `the AddOnTemplate ${templateRef.name} does not exist` });
  } else if (!placements && !current.some((d) => d.group === ADDON_GROUP && d.resource === "addontemplates")) {
    // (A placement's rollout that has not reached this cluster yet leaves it without desired configs: nothing to say then.)
    set({ type: "Progressing", status: "False", reason: "ConfigurationUnsupported", message: "no AddOnTemplate is configured for the add-on" });
  }
  status.conditions = overrides.empty ? conditions.filter((c) => c.type !== "Overridden") : conditions;
  status.healthCheck = { mode: mode === "None" ? "Customized" : mode };
  status.namespace = installNamespaceOf({ config: adc?.spec as never, installNamespace });
  status.addOnMeta = spec.addOnMeta ?? {};
  status.supportedConfigs = (spec.supportedConfigs ?? []).map((s) => ({ group: s.group ?? "", resource: s.resource }));
  status.relatedObjects = [
    { group: ADDON_GROUP, resource: "clustermanagementaddons", name },
    ...(template ? [{ group: ADDON_GROUP, resource: "addontemplates", name: template.metadata.name }] : []),
  ];
  if (canonical(status) !== canonical(mca.status ?? {})) {
    await racing(() =>
      admittedStoreOf(env, ManagedClusterAddOnKind).write(cluster, name, { verb: "update", subresource: "status", body: { ...mca, status } }, { known: mca }),
    );
  }
  // A registered add-on's hub permissions follow the template resolved for it (src/addons/token-registration.ts).
  if (status.kubeClientDriver === "token") {
    const owner = { apiVersion: `${ADDON_GROUP}/v1alpha1`, kind: "ManagedClusterAddOn", name, uid: mca.metadata.uid! };
    await syncHubPermissions(env, cluster, name, await templateOf(env, { ...mca, status }), owner, true);
  }
}

/**
 * Runs the add-on `name` for a change of the overrides that name it (a new snapshot, an
 * override's deletion, a cluster's labels): its ClusterManagementAddOn's run, which rolls the
 * clusters whose overrides changed out by its install strategy, then the runs of its
 * ManagedClusterAddOns no placement governs (`cluster`: the one in that cluster only), which take
 * them at once.
 * @throws errors of D1 or an unexpected write failure
 */
export async function addonOverridesChanged(env: Env, name: string, cluster?: string): Promise<void> {
  const now = clock.now();
  await runClusterManagementAddOn(env, name, now);
  const mcas =
    cluster !== undefined
      ? [await admittedStoreOf(env, ManagedClusterAddOnKind).get(cluster, name)].filter((m): m is KubeObject => !!m)
      : await admittedStoreOf(env, ManagedClusterAddOnKind).listNamed(name);
  for (const m of mcas) await runManagedClusterAddOn(env, m.metadata.namespace!, name, now);
}

/**
 * Runs the add-ons installed by any of `placements` (`<namespace>/<name>` keys whose decisions
 * changed) and waits for them: the add-on hook's run for a PlacementDecision's change, as for replica sets; reads
 * the ClusterManagementAddOns (one list, a handful of objects, shared with the other hook runs of
 * `target`'s group: src/store/hooks.ts `sharedRead`), never every cluster. Failures are
 * logged, never thrown.
 */
export async function addonsForPlacements(env: Env, placements: string[], recheck?: RecheckAddon, target?: HookTarget): Promise<void> {
  if (placements.length === 0) return;
  const wanted = new Set(placements);
  try {
    const { items } = await sharedRead(target, "clustermanagementaddons", () => admittedStoreOf(env, ClusterManagementAddOnKind).list(""));
    const runs = items
      .filter((c) => ((c.spec as CmaSpec | undefined)?.installStrategy?.placements ?? []).some((p) => wanted.has(`${p.namespace}/${p.name}`)))
      .map((c) => runClusterManagementAddOn(env, c.metadata.name, clock.now(), true, recheck));
    for (const r of await Promise.allSettled(runs)) if (r.status === "rejected") console.error("add-on run failed", r.reason);
  } catch (e) {
    console.error("add-ons for placements: could not list ClusterManagementAddOns", e);
  }
}
