/**
 * `flotilla clusterset create|set|bind`, as clusteradm's `clusterset` commands: create a
 * ManagedClusterSet, put clusters in an exclusive set (the
 * `cluster.open-cluster-management.io/clusterset` label, by merge patch), and bind a set to a
 * namespace (a ManagedClusterSetBinding named like the set) so that its Placements can use it.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import { commaList, NO_SUCH_CLUSTER } from "../clusters.ts";
import type { CommandContext } from "../context.ts";
import { CliError, HubApiError, UsageError } from "../errors.ts";
import { CLUSTERSET_LABEL, Paths, type KubeObject } from "../resources.ts";

const SELECTOR_TYPES = ["ExclusiveClusterSetLabel", "LabelSelector"] as const;

/** The options of `clusterset create`. */
interface CreateOptions {
  selectorType?: (typeof SELECTOR_TYPES)[number];
  selector?: Record<string, string>;
}

/**
 * Parses `k=v,k2=v2` into matchLabels (for `--selector`).
 *
 * @throws InvalidArgumentError for an item without `=` or with an empty key.
 */
export function parseMatchLabels(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new InvalidArgumentError(`"${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

const noSuchSet = (name: string): string => `no such clusterset; create it with \`flotilla clusterset create ${name}\``;

function getSet(ctx: CommandContext, name: string): Promise<KubeObject> {
  return ctx.client().get<KubeObject>(Paths.managedClusterSets(name), { hints: { notFound: noSuchSet(name) } });
}

async function create(ctx: CommandContext, name: string, opts: CreateOptions): Promise<void> {
  const type = opts.selectorType ?? (opts.selector ? "LabelSelector" : "ExclusiveClusterSetLabel");
  if (type === "ExclusiveClusterSetLabel" && opts.selector) {
    throw new UsageError(
      "--selector needs --selector-type LabelSelector",
      "an ExclusiveClusterSetLabel set takes clusters by label; add them with `flotilla clusterset set`",
    );
  }
  const clusterSelector: Record<string, unknown> = { selectorType: type };
  if (type === "LabelSelector") clusterSelector.labelSelector = opts.selector ? { matchLabels: opts.selector } : {};
  await ctx
    .client()
    .create(
      Paths.managedClusterSets(),
      { apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name }, spec: { clusterSelector } },
      { hints: { alreadyExists: `clusterset ${name} exists already; add clusters with \`flotilla clusterset set ${name} --clusters ...\`` } },
    );
  ctx.out(`clusterset ${name} created\n`);
  if (type === "ExclusiveClusterSetLabel") ctx.out(`next: add clusters with \`flotilla clusterset set ${name} --clusters c1,c2\`, `);
  else ctx.out(`it holds the clusters whose labels match its selector; next: `);
  ctx.out(`bind it to a namespace with \`flotilla clusterset bind ${name} --namespace NS\`\n`);
}

async function set(ctx: CommandContext, setName: string, clusters: string[]): Promise<void> {
  const mcs = await getSet(ctx, setName);
  const type = (mcs.spec?.clusterSelector as { selectorType?: string } | undefined)?.selectorType ?? "ExclusiveClusterSetLabel";
  if (type !== "ExclusiveClusterSetLabel") {
    throw new CliError(
      `clusterset ${setName} selects clusters with a label selector, so clusters cannot be put in it`,
      "label the clusters to match its selector instead, or use an ExclusiveClusterSetLabel set",
    );
  }
  for (const cluster of clusters) {
    const mc = await ctx
      .client()
      .mergePatch<KubeObject>(
        Paths.managedClusters(cluster),
        { metadata: { labels: { [CLUSTERSET_LABEL]: setName } } },
        { hints: { notFound: NO_SUCH_CLUSTER } },
      );
    ctx.out(`cluster ${mc.metadata.name} is in clusterset ${setName}\n`);
  }
}

async function bind(ctx: CommandContext, setName: string, namespace: string): Promise<void> {
  await getSet(ctx, setName);
  const body = {
    apiVersion: "cluster.open-cluster-management.io/v1beta2",
    kind: "ManagedClusterSetBinding",
    metadata: { name: setName, namespace },
    spec: { clusterSet: setName },
  };
  try {
    await ctx.client().create(Paths.managedClusterSetBindings(namespace), body);
    ctx.out(`clusterset ${setName} bound to namespace ${namespace}\n`);
  } catch (err) {
    if (!(err instanceof HubApiError && err.reason === "AlreadyExists")) throw err;
    ctx.out(`clusterset ${setName} is already bound to namespace ${namespace}\n`);
  }
  ctx.out(`Placements in namespace ${namespace} can now select its clusters (spec.clusterSets: [${setName}])\n`);
}

/**
 * Adds `clusterset` (with `create`, `set` and `bind`) to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerClusterSet(program: Command, context: (cmd: Command) => CommandContext): void {
  const cs = program.command("clusterset").description("Manage ManagedClusterSets: create them, put clusters in them, bind them to namespaces");
  cs.command("create")
    .description("Create a ManagedClusterSet")
    .argument("<name>", "clusterset name")
    .addOption(
      new Option("--selector-type <type>", "how the set selects clusters (default ExclusiveClusterSetLabel; LabelSelector with --selector)").choices(
        SELECTOR_TYPES,
      ),
    )
    .option("--selector <labels>", "for LabelSelector: match labels k=v,k2=v2 (none: every cluster)", parseMatchLabels)
    .addHelpText("after", "\nExamples:\n  flotilla clusterset create prod\n  flotilla clusterset create gpu --selector gpu=true")
    .action((name: string, opts: CreateOptions, cmd: Command) => create(context(cmd), name, opts));
  cs.command("set")
    .description(`Put clusters in an ExclusiveClusterSetLabel clusterset (sets their ${CLUSTERSET_LABEL} label)`)
    .argument("<clusterset>", "clusterset name")
    .requiredOption("--clusters <names>", "comma-separated cluster names", commaList)
    .addHelpText("after", "\nExample:\n  flotilla clusterset set prod --clusters cluster1,cluster2")
    .action((name: string, opts: { clusters: string[] }, cmd: Command) => set(context(cmd), name, [...new Set(opts.clusters)]));
  cs.command("bind")
    .description("Bind a clusterset to a namespace, so that the Placements of that namespace can select its clusters")
    .argument("<clusterset>", "clusterset name")
    .requiredOption("-n, --namespace <ns>", "namespace of the Placements")
    .addHelpText("after", "\nExample:\n  flotilla clusterset bind prod --namespace default")
    .action((name: string, opts: { namespace: string }, cmd: Command) => bind(context(cmd), name, opts.namespace));
}
