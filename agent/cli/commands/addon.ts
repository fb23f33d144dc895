/**
 * `flotilla addon render NAME --cluster C [-o json|yaml]`: a template add-on's dry run for one
 * cluster (the `render` subresource of its ClusterManagementAddOn, docs/overrides.md "Seeing the
 * rendered objects"): the manifests of the deploy work `addon-<name>-deploy-0` the hub's add-on
 * manager would write in that cluster's namespace, the ClusterResourceOverrides naming the add-on
 * applied, and which applied (or why one fails there). The same answer, and the same printing, as
 * `flotilla placement render` (agent/cli/commands/placement.ts).
 */
import { Command, Option } from "commander";
import type { CommandContext } from "../context.ts";
import { OUTPUT_FORMATS, renderObject, type OutputFormat } from "../output.ts";
import { Paths } from "../resources.ts";
import { renderPlacementRender, type PlacementRender } from "./placement.ts";

interface AddonRenderOptions {
  cluster: string;
  output?: OutputFormat;
}

async function renderAddon(ctx: CommandContext, name: string, opts: AddonRenderOptions): Promise<void> {
  const r = await ctx.client().get<PlacementRender>(`${Paths.clusterManagementAddOns(name)}/render`, {
    query: { cluster: opts.cluster },
    hints: {
      notFound: `no ClusterManagementAddOn ${name}, or no ManagedCluster ${opts.cluster}; list them with \`kubectl get clustermanagementaddons\` and \`flotilla get clusters\``,
      notServed: "this hub does not render add-ons for one cluster yet; update the hub to a version that does",
    },
  });
  ctx.out(opts.output ? renderObject(r, opts.output) : renderPlacementRender(r));
}

/**
 * Adds `addon render` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerAddon(program: Command, context: (cmd: Command) => CommandContext): void {
  program
    .command("addon")
    .description("Inspect OCM template add-ons (ClusterManagementAddOns)")
    .command("render")
    .description("Show the manifests a template add-on renders for one cluster, its overrides applied (a dry run: nothing is written)")
    .argument("<name>", "the ClusterManagementAddOn")
    .requiredOption("--cluster <name>", "the ManagedCluster to render for")
    .addOption(new Option("-o, --output <format>", "print the hub's whole answer (template, objects, work, overrides) as json or yaml").choices(OUTPUT_FORMATS))
    .addHelpText(
      "after",
      "\nThe manifests are exactly what the add-on's deploy work in the cluster's namespace would carry once the add-on's\n" +
        "current configs reach the cluster (the hub renders them with the add-on manager's own code); the\n" +
        "ClusterResourceOverrideSnapshots applied are listed, or why one fails there (or that no AddOnTemplate is\n" +
        "configured). A cluster without the add-on is rendered as it would be. Reading it needs only a read (get) of\n" +
        "the ClusterManagementAddOn.",
    )
    .action((name: string, opts: AddonRenderOptions, cmd: Command) => renderAddon(context(cmd), name, opts));
}
