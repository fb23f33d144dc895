/**
 * `flotilla drain CLUSTER` and `flotilla uncordon CLUSTER`: KubeFleet's drain tool
 * (kubefleet-dev/kubefleet `tools/fleet/cmd/draincluster`, `uncordoncluster`) on Flotilla's hub.
 *
 * Drain cordons the cluster with KubeFleet's cordon taint in OCM's form, `cordon-key=cordon-value`
 * with effect `NoSelect` (KubeFleet's `NoSchedule`: no placement picks the cluster anew), then, for
 * every ClusterResourcePlacement with a binding on the cluster, creates a
 * ClusterResourcePlacementEviction `drain-eviction-<placement>-<cluster>-<8 random>` and waits for
 * it to be decided, reporting each placement evicted or refused with the eviction's message (a
 * disruption budget that would be broken). As KubeFleet's tool, it then drains once more, to evict
 * what was placed meanwhile. Evictions that are invalid because the placement or its binding went
 * meanwhile count as drained. The exit code is 1 when a placement was refused (the cluster stays
 * cordoned: drain again once the budget allows). Uncordon removes the cordon taint.
 */
import { Command, InvalidArgumentError } from "commander";
import type { CommandContext } from "../context.ts";
import { CliError } from "../errors.ts";
import { Paths, conditionOf, type KubeObject } from "../resources.ts";
import { parseDuration } from "../time.ts";
import { pollUntil } from "../wait.ts";
import { addTaints, removeTaints } from "../../../src/kinds/managedcluster-taints.ts";
import { editTaints } from "./taint.ts";

/** KubeFleet's `CordonTaint` (`tools/utils`), its effect in OCM's words. */
export const CORDON_TAINT = { key: "cordon-key", value: "cordon-value", effect: "NoSelect" } as const;
/** The label on a binding naming its placement (KubeFleet's `PlacementTrackingLabel`). */
const TRACKING_LABEL = "kubernetes-fleet.io/parent-CRP";
/** KubeFleet's Valid-False messages after which a drain still succeeds (the placement or its binding is gone). */
const GONE = [
  "Failed to find ClusterResourcePlacement targeted by eviction",
  "Found deleting ClusterResourcePlacement targeted by eviction",
  "Failed to find scheduler decision for placement in cluster targeted by eviction",
];
const DEFAULT_TIMEOUT_SECONDS = 300;

/** One placement's outcome in a drain. */
interface Outcome {
  placement: string;
  eviction: string;
  result: "evicted" | "refused" | "gone";
  message: string;
}

/** KubeFleet's `generateDrainEvictionName`: `drain-eviction-<placement>-<cluster>-<8 random>`. */
function evictionName(placement: string, cluster: string): string {
  const name = `drain-eviction-${placement}-${cluster}-${crypto.randomUUID().slice(0, 8)}`;
  if (name.length > 253) throw new CliError(`cannot name an eviction for placement ${placement} on cluster ${cluster}: ${name.length} characters is over 253`);
  return name;
}

/** The ClusterResourcePlacements with a binding on `cluster` (not being deleted), sorted. */
async function placementsOn(ctx: CommandContext, cluster: string): Promise<string[]> {
  const list = await ctx.client().get<{ items: KubeObject[] }>(Paths.clusterResourceBindings());
  const names = new Set<string>();
  for (const b of list.items) {
    if ((b.spec as { targetCluster?: string } | undefined)?.targetCluster !== cluster || (b.metadata as { deletionTimestamp?: string }).deletionTimestamp)
      continue;
    const p = b.metadata.labels?.[TRACKING_LABEL];
    if (p) names.add(p);
  }
  return [...names].sort();
}

/** Whether an eviction is decided (KubeFleet's `IsEvictionInTerminalState`). */
function decided(e: KubeObject): boolean {
  const valid = conditionOf(e, "Valid");
  return valid?.status === "False" || conditionOf(e, "Executed") !== undefined;
}

/** One pass of KubeFleet's `drain`: cordon, then an eviction per placement, each awaited. */
async function drainOnce(ctx: CommandContext, cluster: string, deadlineMs: number, timeoutSeconds: number): Promise<Outcome[]> {
  const { result } = await editTaints(ctx, cluster, (taints) => addTaints(taints, [CORDON_TAINT]));
  if (result.changed.length > 0) ctx.out(`cluster ${cluster} cordoned (taint ${CORDON_TAINT.key}=${CORDON_TAINT.value}:${CORDON_TAINT.effect})\n`);
  const client = ctx.client();
  const outcomes: Outcome[] = [];
  for (const placement of await placementsOn(ctx, cluster)) {
    const name = evictionName(placement, cluster);
    await client.create(Paths.evictions(), {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourcePlacementEviction",
      metadata: { name },
      spec: { placementName: placement, clusterName: cluster },
    });
    const e = await pollUntil<KubeObject>({
      probe: async () => {
        const got = await client.get<KubeObject>(Paths.evictions(name));
        return { done: decided(got), state: `waiting for eviction ${name} of placement ${placement}`, value: got };
      },
      progress: ctx.progress(),
      deadlineMs,
      timeoutSeconds,
      intervalMs: Math.min(ctx.pollIntervalMs, 250),
      timeoutHint: `\`kubectl get clusterresourceplacementevictions ${name} -o yaml\` shows it`,
      now: () => ctx.now(),
    });
    const valid = conditionOf(e, "Valid");
    const executed = conditionOf(e, "Executed");
    if (valid?.status === "False") {
      // Invalid for another reason (e.g. PickFixed): refused.
      outcomes.push({ placement, eviction: name, result: GONE.includes(valid.message ?? "") ? "gone" : "refused", message: valid.message ?? "" });
    } else if (executed?.status === "True") outcomes.push({ placement, eviction: name, result: "evicted", message: executed.message ?? "" });
    else outcomes.push({ placement, eviction: name, result: "refused", message: executed?.message ?? "" });
  }
  return outcomes;
}

async function drain(ctx: CommandContext, cluster: string, opts: { timeout: number }): Promise<void> {
  const deadlineMs = ctx.now() + opts.timeout * 1000;
  const first = await drainOnce(ctx, cluster, deadlineMs, opts.timeout);
  for (const o of first) ctx.out(`placement ${o.placement}: ${o.result === "refused" ? "refused" : "evicted"} (eviction ${o.eviction}: ${o.message})\n`);
  if (first.length === 0) ctx.out(`no ClusterResourcePlacement has objects on cluster ${cluster}\n`);
  // KubeFleet's tool drains again: what was placed on the cluster meanwhile goes too.
  const again = await drainOnce(ctx, cluster, deadlineMs, opts.timeout);
  const firstRefused = new Set(first.filter((o) => o.result === "refused").map((o) => o.placement));
  for (const o of again) {
    if (o.result === "refused" && firstRefused.has(o.placement)) continue;
    ctx.out(`placement ${o.placement}: ${o.result === "refused" ? "refused" : "evicted"} (eviction ${o.eviction}: ${o.message})\n`);
  }
  const refused = again.filter((o) => o.result === "refused");
  if (refused.length > 0)
    throw new CliError(
      `drain of cluster ${cluster} is incomplete: ${refused.length} placement(s) refused (${refused.map((o) => o.placement).join(", ")})`,
      "a ClusterResourcePlacementDisruptionBudget keeps them: drain again once enough of their other clusters are available, or change the budget; the cluster stays cordoned",
    );
  ctx.out(`cluster ${cluster} drained; \`flotilla uncordon ${cluster}\` lets placements pick it again\n`);
}

async function uncordon(ctx: CommandContext, cluster: string): Promise<void> {
  const { result } = await editTaints(ctx, cluster, (taints) => removeTaints(taints, [{ key: CORDON_TAINT.key, effect: CORDON_TAINT.effect }]));
  ctx.out(result.changed.length > 0 ? `cluster ${cluster} uncordoned\n` : `cluster ${cluster} is not cordoned\n`);
}

function timeoutArg(value: string): number {
  try {
    const s = parseDuration(value);
    if (s <= 0) throw new Error("the timeout must be more than 0 seconds");
    return s;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/**
 * Adds `drain` and `uncordon` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerDrain(program: Command, context: (cmd: Command) => CommandContext): void {
  program
    .command("drain")
    .description("Cordon a member cluster and evict every ClusterResourcePlacement from it, as disruption budgets allow (KubeFleet's draincluster)")
    .argument("<cluster>", "the ManagedCluster's name")
    .option("--timeout <duration>", "how long to wait for the evictions: seconds or 90s, 5m, 1h", timeoutArg, DEFAULT_TIMEOUT_SECONDS)
    .addHelpText("after", `\nThe cordon is the taint ${CORDON_TAINT.key}=${CORDON_TAINT.value}:${CORDON_TAINT.effect}.\n\nExample:\n  flotilla drain member-1`)
    .action((cluster: string, opts: { timeout: number }, cmd: Command) => drain(context(cmd), cluster, opts));
  program
    .command("uncordon")
    .description("Remove the cordon taint `flotilla drain` put on a member cluster (KubeFleet's uncordoncluster)")
    .argument("<cluster>", "the ManagedCluster's name")
    .action((cluster: string, _opts: unknown, cmd: Command) => uncordon(context(cmd), cluster));
}
