/**
 * `flotilla placement render NAME --cluster C [-n NS] [-o json|yaml]`: the placement's dry run for
 * one cluster (the hub's `render` subresource, docs/overrides.md): the objects that cluster's agent
 * would receive, its overrides applied, and which overrides applied (or why one fails there).
 *
 * `flotilla replicaset render NAME -n NS --cluster C [-o json|yaml]`: the same dry run of a
 * ManifestWorkReplicaSet (the `render` subresource of the replica set, in the same shape): the
 * manifests its work in that cluster's namespace carries, its ResourceOverrides applied.
 *
 * `flotilla placement status NAME [-n NS] [-o json|yaml]`: where a KubeFleet placement stands
 * (docs/kubefleet.md). Without `-n`, the ClusterResourcePlacement NAME; with `-n NS`, the
 * ResourcePlacement NAME in NS (what a namespace's user may read). Prints the placement's
 * conditions, the objects it selected (`status.selectedResources`, in KubeFleet's apply order)
 * and one row per cluster (`status.placementStatuses[]`): Scheduled, RolloutStarted, Applied and
 * Available, the counts of failed and drifted objects, the resource index the cluster is at, and
 * what it waits for. `-o json|yaml` prints the same as data (src/kinds/fleet-summary.ts
 * `PlacementSummary`).
 */
import { Command, Option } from "commander";
import type { CommandContext } from "../context.ts";
import { OUTPUT_FORMATS, renderObject, renderTable, type OutputFormat } from "../output.ts";
import { Paths, type KubeObject } from "../resources.ts";
import { ageOf } from "../time.ts";
import { apiVersionOf, placementSummary, type PlacementSummary } from "../../../src/kinds/fleet-summary.ts";

interface StatusOptions {
  namespace?: string;
  output?: OutputFormat;
}

const dash = (v: unknown): string => (v === undefined || v === null || v === "" ? "-" : String(v));

/**
 * The human-readable form of a placement's summary: a heading line, its conditions, its
 * selected resources and its clusters, each a table.
 *
 * @param nowMs epoch milliseconds, for the conditions' ages.
 */
export function renderPlacementStatus(s: PlacementSummary, nowMs: number): string {
  const where = s.namespace ? `${s.namespace}/${s.name}` : s.name;
  const policy = s.placementType === "PickN" ? `PickN ${s.numberOfClusters ?? 0}` : dash(s.placementType);
  let out = `${s.kind} ${where}: generation ${dash(s.generation)}, policy ${policy}, resource index ${dash(s.observedResourceIndex)}\n\n`;
  out +=
    s.conditions.length === 0
      ? "No conditions yet.\n"
      : renderTable(
          ["CONDITION", "STATUS", "REASON", "GEN", "SINCE"],
          s.conditions.map((c) => [c.type, c.status, dash(c.reason), dash(c.observedGeneration), ageOf(c.lastTransitionTime, nowMs)]),
        );
  out += `\nSelected resources (${s.selectedResources.length}):\n`;
  if (s.selectedResources.length > 0)
    out += renderTable(
      ["KIND", "NAMESPACE", "NAME", "APIVERSION", "ENVELOPE"],
      s.selectedResources.map((r) => [
        r.kind,
        dash(r.namespace),
        r.name,
        apiVersionOf(r),
        r.envelope ? `${r.envelope.type ?? "envelope"}/${r.envelope.name}` : "-",
      ]),
    );
  const placed = s.clusters.filter((c) => c.cluster !== null).length;
  out += `\nClusters (${placed}${s.clusters.length > placed ? ` of ${s.clusters.length} wanted` : ""}):\n`;
  if (s.clusters.length > 0)
    out += renderTable(
      ["CLUSTER", "SCHEDULED", "ROLLOUT", "APPLIED", "AVAILABLE", "FAILED", "DRIFTED", "INDEX", "WAITING"],
      s.clusters.map((c) => [
        c.cluster ?? "(none)",
        c.scheduled,
        c.rolloutStarted,
        c.applied,
        c.available,
        String(c.failed),
        String(c.drifted),
        dash(c.observedResourceIndex),
        dash(c.waiting),
      ]),
    );
  return out;
}

async function status(ctx: CommandContext, name: string, opts: StatusOptions): Promise<void> {
  const namespaced = opts.namespace !== undefined;
  const path = namespaced ? Paths.resourcePlacements(opts.namespace, name) : Paths.clusterResourcePlacements(name);
  const placement = await ctx.client().get<KubeObject>(path, {
    hints: {
      notFound: namespaced
        ? `no ResourcePlacement ${name} in namespace ${opts.namespace}; list them with \`kubectl get rp -n ${opts.namespace}\` (without -n: a ClusterResourcePlacement)`
        : `no ClusterResourcePlacement ${name}; list them with \`kubectl get crp\` (a ResourcePlacement needs -n NAMESPACE)`,
      notServed: "this hub does not serve KubeFleet's placements (placement.kubernetes-fleet.io/v1) yet; update the hub to a version that does",
    },
  });
  const summary = placementSummary(placement);
  ctx.out(opts.output ? renderObject(summary, opts.output) : renderPlacementStatus(summary, ctx.now()));
}

/** A hub's dry run of a placement for one cluster (src/fleet/dry-run.ts `PlacementRender`, `flotilla.dev/v1alpha1`). */
export interface PlacementRender {
  apiVersion: string;
  kind: "PlacementRender";
  placement: { kind: string; namespace?: string; name: string };
  cluster: string;
  scheduled: boolean;
  template: KubeObject[];
  objects: KubeObject[];
  works: { name: string; spec: Record<string, unknown> }[];
  clusterResourceOverrides: string[];
  resourceOverrides: { name: string; namespace: string }[];
  /** Karmada's ClusterOverridePolicies' rules applied there (absent from a hub before them). */
  appliedClusterOverrides?: { policyName: string }[];
  /** Karmada's OverridePolicies' rules applied there. */
  appliedOverrides?: { policyName: string }[];
  error?: string;
}

interface RenderOptions {
  namespace?: string;
  cluster: string;
  output?: OutputFormat;
}

/**
 * The human-readable form of a dry run: a heading (the placement, the cluster, whether the
 * placement has picked it), the override snapshots applied, then either the override's failure
 * or the rendered objects as YAML documents, each preceded by a comment naming its work.
 */
export function renderPlacementRender(r: PlacementRender): string {
  const where = r.placement.namespace ? `${r.placement.namespace}/${r.placement.name}` : r.placement.name;
  let out = `${r.placement.kind} ${where} rendered for cluster ${r.cluster}${r.scheduled ? "" : " (not scheduled there: shown as it would be)"}\n`;
  const applied = [
    ...r.clusterResourceOverrides.map((n) => `ClusterResourceOverrideSnapshot ${n}`),
    ...r.resourceOverrides.map((o) => `ResourceOverrideSnapshot ${o.namespace}/${o.name}`),
    ...[...new Set((r.appliedClusterOverrides ?? []).map((o) => o.policyName))].map((n) => `ClusterOverridePolicy ${n}`),
    ...[...new Set((r.appliedOverrides ?? []).map((o) => o.policyName))].map((n) => `OverridePolicy ${n}`),
  ];
  out += `Overrides applied: ${applied.length > 0 ? applied.join(", ") : "none"}\n`;
  if (r.error !== undefined) return `${out}Failed: ${r.error}\nNothing is rendered for the cluster; it keeps the works it had.\n`;
  for (const w of r.works) {
    const manifests = ((w.spec as { workload?: { manifests?: unknown[] } }).workload?.manifests ?? []) as unknown[];
    for (const m of manifests) out += `---\n# work ${w.name}\n${renderObject(m, "yaml")}`;
  }
  if (r.works.length === 0) out += "No objects: every object is deleted there by an override.\n";
  return out;
}

async function render(ctx: CommandContext, name: string, opts: RenderOptions): Promise<void> {
  const namespaced = opts.namespace !== undefined;
  const path = `${namespaced ? Paths.resourcePlacements(opts.namespace, name) : Paths.clusterResourcePlacements(name)}/render`;
  const r = await ctx.client().get<PlacementRender>(path, {
    query: { cluster: opts.cluster },
    hints: {
      notFound: `no such ${namespaced ? `ResourcePlacement ${name} in namespace ${opts.namespace}` : `ClusterResourcePlacement ${name}`}, or no ManagedCluster ${opts.cluster}; list them with \`kubectl get ${namespaced ? `rp -n ${opts.namespace}` : "crp"}\` and \`flotilla get clusters\``,
      notServed: "this hub does not render placements for one cluster yet; update the hub to a version that does",
    },
  });
  ctx.out(opts.output ? renderObject(r, opts.output) : renderPlacementRender(r));
}

interface ReplicaSetRenderOptions {
  namespace: string;
  cluster: string;
  output?: OutputFormat;
}

async function renderReplicaSet(ctx: CommandContext, name: string, opts: ReplicaSetRenderOptions): Promise<void> {
  const r = await ctx.client().get<PlacementRender>(`${Paths.manifestWorkReplicaSets(opts.namespace, name)}/render`, {
    query: { cluster: opts.cluster },
    hints: {
      notFound: `no ManifestWorkReplicaSet ${name} in namespace ${opts.namespace}, or no ManagedCluster ${opts.cluster}; list them with \`kubectl get manifestworkreplicasets -n ${opts.namespace}\` and \`flotilla get clusters\``,
      notServed: "this hub does not render replica sets for one cluster yet; update the hub to a version that does",
    },
  });
  ctx.out(opts.output ? renderObject(r, opts.output) : renderPlacementRender(r));
}

/**
 * Adds `render` to the `replicaset` command (agent/cli/commands/replicaset.ts).
 *
 * @param replicaset the `replicaset` command.
 * @param context builds the action's context from the command.
 */
export function registerReplicaSetRender(replicaset: Command, context: (cmd: Command) => CommandContext): void {
  replicaset
    .command("render")
    .description("Show the manifests a ManifestWorkReplicaSet renders for one cluster, its overrides applied (a dry run: nothing is written)")
    .argument("<name>", "the ManifestWorkReplicaSet")
    .requiredOption("-n, --namespace <ns>", "the replica set's namespace")
    .requiredOption("--cluster <name>", "the ManagedCluster to render for")
    .addOption(new Option("-o, --output <format>", "print the hub's whole answer (template, objects, work, overrides) as json or yaml").choices(OUTPUT_FORMATS))
    .addHelpText(
      "after",
      "\nThe manifests are exactly what the replica set's work in the cluster's namespace would carry now (the hub renders\n" +
        "them with the replica set controller's own code); the ResourceOverrideSnapshots applied are listed, or why one\n" +
        "fails there. Reading it needs only a read (get) of the replica set.",
    )
    .action((name: string, opts: ReplicaSetRenderOptions, cmd: Command) => renderReplicaSet(context(cmd), name, opts));
}

/**
 * Adds `placement status` and `placement render` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerPlacement(program: Command, context: (cmd: Command) => CommandContext): void {
  const placement = program
    .command("placement")
    .description("Inspect KubeFleet placements (ClusterResourcePlacement, or ResourcePlacement with -n): what they selected and where it stands per cluster");
  placement
    .command("status")
    .description("Show a placement's conditions, selected resources and per-cluster state")
    .argument("<name>", "the ClusterResourcePlacement (or, with -n, the ResourcePlacement)")
    .option("-n, --namespace <ns>", "the namespace of a ResourcePlacement (without it: a ClusterResourcePlacement)")
    .addOption(new Option("-o, --output <format>", "print the summary as json or yaml instead of tables").choices(OUTPUT_FORMATS))
    .addHelpText(
      "after",
      "\nColumns of the clusters: SCHEDULED, ROLLOUT, APPLIED and AVAILABLE are the cluster's Scheduled, RolloutStarted,\n" +
        "Applied and Available conditions (- until set: each is set once the one before is True); FAILED and DRIFTED\n" +
        "count its failedPlacements and driftedPlacements; INDEX is the resource snapshot index it is at; WAITING is\n" +
        "the first condition not True and its reason. A cluster of (none) is a PickN or PickFixed slot no cluster fills.",
    )
    .action((name: string, opts: StatusOptions, cmd: Command) => status(context(cmd), name, opts));
  placement
    .command("render")
    .description("Show the objects a placement renders for one cluster, its overrides applied (a dry run: nothing is written)")
    .argument("<name>", "the ClusterResourcePlacement (or, with -n, the ResourcePlacement)")
    .requiredOption("--cluster <name>", "the ManagedCluster to render for")
    .option("-n, --namespace <ns>", "the namespace of a ResourcePlacement (without it: a ClusterResourcePlacement)")
    .addOption(
      new Option("-o, --output <format>", "print the hub's whole answer (template, objects, works, overrides) as json or yaml").choices(OUTPUT_FORMATS),
    )
    .addHelpText(
      "after",
      "\nThe objects are exactly what the cluster's agent would receive in its works now (the hub renders them with the\n" +
        "placement controller's own code); the override snapshots applied are listed, or why an override fails there.\n" +
        "Reading it needs only a read (get) of the placement.",
    )
    .action((name: string, opts: RenderOptions, cmd: Command) => render(context(cmd), name, opts));
}
