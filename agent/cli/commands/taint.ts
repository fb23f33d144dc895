/**
 * `flotilla taint add|remove CLUSTER ...`: edits a ManagedCluster's `spec.taints` by reading the
 * cluster and replacing it (PUT with its `resourceVersion`), retrying on 409 Conflict.
 */
import { Command, InvalidArgumentError } from "commander";
import { getCluster } from "../clusters.ts";
import type { CommandContext } from "../context.ts";
import { CliError, HubApiError } from "../errors.ts";
import { Paths, type KubeObject, type Taint } from "../resources.ts";
import {
  addTaints,
  parseTaintSelector,
  parseTaintSpec,
  removeTaints,
  taintText,
  TAINT_EFFECTS,
  type TaintEdit,
  type TaintSelector,
  type TaintSpec,
} from "../../../src/kinds/managedcluster-taints.ts";

/** How many times a write that met a concurrent change (409 Conflict) is tried again. */
export const CONFLICT_RETRIES = 5;

const BUILTIN_TAINT_PREFIX = "cluster.open-cluster-management.io/";

function collect<T>(parse: (text: string) => T) {
  return (value: string, previous: T[] = []): T[] => {
    try {
      return [...previous, parse(value)];
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/**
 * Reads the cluster, applies `edit` to its taints and writes it back, again on a conflict.
 *
 * @returns the edit and the cluster as the hub stored it (undefined when nothing changed).
 * @throws whatever `edit` throws; HubApiError (404 for an unknown cluster, 409 after {@link CONFLICT_RETRIES} conflicts).
 */
export async function editTaints(ctx: CommandContext, name: string, edit: (taints: Taint[]) => TaintEdit): Promise<{ result: TaintEdit; stored?: KubeObject }> {
  const client = ctx.client();
  for (let attempt = 0; ; attempt++) {
    const mc = await getCluster(client, name);
    const result = edit((mc.spec?.taints as Taint[] | undefined) ?? []);
    if (result.changed.length === 0) return { result };
    const next: KubeObject = { ...mc, spec: { ...mc.spec, taints: result.taints } };
    try {
      return { result, stored: await client.replace<KubeObject>(Paths.managedClusters(name), next) };
    } catch (err) {
      if (err instanceof HubApiError && err.reason === "Conflict" && attempt < CONFLICT_RETRIES) continue;
      throw err;
    }
  }
}

async function add(ctx: CommandContext, name: string, adds: TaintSpec[]): Promise<void> {
  const { result } = await editTaints(ctx, name, (taints) => addTaints(taints, adds));
  for (const t of result.changed) ctx.out(`cluster ${name} tainted ${t}\n`);
  for (const t of result.unchanged) ctx.out(`cluster ${name} already has taint ${t}\n`);
}

async function remove(ctx: CommandContext, name: string, removes: TaintSelector[]): Promise<void> {
  const { result, stored } = await editTaints(ctx, name, (taints) => {
    const edit = removeTaints(taints, removes);
    if (edit.unchanged.length === 0) return edit;
    const have = taints.map(taintText);
    throw new CliError(
      `cluster ${name} has no taint ${edit.unchanged.join(", ")}; nothing was removed`,
      have.length > 0 ? `its taints are: ${have.join(", ")}` : "it has no taints; `flotilla get clusters` shows them",
    );
  });
  for (const t of result.changed) ctx.out(`cluster ${name} untainted ${t}\n`);
  const back = ((stored?.spec?.taints as Taint[] | undefined) ?? []).filter((t) => result.changed.includes(taintText(t)));
  for (const t of back) {
    ctx.warn(`warning: the hub put back ${taintText(t)}: it manages this taint while the cluster is not Available\n`);
  }
}

/**
 * Adds `taint` (with `taint add` and `taint remove`) to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerTaint(program: Command, context: (cmd: Command) => CommandContext): void {
  const taint = program.command("taint").description("Add or remove taints on a ManagedCluster (Placements select tainted clusters only with a toleration)");
  taint
    .command("add")
    .description(`Add taints KEY[=VALUE]:EFFECT (effect: ${TAINT_EFFECTS.join(", ")}); the hub stamps timeAdded`)
    .argument("<cluster>", "cluster name")
    .argument("<taint...>", "KEY[=VALUE]:EFFECT", collect(parseTaintSpec))
    .addHelpText("after", "\nExamples:\n  flotilla taint add cluster1 gpu=true:NoSelect\n  flotilla taint add cluster1 maintenance:PreferNoSelect")
    .action((cluster: string, adds: TaintSpec[], _opts: unknown, cmd: Command) => add(context(cmd), cluster, adds));
  taint
    .command("remove")
    .description("Remove taints by KEY (every effect) or KEY:EFFECT")
    .argument("<cluster>", "cluster name")
    .argument("<taint...>", "KEY[:EFFECT]", collect(parseTaintSelector))
    .addHelpText(
      "after",
      `\nExamples:\n  flotilla taint remove cluster1 gpu\n  flotilla taint remove cluster1 maintenance:PreferNoSelect\n\n` +
        `The hub manages the ${BUILTIN_TAINT_PREFIX}unreachable and .../unavailable taints itself.`,
    )
    .action((cluster: string, removes: TaintSelector[], _opts: unknown, cmd: Command) => remove(context(cmd), cluster, removes));
}
