/**
 * The add-on agent: what OCM's registration agent does for add-ons on the member cluster, for the
 * add-ons the cluster's works deploy (./spec.ts). Loaded with a dynamic `import()` (agent.ts) only
 * once a work names an add-on.
 *
 * - **Health, mode `Lease`** (OCM `pkg/registration/spoke/addon/lease_controller.go`): every
 *   {@link ADDON_LEASE_SYNC_INTERVAL_MS} (OCM's `AddOnLeaseControllerSyncInterval`, 30 s) and at
 *   once when the add-ons change, the agent reads the Lease named after the add-on in its install
 *   namespace and derives the ManagedClusterAddOn's `Available` condition as OCM does
 *   ({@link leaseCondition}). Only a condition that differs from the one the hub last
 *   acknowledged travels (the channel's `addon-status`, or `POST .../addons/status`): an idle
 *   cluster whose add-ons stay healthy sends nothing beyond its heartbeat.
 * - **Registration, token driver** (OCM `pkg/registration/register/token`): an add-on whose work
 *   names the Secret `<addon>-hub-kubeconfig` gets a ServiceAccount token of the hub (the
 *   channel's `addon-token`, or `POST .../addons/{addon}/token`), written into that Secret in the
 *   install namespace with keys `kubeconfig` (the hub's URL, `tokenFile: token`), `token` and
 *   `cluster-name`, as OCM's secret controller writes it; a new token is asked for once 20 % or less
 *   of the token's lifetime remains (OCM's `RefreshThreshold`), or the Secret is gone or holds no
 *   valid token. The Secret is deleted when the add-on leaves the cluster. The token is never
 *   logged.
 */
import { readFileSync } from "node:fs";
import type { AddonStatusAnswer, AddonTokenAnswer } from "../../../src/agent-api/protocol-answers.ts";
import type { AddonStatusRequest, AddonTokenRequest } from "../../../src/agent-api/protocol.ts";
import { Sleeper, type Random } from "../backoff.ts";
import type { HubResult } from "../hub-client.ts";
import { describeKubeError, isConflict, isNotFound, type KubeConfig } from "../kube.ts";
import { ConditionLog, type Logger } from "../log.ts";
import { hubKubeconfigSecretName, type AddonSpec } from "./spec.ts";
import {
  ADDON_LEASE_GRACE_MS,
  ADDON_LEASE_SYNC_INTERVAL_MS,
  DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS,
  TOKEN_REFRESH_THRESHOLD,
  TOKEN_REFUSED_RETRY_MS,
} from "./constants.ts";

export * from "./constants.ts";

/** An add-on's `Available` condition as the agent derives it (the hub adds type and times). */
export interface AvailableCondition {
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
}

/**
 * The `Available` condition OCM's addon lease controller sets for add-on `addon` from its Lease
 * (`lease`: the Lease object, or null when there is none) at `nowMs` (epoch milliseconds):
 * - no Lease: `Unknown`, `ManagedClusterAddOnLeaseNotFound`, "The status of <addon> add-on is unknown.";
 * - `spec.renewTime` + grace (`graceMs`, OCM's 5 x 60 s) after now: `True`,
 *   `ManagedClusterAddOnLeaseUpdated`, "<addon> add-on is available.";
 * - otherwise (stale, or never renewed): `False`, `ManagedClusterAddOnLeaseUpdateStopped`,
 *   "<addon> add-on is not available.".
 */
export function leaseCondition(addon: string, lease: Record<string, unknown> | null, nowMs: number, graceMs = ADDON_LEASE_GRACE_MS): AvailableCondition {
  if (!lease) return { status: "Unknown", reason: "ManagedClusterAddOnLeaseNotFound", message: `The status of ${addon} add-on is unknown.` };
  const renew = (lease.spec as { renewTime?: unknown } | undefined)?.renewTime;
  const renewedMs = typeof renew === "string" ? Date.parse(renew) : NaN;
  if (Number.isFinite(renewedMs) && nowMs < renewedMs + graceMs) {
    return { status: "True", reason: "ManagedClusterAddOnLeaseUpdated", message: `${addon} add-on is available.` };
  }
  return { status: "False", reason: "ManagedClusterAddOnLeaseUpdateStopped", message: `${addon} add-on is not available.` };
}

/** A ServiceAccount token's times, from its (unverified) claims: issued and expiring, epoch milliseconds. */
export function tokenTimes(token: string): { issuedMs: number; expiresMs: number } | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as { iat?: unknown; exp?: unknown };
    if (typeof claims.iat !== "number" || typeof claims.exp !== "number" || claims.iat <= 0 || claims.exp <= 0) return undefined;
    return { issuedMs: claims.iat * 1000, expiresMs: claims.exp * 1000 };
  } catch {
    return undefined;
  }
}

/**
 * Whether a token must be replaced at `nowMs` (OCM's `isTokenValid`, negated): none, not a JWT
 * with `iat` and `exp`, expired, a lifetime that is not positive, or at most
 * {@link TOKEN_REFRESH_THRESHOLD} of its lifetime left.
 */
export function tokenNeedsRefresh(token: string | undefined, nowMs: number): boolean {
  if (!token) return true;
  const t = tokenTimes(token);
  if (!t) return true;
  const lifetime = t.expiresMs - t.issuedMs;
  if (t.expiresMs <= nowMs || lifetime <= 0) return true;
  return (t.expiresMs - nowMs) / lifetime <= TOKEN_REFRESH_THRESHOLD;
}

/** What the add-on agent sends to the hub (the agent's transport). */
export interface AddonHub {
  /** Reports changed `Available` conditions. */
  addonStatus(body: AddonStatusRequest): Promise<HubResult<AddonStatusAnswer>>;
  /** Asks for a token of add-on `addon`'s ServiceAccount. */
  addonToken(addon: string, body: AddonTokenRequest): Promise<HubResult<AddonTokenAnswer>>;
}

/** Options of {@link AddonAgent}. */
export interface AddonAgentOptions {
  /** The ManagedCluster name (the Secret's `cluster-name`). */
  clusterName: string;
  /** The hub's URL: the `server` of the kubeconfig handed to add-ons. */
  hubUrl: string;
  /** Client configuration of the member cluster. */
  kubeConfig: KubeConfig;
  /** The hub side (the transport). */
  hub: AddonHub;
  /** Logger. */
  logger: Logger;
  /** Aborting it ends the loop. */
  signal: AbortSignal;
  /** The lifetime asked for each token, seconds; default {@link DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS}. */
  tokenExpirationSeconds?: number;
  /**
   * Timings in milliseconds: the period of the checks (default 30 000), the Lease's grace (default
   * 300 000), the wait before asking again for a refused token (default 300 000).
   */
  timing?: { syncIntervalMs?: number; leaseGraceMs?: number; tokenRefusedRetryMs?: number; random?: Random };
  /** The clock, epoch milliseconds; default `Date.now`. */
  now?: () => number;
}

/** What the hub last acknowledged of an add-on, and what the registration holds. */
interface AddonState {
  spec: AddonSpec;
  /** JSON of the `Available` condition the hub acknowledged. */
  acked?: string;
  /** No token asked for before this time (epoch ms): the hub refused the last request. */
  refusedUntil?: number;
  /** A token the hub gave that is not in the Secret yet (its install namespace did not exist yet). */
  unsaved?: string;
}

/** The add-on agent: see the module comment. Call {@link AddonAgent.setAddons} with each new works list's add-ons. */
export class AddonAgent {
  private readonly states = new Map<string, AddonState>();
  private readonly sleeper: Sleeper;
  private readonly hubCond: ConditionLog;
  private readonly kubeCond: ConditionLog;
  private readonly tokenCond: ConditionLog;
  private readonly now: () => number;
  private passCount = 0;
  /** Settles when the loop ends (the signal aborted). */
  readonly done: Promise<void>;

  /** @param opts see {@link AddonAgentOptions}; the loop starts at once. */
  constructor(private readonly opts: AddonAgentOptions) {
    this.sleeper = new Sleeper(opts.signal);
    this.hubCond = new ConditionLog(opts.logger, "add-on status reports succeed again");
    this.kubeCond = new ConditionLog(opts.logger, "add-on checks on the member cluster succeed again");
    this.tokenCond = new ConditionLog(opts.logger, "add-on token requests succeed again");
    this.now = opts.now ?? Date.now;
    this.done = this.loop();
  }

  private fields(extra: Record<string, string | number | undefined> = {}) {
    return { cluster: this.opts.clusterName, ...extra };
  }

  /** The add-ons the works now deploy: checked at once; those gone lose their hub kubeconfig Secret. */
  setAddons(addons: readonly AddonSpec[]): void {
    const names = new Set(addons.map((a) => a.name));
    for (const [name, st] of [...this.states]) {
      if (names.has(name)) continue;
      this.states.delete(name);
      if (st.spec.registration) void this.deleteSecret(st.spec);
    }
    for (const spec of addons) {
      const st = this.states.get(spec.name);
      if (!st) this.states.set(spec.name, { spec });
      else {
        if (st.spec.registration && (!spec.registration || st.spec.installNamespace !== spec.installNamespace)) void this.deleteSecret(st.spec);
        if (st.spec.healthCheckMode !== spec.healthCheckMode || st.spec.installNamespace !== spec.installNamespace) st.acked = undefined;
        if (JSON.stringify(st.spec) !== JSON.stringify(spec)) st.refusedUntil = undefined;
        st.spec = spec;
      }
    }
    this.sleeper.wake();
  }

  /**
   * Forgets what the hub acknowledged, so that the next pass sends every add-on's condition again
   * (a new connection: the hub may have marked them Unknown while the cluster was unreachable).
   */
  resend(): void {
    for (const st of this.states.values()) st.acked = undefined;
    this.sleeper.wake();
  }

  /** How many passes of the checks have ended (tests wait on it rather than on time). */
  get passes(): number {
    return this.passCount;
  }

  private async loop(): Promise<void> {
    const interval = this.opts.timing?.syncIntervalMs ?? ADDON_LEASE_SYNC_INTERVAL_MS;
    while (!this.opts.signal.aborted) {
      if (this.states.size > 0) {
        await this.checkHealth();
        await this.register();
      }
      this.passCount++;
      await this.sleeper.sleep(interval);
    }
  }

  /** One pass of the lease check: reads each `Lease`-mode add-on's Lease and sends what changed. */
  private async checkHealth(): Promise<void> {
    const changed: { name: string; available: AvailableCondition; json: string }[] = [];
    for (const st of this.states.values()) {
      if (st.spec.healthCheckMode !== "Lease") continue;
      let lease: Record<string, unknown> | null;
      try {
        lease = await this.opts.kubeConfig.json(
          "GET",
          `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(st.spec.installNamespace)}/leases/${encodeURIComponent(st.spec.name)}`,
        );
        this.kubeCond.clear(this.fields());
      } catch (e) {
        if (!isNotFound(e)) {
          this.kubeCond.set(
            "lease",
            `could not read the Lease of add-on ${st.spec.name}: ${describeKubeError(e)}; trying again at the next check`,
            this.fields({ addon: st.spec.name }),
          );
          continue;
        }
        lease = null;
      }
      const available = leaseCondition(st.spec.name, lease, this.now(), this.opts.timing?.leaseGraceMs);
      const json = JSON.stringify(available);
      if (json !== st.acked) changed.push({ name: st.spec.name, available, json });
    }
    if (changed.length === 0 || this.opts.signal.aborted) return;
    const r = await this.opts.hub.addonStatus({ addons: changed.map(({ name, available }) => ({ name, available })) });
    if (!r.ok) {
      this.hubCond.set(
        r.error.kind,
        `add-on status report failed (${r.error.status ? `HTTP ${r.error.status}: ` : ""}${r.error.message}); trying again at the next check`,
        this.fields(),
      );
      return;
    }
    this.hubCond.clear(this.fields());
    for (const c of changed) {
      const st = this.states.get(c.name);
      if (st) st.acked = c.json;
      this.opts.logger.info(`add-on ${c.name}: Available=${c.available.status} (${c.available.reason})`, this.fields({ addon: c.name }));
    }
  }

  /** One pass of the registration: every add-on that needs a hub credential has a valid one. */
  private async register(): Promise<void> {
    for (const st of [...this.states.values()]) {
      if (!st.spec.registration || this.opts.signal.aborted) continue;
      if (st.refusedUntil !== undefined && this.now() < st.refusedUntil) continue;
      const { name, installNamespace } = st.spec;
      const secretName = hubKubeconfigSecretName(name);
      let current: Record<string, unknown> | null;
      try {
        current = await this.readSecret(installNamespace, secretName);
      } catch (e) {
        this.kubeCond.set(
          "secret",
          `could not read Secret ${installNamespace}/${secretName}: ${describeKubeError(e)}; trying again at the next check`,
          this.fields({ addon: name }),
        );
        continue;
      }
      const data = (current?.data ?? {}) as Record<string, string>;
      const token = data.token ? Buffer.from(data.token, "base64").toString("utf8") : undefined;
      if (!tokenNeedsRefresh(token, this.now())) continue;
      if (st.unsaved && !tokenNeedsRefresh(st.unsaved, this.now())) {
        await this.save(st, secretName, st.unsaved, current, undefined);
        continue;
      }
      const r = await this.opts.hub.addonToken(name, { expirationSeconds: this.opts.tokenExpirationSeconds ?? DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS });
      if (!r.ok) {
        const refused = r.error.status !== undefined && r.error.status >= 400 && r.error.status < 500 && r.error.status !== 429;
        if (refused) st.refusedUntil = this.now() + (this.opts.timing?.tokenRefusedRetryMs ?? TOKEN_REFUSED_RETRY_MS);
        this.tokenCond.set(
          `${name}:${r.error.status ?? r.error.kind}`,
          `the hub gave no token for add-on ${name} (${r.error.status ? `HTTP ${r.error.status}: ` : ""}${r.error.message}); ${refused ? "asking again in a few minutes or when its work changes" : "trying again at the next check"}`,
          this.fields({ addon: name }),
        );
        continue;
      }
      this.tokenCond.clear(this.fields());
      await this.save(st, secretName, r.value.token, current, r.value.expirationTimestamp);
    }
  }

  /**
   * Writes `token` into the add-on's Secret; when that fails (its install namespace does not
   * exist yet: the add-on's work creates it), keeps the token to write at the next check rather
   * than asking the hub again.
   */
  private async save(st: AddonState, secretName: string, token: string, current: Record<string, unknown> | null, expires: string | undefined): Promise<void> {
    const { name, installNamespace } = st.spec;
    try {
      await this.writeSecret(installNamespace, secretName, name, token, current);
      st.unsaved = undefined;
      this.kubeCond.clear(this.fields());
      const t = tokenTimes(token);
      this.opts.logger.info(
        `delivered the hub credential of add-on ${name} into Secret ${installNamespace}/${secretName} (expires ${expires ?? (t ? new Date(t.expiresMs).toISOString() : "unknown")})`,
        this.fields({ addon: name }),
      );
    } catch (e) {
      st.unsaved = token;
      if (isNotFound(e)) return; // no install namespace yet
      this.kubeCond.set(
        "secret",
        `could not write Secret ${installNamespace}/${secretName}: ${describeKubeError(e)}; trying again at the next check`,
        this.fields({ addon: name }),
      );
    }
  }

  private secretPath(namespace: string, name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;
  }

  private async readSecret(namespace: string, name: string): Promise<Record<string, unknown> | null> {
    try {
      return await this.opts.kubeConfig.json("GET", this.secretPath(namespace, name));
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Creates or replaces the add-on's hub kubeconfig Secret (read-modify-write with its resourceVersion). */
  private async writeSecret(namespace: string, name: string, addon: string, token: string, current: Record<string, unknown> | null): Promise<void> {
    const enc = (s: string) => Buffer.from(s, "utf8").toString("base64");
    const body = (resourceVersion?: string) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace,
        labels: { "app.kubernetes.io/managed-by": "flotilla-agent", "open-cluster-management.io/addon-name": addon },
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      type: "Opaque",
      data: { kubeconfig: enc(hubKubeconfig(this.opts.hubUrl)), token: enc(token), "cluster-name": enc(this.opts.clusterName) },
    });
    const rv = (current?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    if (rv) {
      await this.opts.kubeConfig.json("PUT", this.secretPath(namespace, name), { body: body(rv) });
      return;
    }
    try {
      await this.opts.kubeConfig.json("POST", this.secretPath(namespace), { body: body() });
    } catch (e) {
      if (!isConflict(e)) throw e;
      const existing = await this.opts.kubeConfig.json("GET", this.secretPath(namespace, name));
      await this.opts.kubeConfig.json("PUT", this.secretPath(namespace, name), {
        body: body((existing.metadata as { resourceVersion?: string }).resourceVersion),
      });
    }
  }

  /** Deletes an add-on's hub kubeconfig Secret (OCM's `stopRegistration`); one already gone is fine. */
  private async deleteSecret(spec: AddonSpec): Promise<void> {
    const name = hubKubeconfigSecretName(spec.name);
    try {
      await this.opts.kubeConfig.json("DELETE", this.secretPath(spec.installNamespace, name));
      this.opts.logger.info(`add-on ${spec.name} left the cluster: deleted Secret ${spec.installNamespace}/${name}`, this.fields({ addon: spec.name }));
    } catch (e) {
      if (!isNotFound(e))
        this.kubeCond.set(
          "secret-delete",
          `could not delete Secret ${spec.installNamespace}/${name}: ${describeKubeError(e)}`,
          this.fields({ addon: spec.name }),
        );
    }
  }
}

/**
 * The kubeconfig handed to an add-on (OCM's token driver: cluster `hub` at the hub's URL, context
 * `default-context`, user `default-auth` with `tokenFile: token`, read from the same Secret's
 * `token` key mounted beside it, so a rotated token is picked up without a new kubeconfig). For an
 * `https:` hub whose CA the agent trusts through `NODE_EXTRA_CA_CERTS`, that CA is embedded.
 */
export function hubKubeconfig(hubUrl: string): string {
  let ca = "";
  const caFile = process.env.NODE_EXTRA_CA_CERTS;
  if (hubUrl.startsWith("https:") && caFile) {
    try {
      ca = Buffer.from(readFileSync(caFile)).toString("base64");
    } catch {
      // Not readable: the add-on trusts the hub through its own CAs.
    }
  }
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: hub",
    "  cluster:",
    `    server: ${JSON.stringify(hubUrl.replace(/\/+$/, ""))}`,
    ...(ca ? [`    certificate-authority-data: ${ca}`] : []),
    "contexts:",
    "- name: default-context",
    "  context:",
    "    cluster: hub",
    "    user: default-auth",
    "    namespace: configuration",
    "current-context: default-context",
    "users:",
    "- name: default-auth",
    "  user:",
    "    tokenFile: token",
    "",
  ].join("\n");
}
