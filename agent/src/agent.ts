/**
 * The agent loop: obtain credentials (register with the bootstrap token, or load them from
 * the Secret), wait until the hub admin accepts the cluster, then send a heartbeat with the
 * cluster's status every `leaseDurationSeconds` (+ up to 25 % jitter), like OCM's registration
 * agent renewing its lease and updating `ManagedCluster.status`, through the transport: over the
 * ws transport's connection the lease is renewed by its pings and the status goes as a message
 * only when it changed; over poll it is `POST .../heartbeat`. Beside it runs the work agent
 * (work/loop.ts): once the cluster is accepted, its transport (transport/ws.ts, the default, or
 * transport/poll.ts) delivers the cluster's ManifestWorks (pushed over the WebSocket; fetched
 * over poll whenever a heartbeat answer's works ETag changed), it applies
 * them, reports their status every status-sync period, and carries out the leave, after which
 * the agent ends on its own (state `left`).
 *
 * Failures never end the loop except the ones a human must fix (no credentials and no
 * bootstrap token; 409/401/422/403 on the first registration; a corrupt Secret). Each ongoing
 * problem is logged once when it starts and once when it ends. When the hub keeps refusing the
 * stored credentials (its state was lost, the cluster deleted there), the agent registers again
 * with its bootstrap token, as OCM's agent falls back to its bootstrap kubeconfig, or says what
 * to do when it has none (docs/agent-protocol.md "Recovery").
 */
import { Backoff, HUB_PROBE_PERIOD_MS, Sleeper, heartbeatDelayMs, sleepProbing, DEFAULT_LEASE_DURATION_SECONDS, type Random } from "./backoff.ts";
import {
  BOOTSTRAP_SECRET_NAME,
  CREDENTIALS_SECRET_NAME,
  CredentialsSecretError,
  DEFAULT_AGENT_NAMESPACE,
  deleteCredentials,
  generateAgentKeyPair,
  loadBootstrapToken,
  loadCredentials,
  signAgentToken,
  signProof,
  storeCredentials,
  type AgentCredentials,
} from "./credentials.ts";
import type { ClusterClaim, HeartbeatAnswer, HeartbeatRequest, RotateKeyAnswer } from "../../src/agent-api/protocol.ts";
import { definitiveRefusal, hubAbsent, HubClient, type HubFailure, type HubResult } from "./hub-client.ts";
import { httpFetch, type HubFetch } from "./http-fetch.ts";
import { getClusterIdentity, listClusterProperties } from "./identity.ts";
import { describeKubeError, rawGet, type KubeConfig } from "./kube.ts";
import { ConditionLog, createLogger, type Logger } from "./log.ts";
import {
  DEFAULT_HEALTH_FAILURE_THRESHOLD_SECONDS,
  HealthTracker,
  MAX_CUSTOM_CLUSTER_CLAIMS,
  buildClusterClaims,
  collectClusterStatus,
  generatedClaims,
  listClusterClaims,
  probeKubeApiServer,
  type HealthReport,
  type ProbeResult,
} from "./status.ts";
import { WorkController } from "./work/controller.ts";
import { DEFAULT_STATUS_SYNC_INTERVAL_SECONDS, WorkLoop } from "./work/loop.ts";
import { PollTransport } from "./transport/poll.ts";
import { DEFAULT_TRANSPORT, type AgentTransport, type TransportName } from "./transport/transport.ts";
import { WsTransport } from "./transport/ws.ts";
import { ProxyServer } from "./proxy.ts";
import { addonsOf, type AddonSpec } from "./addon/spec.ts";
import type { AddonAgent } from "./addon/controller.ts";
import type { DeliveredWork } from "../../src/agent-api/protocol-answers.ts";

/** Where the agent is in its life cycle, as returned by {@link AgentHandle.state}. */
export type AgentState = "starting" | "registering" | "waiting-for-acceptance" | "heartbeating" | "stopped" | "left" | "failed";

/** Timings of the loop, in milliseconds; all have production defaults and are shortened in tests. */
export interface AgentTiming {
  /** Poll period of `GET /agent/v1/clusters/{name}` while waiting for acceptance; default 5 000. */
  acceptancePollMs: number;
  /** First backoff ceiling after a failure; default 1 000. */
  backoffBaseMs: number;
  /** Largest backoff ceiling; default 60 000 (`--backoff-cap`, {@link DEFAULT_BACKOFF_CAP_SECONDS}). */
  backoffCapMs: number;
  /**
   * While backing off from an absent hub (no answer, or a gateway's 502/503/504), how often
   * `GET /livez` probes whether it is back (jittered to 50–150 %); the failed call is made again
   * as soon as it answers. Default 3 000 ({@link HUB_PROBE_PERIOD_MS}).
   */
  hubProbeMs: number;
  /** Probe period of the kube-apiserver between heartbeats (OCM's `--cluster-healthcheck-period`, 1 min); default 60 000. */
  healthCheckPeriodMs: number;
  /** Re-probe period while a failure is within the threshold (OCM requeues every 5 s); default 5 000. */
  healthRecheckMs: number;
  /** Timeout of one hub request; default 15 000. */
  requestTimeoutMs: number;
  /** Random source in [0, 1) for jitter; default `Math.random`. */
  random: Random;
  /**
   * Recovery (docs/agent-protocol.md "Recovery"): the hub's definitive refusals of the agent's
   * credentials ({@link definitiveRefusal}) in a row, with no success between them, before it
   * registers again with its bootstrap token; default 3.
   */
  refusalsBeforeRegistering: number;
  /** ... and how long those refusals must have lasted since the first, in ms; default 10 000. */
  refusedForMs: number;
}

/** The backoff's default cap (`--backoff-cap`), in seconds: 60. */
export const DEFAULT_BACKOFF_CAP_SECONDS = 60;

const DEFAULT_TIMING: AgentTiming = {
  acceptancePollMs: 5_000,
  backoffBaseMs: 1_000,
  backoffCapMs: DEFAULT_BACKOFF_CAP_SECONDS * 1000,
  hubProbeMs: HUB_PROBE_PERIOD_MS,
  healthCheckPeriodMs: 60_000,
  healthRecheckMs: 5_000,
  requestTimeoutMs: 15_000,
  random: Math.random,
  refusalsBeforeRegistering: 3,
  refusedForMs: 10_000,
};

/** Options of {@link startAgent}. */
export interface AgentOptions {
  /** Hub base URL, e.g. `http://127.0.0.1:8787`. */
  hubUrl: string;
  /** ManagedCluster name (a DNS-1123 label). */
  clusterName: string;
  /**
   * Bootstrap token `<id>.<secret>`; needed when the credentials Secret does not exist yet, and
   * used to register again when the hub refuses the stored credentials (its state was lost, the
   * cluster was deleted there), unless the bootstrap Secret `flotilla-bootstrap` of the agent's
   * namespace holds one then (that one wins: an admin may have put a new token there).
   */
  bootstrapToken?: string;
  /** Client configuration of the member cluster. */
  kubeConfig: KubeConfig;
  /** The agent's namespace holding the credentials Secret; default `flotilla-agent`. */
  namespace?: string;
  /** Extra cluster claims (from `--claim name=value`), merged with the ClusterProperties. */
  claims?: ClusterClaim[];
  /** How long (seconds) a kube-apiserver failure must persist before it is reported; default 20. */
  healthFailureThresholdSeconds?: number;
  /** Cap on custom claims; default 20 (OCM's `--max-custom-cluster-claims`). */
  maxCustomClusterClaims?: number;
  /**
   * Status-sync period of the work agent in seconds (OCM's `--status-sync-interval`, default 10):
   * every period, plus up to 90 % jitter, the applied resources are re-read, drift repaired and
   * changed statuses reported. Fractions are allowed (tests use short periods).
   */
  statusSyncIntervalSeconds?: number;
  /**
   * How long the resources of a work that disappears from the hub without being deleted through
   * its finalizer are kept, in milliseconds (OCM's `--appliedmanifestwork-eviction-grace-period`,
   * default 60 minutes; work/controller.ts).
   */
  evictionGracePeriodMs?: number;
  /** Logger; default text lines on stderr. */
  logger?: Logger;
  /** Loop timings (milliseconds); defaults suit production. */
  timing?: Partial<AgentTiming>;
  /** fetch used for hub requests; default {@link httpFetch}. */
  fetch?: HubFetch;
  /**
   * The transport to the hub once accepted (transport/transport.ts); default `ws` (one WebSocket,
   * falling back to `poll` when the upgrade is refused); `poll` for HTTP only.
   */
  transport?: TransportName;
  /**
   * The add-on agent (agent/src/addon/controller.ts): the period of its Lease checks in
   * milliseconds (default 30 000, OCM's), the Lease's grace in milliseconds (default 300 000), and
   * the lifetime of the hub tokens it asks for add-ons, in seconds (default one year, OCM's
   * `--addon-token-expiration-seconds`).
   */
  addons?: { syncIntervalMs?: number; leaseGraceMs?: number; tokenExpirationSeconds?: number; tokenRefusedRetryMs?: number };
  /** Called once by `stop()` after the loop has ended (e.g. to close the simulated cluster). */
  onStop?: () => Promise<void>;
}

/** A running agent, as returned by {@link startAgent}. */
export interface AgentHandle {
  /** Stops the loop (aborting in-flight hub requests), then runs `onStop`. Idempotent. */
  stop(): Promise<void>;
  /** The current {@link AgentState}. */
  state(): AgentState;
  /**
   * Settles when the loop ends: resolves after `stop()` and after the cluster has left the hub
   * (state `left`), rejects with {@link AgentFatalError} when the agent gives up (e.g. a 409 at
   * registration).
   */
  done: Promise<void>;
  /**
   * Rotates the key of this running agent (see {@link rotateKey}) and switches to the new key
   * at once. Resolves with the old and new `kid`.
   * @throws Error when the agent has no credentials yet or the hub refuses.
   */
  rotateKey(): Promise<{ oldKid: string; newKid: string }>;
}

/** An error the agent cannot recover from by retrying; the CLI exits non-zero with its message. */
export class AgentFatalError extends Error {
  override name = "AgentFatalError";
}

function isMalformedSecretError(err: unknown): boolean {
  return err instanceof CredentialsSecretError;
}

class AgentRunner {
  private current: AgentState = "starting";
  private creds: AgentCredentials | undefined;
  private lease = DEFAULT_LEASE_DURATION_SECONDS;
  private readonly abort = new AbortController();
  private readonly sleeper = new Sleeper(this.abort.signal);
  private readonly healthSleeper = new Sleeper(this.abort.signal);
  private readonly timing: AgentTiming;
  private readonly log: Logger;
  private readonly hub: HubClient;
  private readonly hubCond: ConditionLog;
  private readonly authCond: ConditionLog;
  private readonly kubeCond: ConditionLog;
  private readonly statusCond: ConditionLog;
  /** Registering again after refused credentials: what stands in the way, logged once. */
  private readonly recoverCond: ConditionLog;
  /** The hub's definitive refusals of the credentials in a row, and when the first came (epoch ms). */
  private refusals = { count: 0, sinceMs: 0 };
  /** Set when the agent registered again: the heartbeat loop returns to waiting for acceptance. */
  private registeredAgain = false;
  private readonly backoff: Backoff;
  private readonly health: HealthTracker;
  private readonly namespace: string;
  private readonly healthLoopDone: Promise<void>;
  private stopping: Promise<void> | undefined;
  private work: WorkLoop | undefined;
  private transport: AgentTransport | undefined;
  private left = false;
  /** The add-on agent, loaded at the first works list that names an add-on. */
  private addons: Promise<AddonAgent> | undefined;
  readonly done: Promise<void>;

  constructor(private readonly opts: AgentOptions) {
    this.timing = { ...DEFAULT_TIMING, ...opts.timing };
    this.log = opts.logger ?? createLogger();
    this.namespace = opts.namespace ?? DEFAULT_AGENT_NAMESPACE;
    this.hub = new HubClient({ hubUrl: opts.hubUrl, timeoutMs: this.timing.requestTimeoutMs, fetch: this.abortableFetch() });
    this.hubCond = new ConditionLog(this.log, "hub reachable again");
    this.authCond = new ConditionLog(this.log, "hub accepts the agent's credentials again");
    this.kubeCond = new ConditionLog(this.log, "member cluster API reachable again");
    this.statusCond = new ConditionLog(this.log, "cluster status fully readable again");
    this.recoverCond = new ConditionLog(this.log, "registered again with the hub");
    this.backoff = new Backoff(this.timing.backoffBaseMs, this.timing.backoffCapMs, this.timing.random);
    this.health = new HealthTracker((opts.healthFailureThresholdSeconds ?? DEFAULT_HEALTH_FAILURE_THRESHOLD_SECONDS) * 1000);
    this.done = this.run().then(
      async () => {
        await this.work?.stopped();
        this.current = this.left ? "left" : "stopped";
      },
      (err: unknown) => {
        this.current = "failed";
        if (err instanceof AgentFatalError) this.log.error(err.message, { cluster: opts.clusterName });
        else this.log.error(`agent stopped on an unexpected error: ${describeKubeError(err)}`);
        throw err;
      },
    );
    // The caller may never await `done`; keep an unhandled rejection from killing the process.
    this.done.catch(() => undefined);
    this.healthLoopDone = this.healthLoop();
  }

  state(): AgentState {
    return this.current;
  }

  private get aborted(): boolean {
    return this.abort.signal.aborted;
  }

  private abortableFetch(): HubFetch {
    const base = this.opts.fetch ?? httpFetch;
    return (input, init) => base(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, this.abort.signal]) : this.abort.signal });
  }

  private fields(extra: Record<string, string | number | boolean | undefined> = {}) {
    return { cluster: this.opts.clusterName, ...extra };
  }

  // ---- main loop -------------------------------------------------------------------------

  private async run(): Promise<void> {
    const creds = await this.obtainCredentials();
    if (!creds) return;
    this.creds = creds;
    this.startWorkAgent();
    let announcedWaiting = false;
    while (!this.aborted) {
      if (!(await this.waitForAcceptance(announcedWaiting))) return;
      this.work?.startPolling();
      announcedWaiting = await this.heartbeatLoop();
    }
  }

  /**
   * Starts the work agent's sync loop (it repairs drift from the records even before the hub
   * answers); the works poll starts once the cluster is accepted. When it has left the hub, the
   * whole agent ends.
   */
  private startWorkAgent(): void {
    const intervalSeconds = this.opts.statusSyncIntervalSeconds ?? DEFAULT_STATUS_SYNC_INTERVAL_SECONDS;
    const common = {
      clusterName: this.opts.clusterName,
      hub: this.hub,
      sign: () => this.sign(),
      logger: this.log,
      signal: this.abort.signal,
    };
    const timing = {
      backoffBaseMs: this.timing.backoffBaseMs,
      backoffCapMs: this.timing.backoffCapMs,
      hubProbeMs: this.timing.hubProbeMs,
      random: this.timing.random,
    };
    const transport =
      (this.opts.transport ?? DEFAULT_TRANSPORT) === "ws"
        ? new WsTransport({
            ...common,
            timing: { ...timing, requestTimeoutMs: this.timing.requestTimeoutMs },
            proxy: new ProxyServer(this.opts.kubeConfig, this.log),
          })
        : new PollTransport({ ...common, timing });
    this.transport = transport;
    this.work = new WorkLoop({
      clusterName: this.opts.clusterName,
      transport,
      live: (timeoutMs) => this.hub.live(timeoutMs),
      controller: new WorkController({
        kubeConfig: this.opts.kubeConfig,
        namespace: this.namespace,
        logger: this.log,
        requestTimeoutMs: this.timing.requestTimeoutMs,
        signal: this.abort.signal,
        ...(this.opts.evictionGracePeriodMs !== undefined ? { evictionGracePeriodMs: this.opts.evictionGracePeriodMs } : {}),
      }),
      deleteCredentials: () => deleteCredentials(this.opts.kubeConfig, this.namespace),
      kubeConfig: this.opts.kubeConfig,
      requestTimeoutMs: this.timing.requestTimeoutMs,
      logger: this.log,
      timing: {
        statusSyncIntervalMs: intervalSeconds * 1000,
        backoffBaseMs: this.timing.backoffBaseMs,
        backoffCapMs: this.timing.backoffCapMs,
        hubProbeMs: this.timing.hubProbeMs,
        random: this.timing.random,
      },
      signal: this.abort.signal,
      onWorks: (works) => this.onWorks(works),
      onResent: () => void this.addons?.then((a) => a.resend()),
    });
    void this.work.done.then((how) => {
      if (how !== "left") return;
      this.left = true;
      this.abort.abort();
    });
  }

  /**
   * A new works list: the add-ons it deploys go to the add-on agent, which is loaded (a dynamic
   * `import()`, its own chunk of the bundle) only when a work names an add-on.
   */
  private onWorks(works: DeliveredWork[]): void {
    const specs: AddonSpec[] = addonsOf(works);
    if (!this.addons && specs.length === 0) return;
    this.addons ??= import("./addon/controller.ts").then(({ AddonAgent }) => {
      const o = this.opts.addons ?? {};
      return new AddonAgent({
        clusterName: this.opts.clusterName,
        hubUrl: this.opts.hubUrl,
        kubeConfig: this.opts.kubeConfig,
        hub: { addonStatus: (body) => this.transport!.addonStatus(body), addonToken: (addon, body) => this.transport!.addonToken(addon, body) },
        logger: this.log,
        signal: this.abort.signal,
        ...(o.tokenExpirationSeconds !== undefined ? { tokenExpirationSeconds: o.tokenExpirationSeconds } : {}),
        timing: { syncIntervalMs: o.syncIntervalMs, leaseGraceMs: o.leaseGraceMs, tokenRefusedRetryMs: o.tokenRefusedRetryMs, random: this.timing.random },
      });
    });
    void this.addons.then((a) => a.setAddons(specs));
  }

  /** Retries a member-cluster call with backoff until it succeeds; `undefined` when stopped. */
  private async retryKube<T>(what: string, fn: () => Promise<T>, fatal?: (err: unknown) => boolean): Promise<T | undefined> {
    const backoff = new Backoff(this.timing.backoffBaseMs, this.timing.backoffCapMs, this.timing.random);
    while (!this.aborted) {
      try {
        const v = await fn();
        this.kubeCond.clear(this.fields());
        return v;
      } catch (err) {
        if (fatal?.(err)) throw new AgentFatalError(`${what}: ${describeKubeError(err)}`);
        this.kubeCond.set("failing", `member cluster API call failed (${what}): ${describeKubeError(err)}; retrying with backoff`, this.fields());
        await this.sleeper.sleep(backoff.next());
      }
    }
    return undefined;
  }

  private async obtainCredentials(): Promise<AgentCredentials | undefined> {
    const { clusterName, hubUrl } = this.opts;
    const secretRef = `${this.namespace}/${CREDENTIALS_SECRET_NAME}`;
    const loaded = await this.retryKube("reading the credentials Secret", () => loadCredentials(this.opts.kubeConfig, this.namespace), isMalformedSecretError);
    if (this.aborted) return undefined;
    if (loaded) {
      if (loaded.clusterName === clusterName && loaded.hubUrl.replace(/\/+$/, "") === hubUrl.replace(/\/+$/, "")) {
        this.log.info(`loaded hub credentials from Secret ${secretRef}`, this.fields({ kid: loaded.key.kid }));
        return loaded;
      }
      this.log.warn(`Secret ${secretRef} holds credentials of cluster ${loaded.clusterName} at ${loaded.hubUrl}; registering anew`, this.fields());
    }
    const token = this.opts.bootstrapToken;
    if (!token) {
      throw new AgentFatalError(`no hub credentials in Secret ${secretRef} and no bootstrap token: pass --bootstrap-token or set FLOTILLA_BOOTSTRAP_TOKEN`);
    }
    this.current = "registering";
    const identity = await this.retryKube("reading the cluster ID", () => getClusterIdentity(this.opts.kubeConfig));
    if (!identity) return undefined;
    const claims = await this.registrationClaims(identity.id);
    const key = await generateAgentKeyPair();
    this.backoff.reset();
    while (!this.aborted) {
      const proof = await signProof(clusterName, key, identity.id);
      const r = await this.hub.register(token, { clusterName, clusterId: identity.id, publicKey: key.publicJwk, proof, claims });
      if (this.aborted) return undefined;
      if (r.ok) {
        this.hubCond.clear(this.fields());
        this.lease = r.value.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS;
        this.log.info(
          r.value.keyPending
            ? "the hub holds this key until an admin accepts it"
            : r.status === 201
              ? "registered with the hub"
              : "registration confirmed by the hub",
          this.fields({
            clusterId: identity.id,
            idSource: identity.source,
            kid: key.kid,
            hubAcceptsClient: r.value.hubAcceptsClient,
          }),
        );
        break;
      }
      const e = r.error;
      if (e.kind === "conflict") throw new AgentFatalError(`hub refused registration (409 Conflict): ${e.message}`);
      if (e.kind === "unauthorized") throw new AgentFatalError(`hub refused the bootstrap token (401): ${e.message}`);
      if (e.kind === "invalid") throw new AgentFatalError(`hub refused the registration request (${e.status}): ${e.message}`);
      if (e.kind === "forbidden") throw new AgentFatalError(`hub forbids registration (403): ${e.message}`);
      this.noteHubFailure(e);
      await this.backOff(this.backoff.next(e.retryAfterMs), e);
    }
    if (this.aborted) return undefined;
    const creds: AgentCredentials = { clusterName, clusterId: identity.id, hubUrl, key };
    // Stored only after the hub said 2xx; retried so a registered key is not lost to a blip.
    const stored = await this.retryKube("storing the credentials Secret", async () => {
      await storeCredentials(this.opts.kubeConfig, this.namespace, creds);
      return true;
    });
    if (!stored) return undefined;
    this.log.info(`stored hub credentials in Secret ${secretRef}`, this.fields());
    return creds;
  }

  /** The claims a registration carries (sent again with every heartbeat: a failed read sends none). */
  private async registrationClaims(clusterId: string): Promise<ClusterClaim[]> {
    let properties: ClusterClaim[] = [];
    let clusterClaims: ClusterClaim[] = [];
    try {
      [properties, clusterClaims] = await Promise.all([listClusterProperties(this.opts.kubeConfig), listClusterClaims(this.opts.kubeConfig)]);
    } catch {
      // Claims are sent again with every heartbeat; registration does not wait for them.
    }
    return buildClusterClaims(properties, this.opts.claims ?? [], this.opts.maxCustomClusterClaims ?? MAX_CUSTOM_CLUSTER_CLAIMS, {
      generated: generatedClaims(clusterId, undefined, undefined),
      clusterClaims,
    });
  }

  /**
   * The bootstrap token to register again with: the one in the bootstrap Secret of the agent's
   * namespace when it holds one (an admin may have put a new token there), else the one the agent
   * was started with (`--bootstrap-token`, `FLOTILLA_BOOTSTRAP_TOKEN`).
   */
  private async currentBootstrapToken(): Promise<{ token: string; from: string } | undefined> {
    const fromSecret = await loadBootstrapToken(this.opts.kubeConfig, this.namespace);
    if (fromSecret) return { token: fromSecret, from: `Secret ${this.namespace}/${BOOTSTRAP_SECRET_NAME}` };
    return this.opts.bootstrapToken ? { token: this.opts.bootstrapToken, from: "--bootstrap-token" } : undefined;
  }

  /**
   * Registers again after the hub refused the agent's credentials definitively (docs/agent-protocol.md
   * "Recovery"; OCM's registration agent falls back to its bootstrap kubeconfig when its hub
   * kubeconfig no longer works, pkg/registration/spoke). It keeps its key and cluster ID: a hub
   * that lost its state registers the cluster anew (201; pending acceptance unless the token
   * auto-approves), and one that still knows the cluster with this key only confirms it (200),
   * so a refusal that was not what it seemed changes nothing; a new key would instead be held
   * pending at such a hub. Without a bootstrap token, or when the hub refuses it too, it logs
   * exactly what to do (once) and the caller keeps retrying with backoff.
   *
   * @returns whether the hub took the registration.
   */
  private async registerAgain(refusal: HubFailure): Promise<boolean> {
    const creds = this.creds;
    if (!creds) return false;
    const { clusterName } = this.opts;
    const credsRef = `${this.namespace}/${CREDENTIALS_SECRET_NAME}`;
    const bootstrapRef = `${this.namespace}/${BOOTSTRAP_SECRET_NAME}`;
    const since = new Date(this.refusals.sinceMs).toISOString();
    const bootstrap = await this.currentBootstrapToken();
    if (this.aborted) return false;
    if (!bootstrap) {
      this.recoverCond.set(
        "no-token",
        `the hub has refused this cluster's credentials since ${since} (401: ${refusal.message}): its state was lost or reset, or the cluster was deleted there. ` +
          `This agent has no bootstrap token to register again with. To bring the cluster back: create a bootstrap token at the hub (flotilla token create) ` +
          `and put it in Secret ${bootstrapRef} (key bootstrap-token; the agent reads it at its next try, no restart), or restart the agent with --bootstrap-token <token>; ` +
          `the agent keeps its key and cluster ID (Secret ${credsRef}), and the admin accepts the cluster again unless the token auto-approves. Retrying with backoff`,
        this.fields(),
      );
      return false;
    }
    const tokenId = bootstrap.token.split(".")[0] ?? "";
    if (this.recoverCond.active !== "registering") {
      this.recoverCond.set(
        "registering",
        `the hub has refused this cluster's credentials since ${since} (401: ${refusal.message}): its state was lost or reset, or the cluster was deleted there; ` +
          `registering again with bootstrap token ${tokenId} (from ${bootstrap.from}), same key and cluster ID`,
        this.fields({ kid: creds.key.kid }),
      );
    }
    const claims = await this.registrationClaims(creds.clusterId);
    const proof = await signProof(clusterName, creds.key, creds.clusterId);
    const r = await this.hub.register(bootstrap.token, { clusterName, clusterId: creds.clusterId, publicKey: creds.key.publicJwk, proof, claims });
    if (this.aborted) return false;
    if (r.ok) {
      this.hubCond.clear(this.fields());
      this.lease = r.value.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS;
      this.recoverCond.clear(this.fields({ kid: creds.key.kid, hubAcceptsClient: r.value.hubAcceptsClient, keyPending: r.value.keyPending }));
      this.log.info(
        r.value.keyPending
          ? `the hub knows cluster ${clusterName} with another key: it holds this one until an admin accepts it (flotilla accept ${clusterName} --key ${creds.key.kid})`
          : r.status === 201
            ? r.value.hubAcceptsClient
              ? "registered again with the hub; the bootstrap token auto-approved the cluster"
              : `registered again with the hub; waiting for the admin to accept the cluster (flotilla accept ${clusterName})`
            : "the hub confirmed this cluster's registration (same key)",
        this.fields({ kid: creds.key.kid, hubAcceptsClient: r.value.hubAcceptsClient }),
      );
      return true;
    }
    const e = r.error;
    if (e.kind === "unauthorized") {
      this.recoverCond.set(
        "token-refused",
        `the hub refused bootstrap token ${tokenId} (from ${bootstrap.from}) too (401: ${e.message}). To bring the cluster back: re-create that token at the hub ` +
          `(flotilla token create <its value>, a BootstrapToken with spec.token; docs/agent-protocol.md "Recovery"), or create a new one and put it in Secret ${bootstrapRef} ` +
          `(key bootstrap-token) or restart the agent with --bootstrap-token <token>. Retrying with backoff`,
        this.fields(),
      );
    } else if (e.kind === "conflict" || e.kind === "invalid" || e.kind === "forbidden") {
      this.recoverCond.set(
        `refused:${e.status ?? ""}`,
        `the hub refused to register this cluster again (${e.status}): ${e.message}; retrying with backoff`,
        this.fields(),
      );
    } else {
      this.noteHubFailure(e);
    }
    return false;
  }

  /** Logs a hub failure once per kind of failure; the caller sleeps. */
  private noteHubFailure(e: HubFailure): void {
    if (e.kind === "unreachable") {
      this.hubCond.set("unreachable", `hub unreachable: ${e.status ? `HTTP ${e.status}: ` : ""}${e.message}; retrying with backoff`, this.fields());
      return;
    }
    this.hubCond.set(`error:${e.status ?? "?"}`, `hub request failed (${e.status ?? "no status"}): ${e.message}; retrying with backoff`, this.fields());
  }

  /**
   * Waits `delayMs` milliseconds before a failed hub call is made again. When the hub was absent
   * ({@link hubAbsent}), it is probed every `hubProbeMs` meanwhile and the wait ends as soon as it
   * answers, so however long the outage and the backoff, the agent is back within seconds of the
   * hub; the backoff still spaces out the real calls to a hub that answers with errors.
   */
  private async backOff(delayMs: number, failure: HubFailure | undefined): Promise<void> {
    if (!failure || !hubAbsent(failure)) {
      await this.sleeper.sleep(delayMs);
      return;
    }
    const probeTimeout = Math.min(this.timing.hubProbeMs, this.timing.requestTimeoutMs);
    await sleepProbing(this.sleeper, delayMs, () => this.hub.live(probeTimeout), this.timing.hubProbeMs, this.timing.random);
  }

  private sign(): Promise<string> {
    if (!this.creds) throw new Error("no credentials");
    return signAgentToken(this.creds.clusterName, this.creds.key, { keyTag: this.hub.keyTag(this.creds.key.kid) });
  }

  /**
   * Handles a failed authenticated call other than a heartbeat 403: 401 reloads the Secret
   * (another process may have rotated the key) and else backs off; once the hub's definitive
   * refusals ({@link definitiveRefusal}) have come `refusalsBeforeRegistering` times in a row over
   * at least `refusedForMs`, the agent registers again with its bootstrap token
   * ({@link registerAgain}; then `registeredAgain` is set and the delay is 0). Anything else backs off.
   * @returns the delay (ms) before retrying.
   */
  private async onAuthenticatedFailure(e: HubFailure): Promise<number> {
    if (e.kind === "unauthorized" || e.kind === "forbidden") {
      this.hubCond.clear(this.fields());
      if (e.kind === "unauthorized") {
        try {
          const fresh = await loadCredentials(this.opts.kubeConfig, this.namespace);
          if (fresh && this.creds && fresh.key.kid !== this.creds.key.kid && fresh.clusterName === this.creds.clusterName) {
            this.log.info("the Secret holds a newer key (rotated); using it", this.fields({ kid: fresh.key.kid }));
            this.creds = fresh;
            return 0;
          }
        } catch {
          // The member cluster is unreachable too; keep the key in memory.
        }
      }
      this.authCond.set(
        String(e.status),
        e.kind === "unauthorized"
          ? `hub rejected the agent's credentials (401): ${e.message}; the hub's state may have been lost or the cluster deleted there; retrying with backoff, and registering again with the bootstrap token if the hub keeps refusing`
          : `hub refused the request (403): ${e.message}; retrying with backoff`,
        this.fields(),
      );
      if (definitiveRefusal(e)) {
        const now = Date.now();
        if (this.refusals.count === 0) {
          // A hub that answers again (after an outage that grew the backoff) is retried from 1 s.
          this.refusals.sinceMs = now;
          this.backoff.reset();
        }
        this.refusals.count++;
        if (this.refusals.count >= this.timing.refusalsBeforeRegistering && now - this.refusals.sinceMs >= this.timing.refusedForMs) {
          if (await this.registerAgain(e)) {
            this.refusals.count = 0;
            this.registeredAgain = true;
            this.authCond.clear(this.fields());
            this.backoff.reset();
            return 0;
          }
        }
      }
      return this.backoff.next();
    }
    this.noteHubFailure(e);
    return this.backoff.next(e.retryAfterMs);
  }

  private onHubSuccess(): void {
    this.refusals.count = 0;
    this.hubCond.clear(this.fields());
    this.authCond.clear(this.fields());
    this.backoff.reset();
  }

  /** Polls the cluster until the hub accepts it; `false` when stopped. */
  private async waitForAcceptance(alreadyAnnounced: boolean): Promise<boolean> {
    this.current = "waiting-for-acceptance";
    let announced = alreadyAnnounced;
    this.backoff.reset();
    while (!this.aborted) {
      const r = await this.hub.getCluster(this.opts.clusterName, await this.sign());
      if (this.aborted) return false;
      let delay: number;
      if (r.ok) {
        this.onHubSuccess();
        this.lease = r.value.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS;
        if (r.value.keyPending) {
          if (!announced) {
            const kid = this.creds?.key.kid ?? "";
            this.log.info(
              `the hub holds this agent's key until an admin accepts it: flotilla accept ${this.opts.clusterName} --key ${kid}`,
              this.fields({ kid }),
            );
            announced = true;
          }
        } else if (r.value.hubAcceptsClient) {
          this.log.info("cluster accepted by the hub", this.fields({ leaseDurationSeconds: this.lease }));
          return true;
        } else if (!announced) {
          this.log.info(
            r.value.denied
              ? "the hub admin denied this cluster; waiting until it is accepted"
              : "waiting for the hub admin to accept this cluster (hubAcceptsClient=false)",
            this.fields(),
          );
          announced = true;
        }
        delay = this.timing.acceptancePollMs;
      } else {
        delay = await this.onAuthenticatedFailure(r.error);
        if (this.registeredAgain) {
          this.registeredAgain = false;
          announced = false;
        }
      }
      await this.backOff(delay, r.ok ? undefined : r.error);
    }
    return false;
  }

  /**
   * Sends heartbeats until stopped or the hub answers 403.
   * @returns true when it left because of a 403 (the reason is already logged).
   */
  private async heartbeatLoop(): Promise<boolean> {
    this.current = "heartbeating";
    this.backoff.reset();
    let lastLease: number | undefined;
    let lastOkMs: number | undefined;
    while (!this.aborted) {
      const body = await this.buildHeartbeat();
      if (this.aborted) return false;
      // Over the transport: poll sends `POST .../heartbeat`; ws, while connected, a `status`
      // message only when the status changed (its pings renew the lease).
      const r: HubResult<HeartbeatAnswer> = this.transport
        ? await this.transport.heartbeat(body)
        : await this.hub.heartbeat(this.opts.clusterName, await this.sign(), body);
      if (this.aborted) return false;
      let delay: number;
      if (r.ok) {
        this.onHubSuccess();
        // More than OCM's grace (5 leases) without a heartbeat: the hub has marked the cluster, and
        // with it its add-ons, Unknown; the add-ons' conditions go again.
        const nowMs = Date.now();
        if (lastOkMs !== undefined && nowMs - lastOkMs > 5 * this.lease * 1000) void this.addons?.then((a) => a.resend());
        lastOkMs = nowMs;
        this.work?.hint(r.value);
        this.lease = r.value.leaseDurationSeconds || DEFAULT_LEASE_DURATION_SECONDS;
        if (lastLease === undefined) this.log.info(`heartbeating every ${this.lease}s (+ up to 25% jitter)`, this.fields());
        else if (lastLease !== this.lease) this.log.info(`lease duration changed from ${lastLease}s to ${this.lease}s`, this.fields());
        lastLease = this.lease;
        delay = heartbeatDelayMs(this.lease, this.timing.random);
      } else if (r.error.kind === "forbidden") {
        this.hubCond.clear(this.fields());
        this.log.warn(`hub no longer accepts this cluster (403): ${r.error.message}; waiting for acceptance`, this.fields());
        return true;
      } else {
        delay = await this.onAuthenticatedFailure(r.error);
        // Registered again: the new registration waits for acceptance (or was auto-approved).
        if (this.registeredAgain) {
          this.registeredAgain = false;
          return false;
        }
      }
      await this.backOff(delay, r.ok ? undefined : r.error);
    }
    return false;
  }

  // ---- status and health -----------------------------------------------------------------

  private probe() {
    return probeKubeApiServer((path) => rawGet(this.opts.kubeConfig, path, this.timing.requestTimeoutMs));
  }

  /** Records a probe; logs when the reported health flips and then heartbeats at once. */
  private observeHealth(result: ProbeResult): HealthReport & { transient: boolean } {
    const before = this.health.current();
    const now = this.health.observe(result, Date.now());
    if (before.healthy !== now.healthy) {
      if (now.healthy) this.log.info("kube-apiserver healthy again", this.fields());
      else this.log.warn(`reporting the cluster unavailable: ${now.message}`, this.fields());
      if (this.current === "heartbeating") this.sleeper.wake();
    }
    return now;
  }

  /**
   * Probes the kube-apiserver every `healthCheckPeriodMs`, and every `healthRecheckMs` while a
   * failure is within the threshold (as OCM's available reconciler requeues after 5 s), so a
   * failure is reported soon after the threshold rather than at the next lease renewal.
   */
  private async healthLoop(): Promise<void> {
    while (!this.aborted) {
      const result = await this.probe();
      if (this.aborted) return;
      const report = this.observeHealth(result);
      await this.healthSleeper.sleep(report.transient ? this.timing.healthRecheckMs : this.timing.healthCheckPeriodMs);
    }
  }

  private async buildHeartbeat(): Promise<HeartbeatRequest> {
    const [probe, collected] = await Promise.all([
      this.probe(),
      collectClusterStatus(this.opts.kubeConfig, this.opts.claims ?? [], this.opts.maxCustomClusterClaims ?? MAX_CUSTOM_CLUSTER_CLAIMS, this.creds?.clusterId),
    ]);
    const health = this.observeHealth(probe);
    if (collected.errors.length > 0) {
      this.statusCond.set("partial", `could not read all of the cluster status: ${collected.errors.join("; ")}`, this.fields());
    } else {
      this.statusCond.clear(this.fields());
    }
    return { healthy: health.healthy, healthMessage: health.message.slice(0, 1024), ...collected.status };
  }

  // ---- control -----------------------------------------------------------------------------

  async rotateKey(): Promise<{ oldKid: string; newKid: string }> {
    if (!this.creds) throw new Error("the agent has no hub credentials yet");
    const result = await rotateKey({
      kubeConfig: this.opts.kubeConfig,
      namespace: this.namespace,
      hubUrl: this.opts.hubUrl,
      clusterName: this.opts.clusterName,
      logger: this.log,
      hub: this.hub,
      credentials: this.creds,
    });
    this.creds = result.credentials;
    return { oldKid: result.oldKid, newKid: result.newKid };
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      await this.done.catch(() => undefined);
      await this.healthLoopDone;
      await this.work?.stopped();
      await this.addons?.then(
        (a) => a.done,
        () => undefined,
      );
      if (this.current !== "failed" && this.current !== "left") this.current = "stopped";
      await this.opts.onStop?.();
    })();
    return this.stopping;
  }
}

/**
 * Starts the agent in-process. It returns at once; the loop runs in the background:
 * 1. load the credentials Secret, or register (`POST /agent/v1/register` with the bootstrap
 *    token, a new ES256 key, the cluster ID and claims) and store the Secret after a 2xx;
 * 2. poll `GET /agent/v1/clusters/{name}` until `hubAcceptsClient`;
 * 3. heartbeat every `leaseDurationSeconds` (from the hub's last answer) + up to 25 % jitter;
 *    a 403 returns to step 2, a 401 reloads the Secret and retries with backoff; the hub's own
 *    401 three times in a row over 10 s registers again with the bootstrap token (the bootstrap
 *    Secret's, else `bootstrapToken`), same key and cluster ID, and returns to step 2;
 * 4. an unreachable hub (network error, 5xx, 429) is retried with capped exponential backoff
 *    and full jitter, logging one line when it starts and one when it ends;
 * 5. the work agent (work/loop.ts): once accepted, takes the works its transport delivers (ws,
 *    the default: pushed over one WebSocket, whose pings renew the lease and which carries the
 *    status only when it changed; poll, or ws when the upgrade is refused: `GET .../works` when a
 *    heartbeat answer's `worksEtag` changed, no request held open), applies the
 *    ManifestWorks, reports changed statuses every `statusSyncIntervalSeconds`; when the hub
 *    says `leaving`, removes what works applied, calls `POST .../left`, deletes the Secret, and
 *    the agent ends (`done` resolves, state `left`).
 *
 * @param options see {@link AgentOptions}.
 * @returns a handle to stop it, read its state, rotate its key, and await its end (`done`
 *   rejects with {@link AgentFatalError}, e.g. on a 409 at registration or a missing
 *   bootstrap token).
 * @example
 * const agent = await startAgent({ hubUrl, clusterName: "c1", bootstrapToken, kubeConfig: kc });
 * // …
 * await agent.stop();
 */
export async function startAgent(options: AgentOptions): Promise<AgentHandle> {
  if (!options.hubUrl) throw new Error("hubUrl is required");
  if (!options.clusterName) throw new Error("clusterName is required");
  const runner = new AgentRunner(options);
  return {
    stop: () => runner.stop(),
    state: () => runner.state(),
    done: runner.done,
    rotateKey: () => runner.rotateKey(),
  };
}

/** Options of {@link rotateKey}. */
export interface RotateKeyOptions {
  /** Client configuration of the member cluster (where the Secret is). */
  kubeConfig: KubeConfig;
  /** The agent's namespace; default `flotilla-agent`. */
  namespace?: string;
  /** Hub URL; default the Secret's `hub-url`. */
  hubUrl?: string;
  /** When given, must match the Secret's `cluster-name`. */
  clusterName?: string;
  /** Logger; default text lines on stderr. */
  logger?: Logger;
  /** Hub client to use (tests, or the running agent's); default a new {@link HubClient}. */
  hub?: {
    rotateKey(name: string, token: string, publicKey: AgentCredentials["key"]["publicJwk"], proof: string): Promise<HubResult<RotateKeyAnswer>>;
    keyTag?(kid: string): string | undefined;
  };
  /** Credentials to rotate; default read from the Secret. */
  credentials?: AgentCredentials;
  /** fetch for the default hub client. */
  fetch?: HubFetch;
}

/** Result of {@link rotateKey}. */
export interface RotateKeyResult {
  /** Thumbprint of the replaced key (valid at the hub for 5 more minutes). */
  oldKid: string;
  /** Thumbprint of the new key. */
  newKid: string;
  /** The credentials now stored in the Secret. */
  credentials: AgentCredentials;
}

/**
 * Rotates the agent's key with no downtime: generates a new ES256 key pair, sends its public
 * JWK to `POST /agent/v1/clusters/{name}/rotate-key` signed with the CURRENT key, and only
 * after a 2xx writes the new key to the Secret (the hub keeps the old key valid for 5 minutes,
 * so a running agent still using it keeps working and reloads the Secret on its first 401).
 *
 * @param options see {@link RotateKeyOptions}.
 * @returns the old and new `kid` and the new credentials.
 * @throws Error when there is no credentials Secret, the cluster name does not match, the hub
 *   refuses (message carries the hub's status and message; the Secret is left unchanged), or
 *   the Secret cannot be written after 3 tries (the old key then stops working after 5 minutes).
 */
export async function rotateKey(options: RotateKeyOptions): Promise<RotateKeyResult> {
  const namespace = options.namespace ?? DEFAULT_AGENT_NAMESPACE;
  const log = options.logger ?? createLogger();
  const creds = options.credentials ?? (await loadCredentials(options.kubeConfig, namespace));
  if (!creds) throw new Error(`no hub credentials in Secret ${namespace}/${CREDENTIALS_SECRET_NAME}: the agent has not registered yet`);
  if (options.clusterName && options.clusterName !== creds.clusterName) {
    throw new Error(`Secret ${namespace}/${CREDENTIALS_SECRET_NAME} belongs to cluster ${creds.clusterName}, not ${options.clusterName}`);
  }
  const hub = options.hub ?? new HubClient({ hubUrl: options.hubUrl ?? creds.hubUrl, fetch: options.fetch });
  const key = await generateAgentKeyPair();
  const token = await signAgentToken(creds.clusterName, creds.key, { keyTag: hub.keyTag?.(creds.key.kid) });
  const r = await hub.rotateKey(creds.clusterName, token, key.publicJwk, await signProof(creds.clusterName, key));
  if (!r.ok) {
    throw new Error(`hub refused key rotation (${r.error.status ?? "unreachable"}): ${r.error.message}`);
  }
  if (r.value.kid !== key.kid) log.warn(`hub answered kid ${r.value.kid}, expected ${key.kid}`, { cluster: creds.clusterName });
  const next: AgentCredentials = { ...creds, key };
  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await storeCredentials(options.kubeConfig, namespace, next);
      log.info("rotated the hub key", { cluster: creds.clusterName, oldKid: creds.key.kid, newKid: key.kid });
      return { oldKid: creds.key.kid, newKid: key.kid, credentials: next };
    } catch (err) {
      lastErr = err;
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  }
  throw new Error(
    `the hub accepted the new key but Secret ${namespace}/${CREDENTIALS_SECRET_NAME} could not be written (${describeKubeError(lastErr)}); the old key stops working in 5 minutes`,
  );
}
