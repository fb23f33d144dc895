/**
 * `flotilla accept` and `flotilla deny`: the hub side of OCM's double opt-in. Both merge-patch
 * `spec.hubAcceptsClient` of ManagedClusters (as `clusteradm accept` does); `--wait` polls until
 * an accepted cluster is Joined and Available (waiting first for it to register, if needed), or
 * until a denied one is no longer HubAccepted. A cluster that was accepted before the command must
 * also renew its lease after the command started (conditions a departed agent left behind are
 * not a join), and a registration waiting with a new key fails the wait at once, naming the key
 * to accept: its agent cannot join until an admin accepts it. `accept --key <kid>` accepts the key a
 * registration with a new key is waiting with (the annotation `flotilla.dev/pending-key-id`), as
 * OCM's admin approves a cluster's new CSR.
 */
import { Command, InvalidArgumentError } from "commander";
import { clusterNames, commaList, conditionStatus, getCluster, isJoinedAndAvailable, isNotFound, NO_SUCH_CLUSTER } from "../clusters.ts";
import type { CommandContext } from "../context.ts";
import { CliError, renderError, ReportedFailure } from "../errors.ts";
import { ClusterConditions, Paths, type KubeObject } from "../resources.ts";
import { parseDuration } from "../time.ts";
import { pollUntil } from "../wait.ts";

/** The options of `accept` and `deny`. */
interface DecisionOptions {
  clusters?: string[];
  /** The pending key ID to accept (accept only). */
  key?: string;
  wait?: boolean;
  /** Seconds. */
  timeout: number;
}

/** The default `--timeout` of `--wait`, in seconds. */
export const DEFAULT_WAIT_SECONDS = 300;

const { HubAccepted, Joined, Available } = ClusterConditions;

function timeoutArg(value: string): number {
  try {
    const s = parseDuration(value);
    if (s <= 0) throw new Error("the timeout must be more than 0 seconds");
    return s;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

interface WaitSettings {
  deadlineMs: number;
  timeoutSeconds: number;
}

/** Reads the cluster; with `wait`, waits for it to register when it does not exist yet. */
async function findCluster(ctx: CommandContext, name: string, wait: WaitSettings | undefined): Promise<KubeObject> {
  const client = ctx.client();
  try {
    return await getCluster(client, name, `${NO_SUCH_CLUSTER}, or pass --wait to wait for it to register`);
  } catch (err) {
    if (!wait || !isNotFound(err)) throw err;
  }
  const found = await pollUntil<KubeObject>({
    ...wait,
    progress: ctx.progress(),
    intervalMs: ctx.pollIntervalMs,
    timeoutHint: "start its agent with a bootstrap token (`flotilla token create` prints the command), then run this again",
    probe: async () => {
      try {
        return { done: true, state: "", value: await getCluster(client, name) };
      } catch (err) {
        if (isNotFound(err)) return { done: false, state: `waiting for cluster ${name} to register` };
        throw err;
      }
    },
  });
  ctx.out(`cluster ${name} registered\n`);
  return found!;
}

/** The annotation that shows a registration's pending key, and the one that accepts it (src/kinds/managedcluster.ts). */
const PENDING_KEY_ANNOTATION = "flotilla.dev/pending-key-id";
const ACCEPT_KEY_ANNOTATION = "flotilla.dev/accept-key-id";

/**
 * Accepts the pending key `kid` of cluster `name`: the key becomes the cluster's only one and
 * every earlier key stops at once.
 * @throws Error when the cluster has no pending key with that ID.
 */
async function acceptKey(ctx: CommandContext, mc: KubeObject, kid: string): Promise<void> {
  const name = mc.metadata.name;
  const pending = mc.metadata.annotations?.[PENDING_KEY_ANNOTATION];
  if (pending !== kid) {
    throw new Error(pending ? `cluster ${name} is waiting with key ${pending}, not ${kid}` : `cluster ${name} has no registration waiting with a new key`);
  }
  await ctx
    .client()
    .mergePatch(Paths.managedClusters(name), { metadata: { annotations: { [ACCEPT_KEY_ANNOTATION]: kid } } }, { hints: { notFound: NO_SUCH_CLUSTER } });
  ctx.out(`key ${kid} accepted: it is now cluster ${name}'s only key\n`);
}

/**
 * The error of a wait that cannot end: a registration of cluster `name` waits with key `kid`, so
 * the agent running it cannot join until an admin accepts the key (docs/agent-protocol.md, "A new
 * key for a known cluster").
 */
function pendingKeyError(name: string, kid: string): CliError {
  return new CliError(
    `cluster ${name} cannot join: its agent registered with a new key ${kid}, which the hub holds until an admin accepts it`,
    `if that key is your agent's (its log names it), run \`flotilla accept ${name} --key ${kid}\``,
  );
}

/** `renewTime` of the cluster's Lease (`managed-cluster-lease` in its namespace) in epoch ms, or undefined (none yet). */
async function leaseRenewedMs(ctx: CommandContext, name: string): Promise<number | undefined> {
  try {
    const lease = await ctx.client().get<KubeObject>(`/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(name)}/leases/managed-cluster-lease`);
    const t = Date.parse(String((lease.spec as { renewTime?: string } | undefined)?.renewTime ?? ""));
    return Number.isNaN(t) ? undefined : t;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function acceptOne(ctx: CommandContext, name: string, wait: WaitSettings | undefined, key?: string): Promise<void> {
  const client = ctx.client();
  const startedMs = Date.now();
  const mc = await findCluster(ctx, name, wait);
  if (key) await acceptKey(ctx, mc, key);
  else if (mc.metadata.annotations?.[PENDING_KEY_ANNOTATION]) {
    const pending = mc.metadata.annotations[PENDING_KEY_ANNOTATION];
    ctx.warn(
      `cluster ${name}: a registration is waiting with a new key ${pending}; if it is your agent's (its log names its key), run \`flotilla accept ${name} --key ${pending}\`\n`,
    );
  }
  const alreadyAccepted = mc.spec?.hubAcceptsClient === true;
  if (alreadyAccepted) ctx.out(`cluster ${name} is already accepted\n`);
  else {
    await client.mergePatch(Paths.managedClusters(name), { spec: { hubAcceptsClient: true } }, { hints: { notFound: NO_SUCH_CLUSTER } });
    ctx.out(`cluster ${name} accepted\n`);
  }
  if (!wait) return;
  await pollUntil({
    ...wait,
    progress: ctx.progress(),
    intervalMs: ctx.pollIntervalMs,
    timeoutHint: `is its agent running? the agent's log says why it has not joined; \`flotilla get clusters ${name}\` shows its state`,
    probe: async () => {
      const cur = await getCluster(client, name);
      const pending = cur.metadata.annotations?.[PENDING_KEY_ANNOTATION];
      if (pending && pending !== key) throw pendingKeyError(name, pending);
      const state = `waiting for cluster ${name} to join (${Joined}=${conditionStatus(cur, Joined)}, ${Available}=${conditionStatus(cur, Available)})`;
      if (!isJoinedAndAvailable(cur)) return { done: false, state };
      // Accepted before: its conditions may be a departed agent's; a renewal since we started is a live one.
      if (!alreadyAccepted) return { done: true, state };
      const renewed = await leaseRenewedMs(ctx, name);
      const live = renewed !== undefined && renewed >= startedMs - 1000;
      return { done: live, state: live ? state : `waiting for cluster ${name}'s agent to renew its lease` };
    },
  });
  ctx.out(`cluster ${name} joined and is available\n`);
}

async function denyOne(ctx: CommandContext, name: string, wait: WaitSettings | undefined): Promise<void> {
  const client = ctx.client();
  const mc = await getCluster(client, name);
  if (mc.spec?.hubAcceptsClient !== true && conditionStatus(mc, HubAccepted) !== "True") ctx.out(`cluster ${name} is not accepted\n`);
  else {
    await client.mergePatch(Paths.managedClusters(name), { spec: { hubAcceptsClient: false } }, { hints: { notFound: NO_SUCH_CLUSTER } });
    ctx.out(`cluster ${name} denied; its agent can no longer renew its lease\n`);
  }
  if (!wait) return;
  await pollUntil({
    ...wait,
    progress: ctx.progress(),
    intervalMs: ctx.pollIntervalMs,
    timeoutHint: `the hub has not revoked the cluster yet; \`flotilla get clusters ${name}\` shows its state`,
    probe: async () => {
      const status = conditionStatus(await getCluster(client, name), HubAccepted);
      return { done: status !== "True", state: `waiting for the hub to revoke cluster ${name} (${HubAccepted}=${status})` };
    },
  });
  ctx.out(`cluster ${name} is no longer accepted (${HubAccepted}=False)\n`);
}

/**
 * Runs `one` for each cluster. With one cluster its error propagates; with several, each error
 * is reported and the others still run, then the command fails.
 *
 * @throws the single cluster's error, or ReportedFailure.
 */
async function forEachCluster(ctx: CommandContext, names: string[], opts: DecisionOptions, one: typeof acceptOne): Promise<void> {
  const wait = opts.wait ? { deadlineMs: ctx.now() + opts.timeout * 1000, timeoutSeconds: opts.timeout } : undefined;
  if (opts.key && names.length !== 1) throw new InvalidArgumentError("--key accepts the key of one cluster: name exactly one");
  if (names.length === 1) return one(ctx, names[0]!, wait, opts.key);
  let failed = false;
  for (const name of names) {
    try {
      await one(ctx, name, wait);
    } catch (err) {
      failed = true;
      ctx.warn(renderError(err));
    }
  }
  if (failed) throw new ReportedFailure();
}

function withCommonOptions(cmd: Command): Command {
  return cmd
    .argument("[clusters...]", "cluster names")
    .option("--clusters <names>", "comma-separated cluster names (as clusteradm takes them)", commaList)
    .option("--wait", "wait until the change has taken effect, showing progress")
    .option("--timeout <duration>", "how long --wait waits: seconds or 90s, 5m, 1h", timeoutArg, DEFAULT_WAIT_SECONDS);
}

/**
 * Adds `accept` and `deny` to `program`.
 *
 * @param context builds the action's context from the command.
 */
export function registerAccept(program: Command, context: (cmd: Command) => CommandContext): void {
  withCommonOptions(
    program
      .command("accept")
      .description("Accept clusters whose agents registered (spec.hubAcceptsClient=true); with --wait, wait until they are Joined and Available"),
  )
    .option(
      "--key <kid>",
      "also accept the new key a registration of this cluster is waiting with (the ManagedCluster's flotilla.dev/pending-key-id); earlier keys stop at once",
    )
    .addHelpText(
      "after",
      "\nWith --wait, a cluster that has not registered yet is waited for too.\n\nA known cluster that registers again with another key (a lost Secret, a reinstalled agent, or\nsomeone else) is held until its key is accepted: compare the key ID with the agent's log first.\n\nExamples:\n  flotilla accept cluster1\n  flotilla accept --clusters cluster1,cluster2 --wait --timeout 2m\n  flotilla accept cluster1 --key <kid>",
    )
    .action(async (positional: string[], opts: DecisionOptions, cmd: Command) => {
      const ctx = context(cmd);
      await forEachCluster(ctx, clusterNames(positional, opts.clusters, "accept"), opts, acceptOne);
      if (!opts.wait) ctx.out("next: `flotilla get clusters` shows when the agents have joined (or accept with --wait)\n");
    });
  withCommonOptions(
    program
      .command("deny")
      .description(
        "Deny clusters (spec.hubAcceptsClient=false): their agents can no longer renew their leases; with --wait, wait until HubAcceptedManagedCluster=False",
      ),
  )
    .addHelpText("after", "\nExamples:\n  flotilla deny cluster1 --wait\n\nAccept a denied cluster again with `flotilla accept`.")
    .action(async (positional: string[], opts: DecisionOptions, cmd: Command) => {
      const ctx = context(cmd);
      await forEachCluster(ctx, clusterNames(positional, opts.clusters, "deny"), opts, denyOne);
    });
}
