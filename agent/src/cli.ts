/**
 * The `flotilla-agent` command line (commander). Exit codes: 0 after a clean stop (SIGINT or
 * SIGTERM) and after the cluster has left the hub (docs/agent-protocol.md "Leave"), 1 when the
 * agent gives up (e.g. 409 at registration, no bootstrap token), 2 for bad flags.
 *
 * ```
 * flotilla-agent --hub-url URL --cluster-name NAME [--bootstrap-token T] [--kubeconfig PATH]
 *   [--namespace NS] [--claim name=value ...] [--simulate] [--simulate-state FILE]
 *   [--simulate-nodes N] [--health-failure-threshold SECONDS] [--status-sync-interval SECONDS]
 *   [--appliedmanifestwork-eviction-grace-period DURATION] [--transport poll|ws] [--log-format text|json]
 *   [--addon-health-check-period SECONDS] [--addon-token-expiration-seconds SECONDS]
 * flotilla-agent rotate-key [--cluster-name NAME] [--hub-url URL] [--kubeconfig PATH]
 *   [--namespace NS] [--simulate] [--simulate-state FILE] [--log-format text|json]
 * flotilla-agent install --hub-url URL --cluster-name NAME --bootstrap-token TOKEN
 *   [--namespace NS] [--image IMAGE] [--claim name=value ...]
 * ```
 *
 * `--transport` (or `FLOTILLA_TRANSPORT`) chooses how the agent talks to the hub once accepted
 * (transport/transport.ts): `ws`, the default (one WebSocket; when the upgrade is refused, e.g.
 * by a proxy that blocks WebSockets, it logs one line and runs `poll`), or `poll` (HTTP only).
 * `--namespace` may also come from `FLOTILLA_NAMESPACE` (the install manifests set it from the
 * downward API). `install` prints the install manifests (install.ts) as YAML on stdout.
 */
import fs from "node:fs";
import path from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { AgentFatalError, DEFAULT_BACKOFF_CAP_SECONDS, rotateKey, startAgent } from "./agent.ts";
import { DEFAULT_AGENT_NAMESPACE } from "./credentials.ts";
import type { ClusterClaim } from "../../src/agent-api/protocol.ts";
import { isDNS1123Label } from "../../src/k8s/validation.ts";
import { defaultAgentImage, InstallOptionsError, renderInstallManifests, toMultiDocumentYaml } from "./install.ts";
import type { KubeConfig } from "./kube.ts";
import { kubeConfigFromYaml, loadKubeConfig } from "./kubeconfig.ts";
import { createLogger, type LogFormat, type Logger } from "./log.ts";
import { DEFAULT_HEALTH_FAILURE_THRESHOLD_SECONDS, parseClaimFlag } from "./status.ts";
import { DEFAULT_STATUS_SYNC_INTERVAL_SECONDS } from "./work/loop.ts";
import { DEFAULT_EVICTION_GRACE_PERIOD_MS } from "./work/controller.ts";
import { parseRolloutDuration } from "../../src/work/rollout.ts";
import { DEFAULT_TRANSPORT, TRANSPORT_NAMES, type TransportName } from "./transport/transport.ts";
// Constants only: the add-on agent's code itself is imported when a work names an add-on.
import { ADDON_LEASE_SYNC_INTERVAL_MS, DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS } from "./addon/constants.ts";

/** Exit code for bad flags, as with most CLIs. */
export const EXIT_USAGE = 2;
/** Exit code when the agent gives up. */
export const EXIT_FAILURE = 1;

/** Default of `--simulate-ready-delay`: the simulated cluster's workloads are ready this many milliseconds after a change (kwok-like). */
export const DEFAULT_SIMULATE_READY_DELAY_MS = 100;

function parseCount(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

function parseSeconds(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError("expected a number of seconds >= 0");
  return n;
}

function parsePositiveSeconds(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a number of seconds > 0");
  return n;
}

/** An add-on token's lifetime in whole seconds: at least 600, at most 2^32 (a TokenRequest's bounds). */
function parseTokenSeconds(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 600 || Number(value) > 2 ** 32) throw new InvalidArgumentError("expected whole seconds from 600 to 4294967296");
  return Number(value);
}

/** A Go duration (`time.ParseDuration`, as OCM's flags take it: "60m", "1h30m", "90s") in milliseconds. */
function parseGoDurationFlag(value: string): number {
  try {
    return parseRolloutDuration(value.trim(), NaN);
  } catch {
    throw new InvalidArgumentError('expected a Go duration such as "60m", "1h" or "90s"');
  }
}

function collectClaim(value: string, previous: ClusterClaim[]): ClusterClaim[] {
  try {
    return [...previous, parseClaimFlag(value)];
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

/** Options shared by the agent and `rotate-key` that choose the member cluster. */
interface ClusterSourceOptions {
  kubeconfig?: string;
  simulate?: boolean;
  simulateState?: string;
  simulateNodes?: number;
  /** `--simulate-ready-delay`: milliseconds until the simulated cluster's workloads are ready. */
  simulateReadyDelay?: number;
}

/**
 * Returns the member cluster's KubeConfig: the simulator's (started in-process) with
 * `--simulate`, else {@link loadKubeConfig}.
 */
async function openCluster(opts: ClusterSourceOptions, clusterName: string): Promise<{ kubeConfig: KubeConfig; close: () => Promise<void> }> {
  if (!opts.simulate) return { kubeConfig: loadKubeConfig(opts.kubeconfig), close: async () => undefined };
  const statePath = path.resolve(opts.simulateState ?? path.join(".flotilla", "sim", `${clusterName}.json`));
  fs.mkdirSync(path.dirname(statePath), { recursive: true });
  // Loaded only with --simulate, so a real deployment never loads the simulator.
  const { startSimulatedCluster } = await import("../sim/index.ts");
  const sim = await startSimulatedCluster({
    statePath,
    readyDelayMs: opts.simulateReadyDelay ?? DEFAULT_SIMULATE_READY_DELAY_MS,
    ...(opts.simulateNodes !== undefined ? { nodes: opts.simulateNodes } : {}),
  });
  return { kubeConfig: kubeConfigFromYaml(sim.kubeconfigYaml), close: () => sim.close() };
}

function addClusterSourceOptions(cmd: Command): Command {
  return cmd
    .option("--kubeconfig <path>", "kubeconfig of the member cluster (default: in-cluster config, else $KUBECONFIG)")
    .addOption(new Option("--namespace <ns>", "namespace of the credentials Secret").env("FLOTILLA_NAMESPACE").default(DEFAULT_AGENT_NAMESPACE))
    .option("--simulate", "run against an in-memory simulated member cluster started in-process")
    .option("--simulate-state <file>", "state file of the simulated cluster (default .flotilla/sim/<cluster-name>.json)")
    .addOption(new Option("--log-format <format>", "log line format").choices(["text", "json"]).default("text"));
}

/** Parsed options of the agent command. */
interface RunOptions extends ClusterSourceOptions {
  hubUrl?: string;
  clusterName?: string;
  bootstrapToken?: string;
  namespace: string;
  claim: ClusterClaim[];
  healthFailureThreshold: number;
  statusSyncInterval: number;
  addonHealthCheckPeriod: number;
  addonTokenExpirationSeconds: number;
  appliedmanifestworkEvictionGracePeriod: number;
  backoffCap: number;
  transport: TransportName;
  logFormat: LogFormat;
}

function usageError(cmd: Command, message: string): never {
  cmd.error(`error: ${message}`, { exitCode: EXIT_USAGE, code: "flotilla.usage" });
}

function checkHubUrl(cmd: Command, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    usageError(cmd, `--hub-url "${url}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") usageError(cmd, `--hub-url "${url}" must be http or https`);
}

function checkClusterName(cmd: Command, name: string): void {
  if (isDNS1123Label(name).length > 0) {
    usageError(cmd, `--cluster-name "${name}" must be a DNS-1123 label (lower case letters, digits and '-', at most 63)`);
  }
}

/** The package version (package.json `version`, built into the bundle), for the default image tag. */
function packageVersion(): string {
  return pkg.version;
}

/** Waits for SIGINT or SIGTERM, then calls `stop`; returns a function removing the handlers. */
function onSignals(log: Logger, stop: () => Promise<void>): () => void {
  const handler = (signal: NodeJS.Signals): void => {
    log.info(`received ${signal}; stopping`);
    void stop();
  };
  process.once("SIGINT", handler);
  process.once("SIGTERM", handler);
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
  };
}

/** Extra knobs of {@link runCli}, for tests. */
export interface CliDeps {
  /** Where log lines go (default stderr). */
  writeLog?: (line: string) => void;
  /** Where commander writes usage errors and help (default stderr/stdout). */
  writeErr?: (text: string) => void;
  /** Where help/version text goes (default stdout). */
  writeOut?: (text: string) => void;
}

/**
 * Runs the `flotilla-agent` command line.
 *
 * @param argv full argv as in `process.argv` (node, script, args…).
 * @param deps output sinks (tests).
 * @returns the exit code: 0 after a clean stop or `--help`; 1 when the agent gives up or
 *   `rotate-key` fails; 2 for bad flags. Never calls `process.exit`.
 */
export async function runCli(argv: readonly string[], deps: CliDeps = {}): Promise<number> {
  let exitCode = 0;
  const program = new Command("flotilla-agent");
  program
    .description("Flotilla member-cluster agent: registers the cluster with the hub and keeps its lease and status fresh.")
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeErr: deps.writeErr ?? ((s) => void process.stderr.write(s)),
      writeOut: deps.writeOut ?? ((s) => void process.stdout.write(s)),
    })
    .addOption(new Option("--hub-url <url>", "hub base URL").env("FLOTILLA_HUB_URL"))
    .addOption(new Option("--cluster-name <name>", "ManagedCluster name (DNS-1123 label)").env("FLOTILLA_CLUSTER_NAME"))
    .addOption(new Option("--bootstrap-token <token>", "bootstrap token <id>.<secret> (first registration only)").env("FLOTILLA_BOOTSTRAP_TOKEN"))
    .option("--claim <name=value>", "extra cluster claim (repeatable)", collectClaim, [] as ClusterClaim[])
    .option("--simulate-nodes <n>", "number of nodes of the simulated cluster", parseCount)
    .option(
      "--simulate-ready-delay <ms>",
      `milliseconds until a workload of the simulated cluster is ready (default ${DEFAULT_SIMULATE_READY_DELAY_MS})`,
      parseCount,
    )
    .option(
      "--health-failure-threshold <seconds>",
      "seconds a kube-apiserver failure must persist before it is reported",
      parseSeconds,
      DEFAULT_HEALTH_FAILURE_THRESHOLD_SECONDS,
    )
    .option(
      "--status-sync-interval <seconds>",
      "seconds between two status syncs of the applied works (drift repair and status reports; + up to 90% jitter)",
      parsePositiveSeconds,
      DEFAULT_STATUS_SYNC_INTERVAL_SECONDS,
    )
    .option(
      "--appliedmanifestwork-eviction-grace-period <duration>",
      "how long what a work applied is kept once the work disappears from the hub without being deleted there (a hub restored from a backup, a wrong hub URL), as a Go duration; 100 years or more never evicts",
      parseGoDurationFlag,
      DEFAULT_EVICTION_GRACE_PERIOD_MS,
    )
    .option(
      "--addon-health-check-period <seconds>",
      "seconds between two checks of the add-ons' Leases and hub credentials (OCM's add-on lease controller: 30)",
      parsePositiveSeconds,
      ADDON_LEASE_SYNC_INTERVAL_MS / 1000,
    )
    .option(
      "--addon-token-expiration-seconds <seconds>",
      "lifetime of the hub tokens asked for add-ons, renewed at 20% left (OCM's default: one year; at least 600)",
      parseTokenSeconds,
      DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS,
    )
    .addOption(
      new Option(
        "--backoff-cap <seconds>",
        `largest wait between two attempts to reach a failing hub (the backoff: ${DEFAULT_BACKOFF_CAP_SECONDS / 60} min by default, full jitter from 1 s doubling); a cheap probe of the hub's /livez every ~3 s ends a wait as soon as the hub answers`,
      )
        .argParser(parsePositiveSeconds)
        .env("FLOTILLA_BACKOFF_CAP")
        .default(DEFAULT_BACKOFF_CAP_SECONDS),
    )
    .addOption(
      new Option(
        "--transport <transport>",
        "how the agent talks to the hub once accepted: ws (one WebSocket: works pushed at once, pings renew the lease; falls back to poll when the upgrade is refused) or poll (HTTP heartbeats; works fetched when their ETag changes)",
      )
        .choices(TRANSPORT_NAMES)
        .env("FLOTILLA_TRANSPORT")
        .default(DEFAULT_TRANSPORT),
    );
  addClusterSourceOptions(program);
  program.action(async (opts: RunOptions) => {
    if (!opts.hubUrl) usageError(program, "--hub-url (or FLOTILLA_HUB_URL) is required");
    if (!opts.clusterName) usageError(program, "--cluster-name (or FLOTILLA_CLUSTER_NAME) is required");
    checkHubUrl(program, opts.hubUrl);
    checkClusterName(program, opts.clusterName);
    if (opts.kubeconfig && opts.simulate) usageError(program, "--kubeconfig and --simulate exclude each other");
    const log = createLogger({ format: opts.logFormat, write: deps.writeLog });
    let cluster: Awaited<ReturnType<typeof openCluster>>;
    try {
      cluster = await openCluster(opts, opts.clusterName);
    } catch (err) {
      log.error(`cannot reach the member cluster configuration: ${err instanceof Error ? err.message : String(err)}`);
      exitCode = EXIT_FAILURE;
      return;
    }
    log.info("starting flotilla-agent", {
      cluster: opts.clusterName,
      hub: opts.hubUrl,
      namespace: opts.namespace,
      simulate: opts.simulate === true,
      transport: opts.transport,
    });
    const agent = await startAgent({
      hubUrl: opts.hubUrl,
      clusterName: opts.clusterName,
      bootstrapToken: opts.bootstrapToken,
      kubeConfig: cluster.kubeConfig,
      namespace: opts.namespace,
      claims: opts.claim,
      healthFailureThresholdSeconds: opts.healthFailureThreshold,
      statusSyncIntervalSeconds: opts.statusSyncInterval,
      evictionGracePeriodMs: opts.appliedmanifestworkEvictionGracePeriod,
      transport: opts.transport,
      timing: { backoffCapMs: opts.backoffCap * 1000 },
      addons: { syncIntervalMs: opts.addonHealthCheckPeriod * 1000, tokenExpirationSeconds: opts.addonTokenExpirationSeconds },
      logger: log,
      onStop: cluster.close,
    });
    const off = onSignals(log, () => agent.stop());
    try {
      await agent.done;
      // After a leave the loop ended on its own: stop() closes what is left (health probe, simulator).
      await agent.stop();
      log.info(agent.state() === "left" ? "stopped after leaving the hub" : "stopped");
    } catch (err) {
      exitCode = EXIT_FAILURE;
      if (!(err instanceof AgentFatalError)) log.error(String(err));
      await agent.stop();
    } finally {
      off();
    }
  });

  const rotate = new Command("rotate-key")
    .description("Generate a new key pair, register it with the hub (signed with the old key), then store it in the Secret.")
    .addOption(new Option("--hub-url <url>", "hub base URL (default: the Secret's hub-url)").env("FLOTILLA_HUB_URL"))
    .addOption(new Option("--cluster-name <name>", "cluster name; must match the Secret").env("FLOTILLA_CLUSTER_NAME"));
  addClusterSourceOptions(rotate);
  rotate.action(async (opts: ClusterSourceOptions & { hubUrl?: string; clusterName?: string; namespace: string; logFormat: LogFormat }) => {
    if (opts.hubUrl) checkHubUrl(rotate, opts.hubUrl);
    if (opts.simulate && !opts.clusterName && !opts.simulateState) {
      usageError(rotate, "--simulate needs --cluster-name or --simulate-state to find the simulated cluster's state");
    }
    const log = createLogger({ format: opts.logFormat, write: deps.writeLog });
    let cluster: Awaited<ReturnType<typeof openCluster>> | undefined;
    try {
      cluster = await openCluster(opts, opts.clusterName ?? "cluster");
      const r = await rotateKey({
        kubeConfig: cluster.kubeConfig,
        namespace: opts.namespace,
        hubUrl: opts.hubUrl,
        clusterName: opts.clusterName,
        logger: log,
      });
      (deps.writeOut ?? ((s: string) => void process.stdout.write(s)))(`${r.newKid}\n`);
    } catch (err) {
      log.error(`key rotation failed: ${err instanceof Error ? err.message : String(err)}`);
      exitCode = EXIT_FAILURE;
    } finally {
      await cluster?.close();
    }
  });
  program.addCommand(rotate);

  // copyInheritedSettings: exitOverride and the output sinks, so bad flags return 2 instead of exiting.
  const install = new Command("install")
    .copyInheritedSettings(program)
    .description("Print the manifests that install the agent in a member cluster (pipe them to `kubectl apply -f -`).")
    .addOption(new Option("--hub-url <url>", "hub base URL").env("FLOTILLA_HUB_URL"))
    .addOption(new Option("--cluster-name <name>", "ManagedCluster name (DNS-1123 label)").env("FLOTILLA_CLUSTER_NAME"))
    .addOption(new Option("--bootstrap-token <token>", "bootstrap token <id>.<secret>").env("FLOTILLA_BOOTSTRAP_TOKEN"))
    .addOption(new Option("--namespace <ns>", "namespace of the agent").default(DEFAULT_AGENT_NAMESPACE))
    .option("--image <image>", "agent container image (default flotilla-agent:<version>, built as docs/install.md says)")
    .option("--claim <name=value>", "extra cluster claim (repeatable)", collectClaim, [] as ClusterClaim[]);
  install.action((opts: { hubUrl?: string; clusterName?: string; bootstrapToken?: string; namespace: string; image?: string; claim: ClusterClaim[] }) => {
    if (!opts.hubUrl) usageError(install, "--hub-url (or FLOTILLA_HUB_URL) is required");
    if (!opts.clusterName) usageError(install, "--cluster-name (or FLOTILLA_CLUSTER_NAME) is required");
    if (!opts.bootstrapToken) usageError(install, "--bootstrap-token (or FLOTILLA_BOOTSTRAP_TOKEN) is required");
    let yaml: string;
    try {
      yaml = toMultiDocumentYaml(
        renderInstallManifests({
          hubUrl: opts.hubUrl,
          clusterName: opts.clusterName,
          bootstrapToken: opts.bootstrapToken,
          namespace: opts.namespace,
          image: opts.image ?? defaultAgentImage(packageVersion()),
          claims: opts.claim,
        }),
      );
    } catch (err) {
      if (err instanceof InstallOptionsError) usageError(install, err.message);
      throw err;
    }
    (deps.writeOut ?? ((s: string) => void process.stdout.write(s)))(yaml);
  });
  program.addCommand(install);

  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return 0;
      return EXIT_USAGE;
    }
    throw err;
  }
  return exitCode;
}
