/**
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

/**
 * Adds `placement status` to `program`.
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
}
