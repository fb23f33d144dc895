/**
 * `flotilla get clusters|placements|decisions|works|addons|policies`: lists (or reads by name) objects of the hub
 * and prints a table, or the objects with `-o json|yaml`. Namespaced kinds take `-n NS` (default
 * `default`; ManifestWorks default to all clusters) or `-A` (all namespaces: the hub lists a
 * namespaced kind across namespaces at its collection path without `/namespaces/NS`).
 */
import { Command, Option } from "commander";
import type { CommandContext } from "../context.ts";
import { UsageError } from "../errors.ts";
import type { RequestHints } from "../hints.ts";
import { OUTPUT_FORMATS, renderObject, renderTable, type OutputFormat } from "../output.ts";
import { Paths, PLACEMENT_LABEL, ROOT_POLICY_LABEL, type KubeList, type KubeObject } from "../resources.ts";
import { addonView, clusterView, decisionView, placementView, policyView, workView, type View } from "../views.ts";

/** The options of the `get` subcommands (each takes the ones that apply). */
interface GetOptions {
  output?: OutputFormat;
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
  placement?: string;
  cluster?: string;
}

/** How `get` reads one kind. */
interface Resource {
  /** Plural noun for messages ("clusters"). */
  what: string;
  /** The API path of the collection (namespace undefined: all namespaces) or of one object. */
  path: (namespace: string | undefined, name?: string) => string;
  namespaced: boolean;
  /** The namespace when neither -n nor -A is given (undefined: all namespaces). */
  defaultNamespace?: string;
  view: View;
  hints: RequestHints;
  /** Which listed objects to show (all by default). */
  keep?: (obj: KubeObject, opts: GetOptions) => boolean;
}

const resources: Record<"clusters" | "placements" | "decisions" | "works" | "addons" | "policies", Resource> = {
  clusters: {
    what: "clusters",
    path: (_ns, name) => Paths.managedClusters(name),
    namespaced: false,
    view: clusterView,
    hints: { notFound: "no such cluster; list them with `flotilla get clusters`" },
  },
  placements: {
    what: "placements",
    path: Paths.placements,
    namespaced: true,
    defaultNamespace: "default",
    view: placementView,
    hints: { notFound: "no such placement in that namespace; list them with `flotilla get placements -A`" },
  },
  decisions: {
    what: "placement decisions",
    path: Paths.placementDecisions,
    namespaced: true,
    defaultNamespace: "default",
    view: decisionView,
    hints: { notFound: "no such placement decision in that namespace; list them with `flotilla get decisions -A`" },
  },
  works: {
    what: "manifest works",
    path: Paths.manifestWorks,
    namespaced: true,
    view: workView,
    hints: {
      notFound: "no such ManifestWork in that cluster's namespace; list them with `flotilla get works -A`",
      notServed: "this hub does not serve ManifestWorks (work.open-cluster-management.io/v1) yet; update the hub to a version that does",
    },
  },
  addons: {
    what: "add-ons",
    path: Paths.managedClusterAddOns,
    namespaced: true,
    view: addonView,
    hints: {
      notFound: "no such add-on in that cluster's namespace; list them with `flotilla get addons -A`",
      notServed: "this hub does not serve add-ons (addon.open-cluster-management.io/v1beta1) yet; update the hub to a version that does",
    },
  },
  policies: {
    what: "policies",
    path: Paths.policies,
    namespaced: true,
    view: policyView,
    hints: {
      notFound: "no such policy in that namespace; list them with `flotilla get policies -A`",
      notServed: "this hub does not serve policies (policy.open-cluster-management.io/v1) yet; update the hub to a version that does",
    },
    // Root policies, unless a cluster's namespace is asked for: its replicated policies then.
    keep: (p, opts) => opts.cluster !== undefined || opts.namespace !== undefined || p.metadata.labels?.[ROOT_POLICY_LABEL] === undefined,
  },
};

function namespaceOf(res: Resource, opts: GetOptions): string | undefined {
  const ns = opts.cluster ?? opts.namespace;
  if (opts.allNamespaces && ns !== undefined) throw new UsageError("-A and -n exclude each other", "use -n NS for one namespace or -A for all");
  if (opts.allNamespaces) return undefined;
  return ns ?? res.defaultNamespace;
}

async function get(ctx: CommandContext, res: Resource, names: string[], opts: GetOptions): Promise<void> {
  const namespace = res.namespaced ? namespaceOf(res, opts) : undefined;
  const client = ctx.client();
  let items: KubeObject[];
  let printed: unknown;
  if (names.length > 0) {
    if (res.namespaced && namespace === undefined) throw new UsageError(`getting ${res.what} by name needs a namespace`, "pass -n NAMESPACE");
    if (opts.selector || opts.placement) throw new UsageError("names and selectors exclude each other", "give names or a selector, not both");
    items = [];
    for (const name of names) items.push(await client.get<KubeObject>(res.path(namespace, name), { hints: res.hints }));
    printed = items.length === 1 ? items[0] : { apiVersion: "v1", kind: "List", metadata: {}, items };
  } else {
    const selectors = [opts.selector, opts.placement ? `${PLACEMENT_LABEL}=${opts.placement}` : undefined].filter((s) => s);
    const list = await client.get<KubeList>(res.path(namespace), {
      query: { labelSelector: selectors.length > 0 ? selectors.join(",") : undefined },
      hints: res.hints,
    });
    items = res.keep ? list.items.filter((o) => res.keep!(o, opts)) : list.items;
    printed = items.length === list.items.length ? list : { ...list, items };
  }
  if (opts.output) {
    ctx.out(renderObject(printed, opts.output));
    return;
  }
  const all = res.namespaced && namespace === undefined;
  if (items.length === 0) {
    ctx.warn(`No ${res.what} found${res.namespaced ? (all ? "" : ` in namespace ${namespace}`) : ""}.\n`);
    return;
  }
  const now = ctx.now();
  ctx.out(
    renderTable(
      res.view.headers(all),
      items.map((o) => res.view.row(o, now, all)),
    ),
  );
}

function outputOption(): Option {
  return new Option("-o, --output <format>", "print the objects as json or yaml instead of a table").choices(OUTPUT_FORMATS);
}

function namespaceOptions(cmd: Command, nsHelp: string): Command {
  return cmd.option("-n, --namespace <ns>", nsHelp).option("-A, --all-namespaces", "list across all namespaces");
}

/**
 * Adds `get` with `clusters`, `placements`, `decisions` and `works` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerGet(program: Command, context: (cmd: Command) => CommandContext): void {
  const getCmd = program.command("get").description("Show clusters, placements, placement decisions, manifest works, add-ons or policies");
  const run = (res: Resource) => (names: string[], opts: GetOptions, cmd: Command) => get(context(cmd), res, names, opts);

  getCmd
    .command("clusters")
    .aliases(["cluster", "managedclusters", "mcl"])
    .description("Show ManagedClusters: acceptance, Joined and Available conditions, Kubernetes version and taints")
    .argument("[names...]", "cluster names (default: all)")
    .option("-l, --selector <selector>", "label selector, e.g. env=prod,region!=eu")
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nColumns: ACCEPTED is spec.hubAcceptsClient; JOINED and AVAILABLE are the ManagedClusterJoined and\n" +
        "ManagedClusterConditionAvailable conditions; SINCE is the age of the Available condition's last\n" +
        "transition; VERSION is the cluster's Kubernetes version; TAINTS are key[=value]:effect.",
    )
    .action(run(resources.clusters));

  namespaceOptions(
    getCmd
      .command("placements")
      .aliases(["placement"])
      .description("Show Placements: whether they are satisfied and how many clusters they selected")
      .argument("[names...]", "placement names (default: all in the namespace)"),
    "namespace (default: default)",
  )
    .option("-l, --selector <selector>", "label selector")
    .addOption(outputOption())
    .action(run(resources.placements));

  namespaceOptions(
    getCmd
      .command("decisions")
      .aliases(["decision", "placementdecisions"])
      .description("Show PlacementDecisions: the clusters each Placement chose, by decision group")
      .argument("[names...]", "placement decision names (default: all in the namespace)"),
    "namespace (default: default)",
  )
    .option("--placement <name>", "only the decisions of this Placement")
    .option("-l, --selector <selector>", "label selector")
    .addOption(outputOption())
    .action(run(resources.decisions));

  namespaceOptions(
    getCmd
      .command("works")
      .aliases(["work", "manifestworks", "mw"])
      .description("Show ManifestWorks (in each cluster's namespace): manifests and Applied/Available conditions")
      .argument("[names...]", "ManifestWork names (needs -n or --cluster)"),
    "the cluster's namespace (default: all clusters)",
  )
    .option("--cluster <name>", "same as -n: the cluster whose works to show")
    .option("-l, --selector <selector>", "label selector")
    .addOption(outputOption())
    .action(run(resources.works));

  namespaceOptions(
    getCmd
      .command("addons")
      .aliases(["addon", "managedclusteraddons", "mca"])
      .description("Show the add-ons of each cluster (ManagedClusterAddOns): Available, Degraded and Progressing, and why")
      .argument("[names...]", "add-on names (needs -n or --cluster)"),
    "the cluster's namespace (default: all clusters)",
  )
    .option("--cluster <name>", "same as -n: the cluster whose add-ons to show")
    .option("-l, --selector <selector>", "label selector")
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nColumns: AVAILABLE, DEGRADED and PROGRESSING are the add-on's conditions; HEALTH is how its health\n" +
        "is checked (Lease: its Lease on the cluster, read by the Flotilla agent; Customized: by the hub);\n" +
        "REASON is the Available condition's reason.",
    )
    .action(run(resources.addons));

  namespaceOptions(
    getCmd
      .command("policies")
      .aliases(["policy", "plc"])
      .description("Show governance Policies and each cluster's compliance")
      .argument("[names...]", "policy names (needs -n)"),
    "namespace (default: the root policies of all namespaces)",
  )
    .option("--cluster <name>", "the policies replicated to this cluster's namespace, with its own compliance")
    .option("-l, --selector <selector>", "label selector")
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nColumns: COMPLIANCE is status.compliant (Compliant, NonCompliant or Pending); CLUSTERS is each\n" +
        "cluster's compliance (cluster=Compliance), from the root policy's status.status[].",
    )
    .action(run(resources.policies));
}
