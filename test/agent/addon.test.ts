/**
 * The add-on agent (agent/src/addon): which add-ons the works deploy, the Lease health check as
 * OCM's registration agent's addon lease controller derives `Available`, and the token-based
 * registration's Secret, against the simulated cluster over HTTP. The hub side is a recording stub
 * of the transport's two add-on calls (the real hub is in test/worker/addon-agent.test.ts and the
 * e2e test).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import { AddonAgent, leaseCondition, tokenNeedsRefresh, type AddonHub } from "../../agent/src/addon/controller.ts";
import { addonsOf, hubKubeconfigSecretName } from "../../agent/src/addon/spec.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { createLogger } from "../../agent/src/log.ts";
import type { HubResult } from "../../agent/src/hub-client.ts";
import type { AddonStatusRequest, AddonTokenRequest, DeliveredWork } from "../../src/agent-api/protocol.ts";
import { waitFor } from "../wait.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function sim(): Promise<KubeConfig> {
  const cluster = await startSimulatedCluster();
  cleanups.push(() => cluster.close());
  return kubeConfigFromYaml(cluster.kubeconfigYaml);
}

/** A JWT-shaped token with these times (seconds); the agent reads only its claims. */
function fakeToken(iatSeconds: number, expSeconds: number, n = 0): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${part({ alg: "ES256" })}.${part({ iat: iatSeconds, exp: expSeconds, n })}.c2ln`;
}

function work(
  name: string,
  labels: Record<string, string>,
  annotations: Record<string, string>,
  spec: object = { workload: { manifests: [] } },
): DeliveredWork {
  return { metadata: { name, uid: `uid-${name}`, labels, annotations }, spec } as DeliveredWork;
}

/** A stub of the hub's add-on calls that records them. */
class StubHub implements AddonHub {
  statuses: AddonStatusRequest[] = [];
  tokens: { addon: string; body: AddonTokenRequest }[] = [];
  failStatus = false;
  refuseToken: number | undefined;
  issue: () => string = () => fakeToken(Math.floor(Date.now() / 1000), Math.floor(Date.now() / 1000) + 3600, this.tokens.length);
  addonStatus(body: AddonStatusRequest): Promise<HubResult<Record<string, never>>> {
    if (this.failStatus) return Promise.resolve({ ok: false, error: { kind: "unreachable", message: "down" } });
    this.statuses.push(body);
    return Promise.resolve({ ok: true, status: 200, value: {} });
  }
  addonToken(addon: string, body: AddonTokenRequest): Promise<HubResult<{ token: string; expirationTimestamp: string }>> {
    this.tokens.push({ addon, body });
    if (this.refuseToken) return Promise.resolve({ ok: false, error: { kind: "conflict", status: this.refuseToken, message: "no kubeClient registration" } });
    return Promise.resolve({ ok: true, status: 200, value: { token: this.issue(), expirationTimestamp: "2027-01-01T00:00:00Z" } });
  }
}

function start(kc: KubeConfig, hub: AddonHub, now: () => number, lines: string[] = []) {
  const abort = new AbortController();
  const agent = new AddonAgent({
    clusterName: "c1",
    hubUrl: "http://hub.example:8787",
    kubeConfig: kc,
    hub,
    logger: createLogger({ write: (l) => lines.push(l) }),
    signal: abort.signal,
    tokenExpirationSeconds: 3600,
    timing: { syncIntervalMs: 20, leaseGraceMs: 300_000, tokenRefusedRetryMs: 60_000 },
    now,
  });
  cleanups.push(async () => {
    abort.abort();
    await agent.done;
  });
  return agent;
}

/** Waits until the agent has made `n` more passes of its checks. */
async function passes(agent: AddonAgent, n: number): Promise<void> {
  const target = agent.passes + n;
  await waitFor(`${n} passes`, async () => agent.passes >= target, 10_000, 5);
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc.json("POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name } } }).catch(() => undefined);
}

async function putLease(kc: KubeConfig, namespace: string, name: string, renewTime: string): Promise<void> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace }, spec: { renewTime, leaseDurationSeconds: 60 } };
  try {
    await kc.json("POST", path, { body });
  } catch {
    const cur = await kc.json("GET", `${path}/${name}`);
    await kc.json("PUT", `${path}/${name}`, {
      body: { ...body, metadata: { ...body.metadata, resourceVersion: (cur.metadata as { resourceVersion: string }).resourceVersion } },
    });
  }
}

describe("add-ons from works", () => {
  it("reads the add-on name, install namespace, mode and registration from the deploy work", () => {
    const specs = addonsOf([
      work(
        "addon-obs-deploy-0",
        { "open-cluster-management.io/addon-name": "obs" },
        { "addon.flotilla.dev/install-namespace": "obs-ns", "addon.flotilla.dev/health-check-mode": "Lease" },
        {
          workload: {
            manifests: [{ kind: "Deployment", spec: { template: { spec: { volumes: [{ name: "hub", secret: { secretName: "obs-hub-kubeconfig" } }] } } } }],
          },
        },
      ),
      work("addon-log-deploy-0", { "open-cluster-management.io/addon-name": "log" }, { "addon.flotilla.dev/health-check-mode": "Customized" }),
      // OCM's HUB_KUBECONFIG, rendered: the add-on needs the hub too.
      work(
        "addon-hub-deploy-0",
        { "open-cluster-management.io/addon-name": "hub" },
        {},
        {
          workload: {
            manifests: [
              {
                kind: "Deployment",
                spec: { template: { spec: { containers: [{ env: [{ name: "HUB_KUBECONFIG", value: "/managed/hub-kubeconfig/kubeconfig" }] }] } } },
              },
            ],
          },
        },
      ),
      work("plain", {}, {}),
      {
        ...work("addon-gone-deploy-0", { "open-cluster-management.io/addon-name": "gone" }, {}),
        metadata: {
          name: "addon-gone-deploy-0",
          uid: "u",
          labels: { "open-cluster-management.io/addon-name": "gone" },
          deletionTimestamp: "2026-01-01T00:00:00Z",
        },
      } as DeliveredWork,
    ]);
    expect(specs).toEqual([
      { name: "hub", installNamespace: "open-cluster-management-agent-addon", healthCheckMode: "Lease", registration: true },
      { name: "log", installNamespace: "open-cluster-management-agent-addon", healthCheckMode: "Customized", registration: false },
      { name: "obs", installNamespace: "obs-ns", healthCheckMode: "Lease", registration: true },
    ]);
  });
});

describe("the Lease health check (OCM's addon lease controller)", () => {
  it("derives Available True, False and Unknown with OCM's reasons and messages", () => {
    const now = Date.parse("2026-11-26T12:00:00Z");
    expect(leaseCondition("obs", null, now)).toEqual({
      status: "Unknown",
      reason: "ManagedClusterAddOnLeaseNotFound",
      message: "The status of obs add-on is unknown.",
    });
    const lease = (renewTime?: string) => ({ spec: renewTime ? { renewTime } : {} });
    expect(leaseCondition("obs", lease("2026-11-26T11:55:00.500000Z"), now)).toEqual({
      status: "True",
      reason: "ManagedClusterAddOnLeaseUpdated",
      message: "obs add-on is available.",
    });
    // Exactly renewTime + 5 x 60 s is no longer before the deadline: stale, as `now.Before(...)`.
    expect(leaseCondition("obs", lease("2026-11-26T11:55:00Z"), now).status).toBe("False");
    expect(leaseCondition("obs", lease("2026-11-26T11:50:00Z"), now)).toEqual({
      status: "False",
      reason: "ManagedClusterAddOnLeaseUpdateStopped",
      message: "obs add-on is not available.",
    });
    expect(leaseCondition("obs", lease(), now).status).toBe("False");
  });

  it("sends only changes: Unknown without a Lease, True once renewed, False when it goes stale, nothing while idle", async () => {
    const kc = await sim();
    await ensureNamespace(kc, "obs-ns");
    const hub = new StubHub();
    let now = Date.now();
    const agent = start(kc, hub, () => now);
    agent.setAddons([{ name: "obs", installNamespace: "obs-ns", healthCheckMode: "Lease", registration: false }]);
    await waitFor("the first report", async () => hub.statuses.length === 1, 10_000, 10);
    expect(hub.statuses[0]).toEqual({
      addons: [{ name: "obs", available: { status: "Unknown", reason: "ManagedClusterAddOnLeaseNotFound", message: "The status of obs add-on is unknown." } }],
    });

    await putLease(kc, "obs-ns", "obs", new Date(now).toISOString());
    await waitFor("Available=True", async () => hub.statuses.length === 2, 10_000, 10);
    expect(hub.statuses[1]!.addons[0]!.available.status).toBe("True");

    // Idle and healthy: many passes, nothing sent.
    now += 60_000;
    await passes(agent, 5);
    expect(hub.statuses).toHaveLength(2);

    now += 300_000;
    await waitFor("Available=False", async () => hub.statuses.length === 3, 10_000, 10);
    expect(hub.statuses[2]!.addons[0]!.available).toEqual({
      status: "False",
      reason: "ManagedClusterAddOnLeaseUpdateStopped",
      message: "obs add-on is not available.",
    });
  });

  it("sends a change again after a failed report, and everything again after resend()", async () => {
    const kc = await sim();
    await ensureNamespace(kc, "ns");
    const hub = new StubHub();
    hub.failStatus = true;
    const lines: string[] = [];
    const agent = start(kc, hub, () => Date.now(), lines);
    agent.setAddons([
      { name: "a", installNamespace: "ns", healthCheckMode: "Lease", registration: false },
      { name: "b", installNamespace: "ns", healthCheckMode: "Customized", registration: false },
    ]);
    await waitFor("the failure logged", async () => lines.some((l) => l.includes("add-on status report failed")), 10_000, 10);
    await passes(agent, 5);
    expect(lines.filter((l) => l.includes("add-on status report failed"))).toHaveLength(1);
    hub.failStatus = false;
    await waitFor("the report after recovery", async () => hub.statuses.length === 1, 10_000, 10);
    // Only the Lease-mode add-on is checked by the agent (Customized is the hub's).
    expect(hub.statuses[0]!.addons.map((a) => a.name)).toEqual(["a"]);
    agent.resend();
    await waitFor("the report sent again", async () => hub.statuses.length === 2, 10_000, 10);
    expect(hub.statuses[1]).toEqual(hub.statuses[0]);
  });
});

describe("token-based registration", () => {
  const spec = { name: "obs", installNamespace: "obs-ns", healthCheckMode: "None" as const, registration: true };
  const secretPath = `/api/v1/namespaces/obs-ns/secrets/${hubKubeconfigSecretName("obs")}`;
  const decoded = (s: Record<string, unknown>, k: string) => Buffer.from((s.data as Record<string, string>)[k]!, "base64").toString("utf8");

  it("refreshes a token with 20 % or less of its lifetime left, as OCM", () => {
    const iat = 1_000_000;
    expect(tokenNeedsRefresh(undefined, iat * 1000)).toBe(true);
    expect(tokenNeedsRefresh("not-a-jwt", iat * 1000)).toBe(true);
    expect(tokenNeedsRefresh(fakeToken(iat, iat + 1000), (iat + 799) * 1000)).toBe(false);
    expect(tokenNeedsRefresh(fakeToken(iat, iat + 1000), (iat + 800) * 1000)).toBe(true);
    expect(tokenNeedsRefresh(fakeToken(iat, iat), iat * 1000)).toBe(true);
  });

  it("writes <addon>-hub-kubeconfig once the install namespace exists, rotates it before expiry, deletes it when the add-on goes; no token in the log", async () => {
    const kc = await sim();
    const hub = new StubHub();
    const lines: string[] = [];
    let now = Date.now();
    const agent = start(kc, hub, () => now, lines);
    agent.setAddons([spec]);
    await waitFor("a token request", async () => hub.tokens.length === 1, 10_000, 10);
    // No install namespace yet: the token waits in memory, and the hub is not asked again.
    await passes(agent, 5);
    expect(hub.tokens).toHaveLength(1);
    await ensureNamespace(kc, "obs-ns");
    expect(hub.tokens[0]).toEqual({ addon: "obs", body: { expirationSeconds: 3600 } });
    let secret: Record<string, unknown> = {};
    await waitFor(
      "the Secret",
      async () => {
        secret = await kc.json("GET", secretPath).catch(() => ({}));
        return secret.data !== undefined;
      },
      10_000,
      10,
    );
    const first = decoded(secret, "token");
    expect(decoded(secret, "cluster-name")).toBe("c1");
    const kubeconfig = decoded(secret, "kubeconfig");
    expect(kubeconfig).toContain('server: "http://hub.example:8787"');
    expect(kubeconfig).toContain("tokenFile: token");
    expect(kubeconfig).not.toContain(first);

    // Valid: nothing asked for over many passes.
    await passes(agent, 5);
    expect(hub.tokens).toHaveLength(1);

    // 80 % of its lifetime gone: a new token replaces it.
    now += 2900_000;
    await waitFor("the rotation", async () => hub.tokens.length === 2, 10_000, 10);
    await waitFor("the rotated Secret", async () => decoded(await kc.json("GET", secretPath), "token") !== first, 10_000, 10);

    // A Secret deleted by someone is written again.
    await kc.json("DELETE", secretPath);
    await waitFor("the Secret again", async () => (await kc.json("GET", secretPath).catch(() => null)) !== null, 10_000, 10);

    agent.setAddons([]);
    await waitFor("the Secret deleted", async () => (await kc.json("GET", secretPath).catch(() => null)) === null, 10_000, 10);
    const tokens = hub.tokens.length;
    expect(lines.some((l) => l.includes("delivered the hub credential of add-on obs"))).toBe(true);
    for (const l of lines) expect(l).not.toContain(first);
    expect(tokens).toBeGreaterThanOrEqual(3);
  });

  it("asks again for a refused token only after the retry delay or a change of the add-on", async () => {
    const kc = await sim();
    await ensureNamespace(kc, "obs-ns");
    const hub = new StubHub();
    hub.refuseToken = 409;
    const lines: string[] = [];
    let now = Date.now();
    const agent = start(kc, hub, () => now, lines);
    agent.setAddons([spec]);
    await waitFor("the refused request", async () => hub.tokens.length === 1, 10_000, 10);
    await passes(agent, 5);
    expect(hub.tokens).toHaveLength(1);
    expect(lines.filter((l) => l.includes("the hub gave no token for add-on obs"))).toHaveLength(1);
    hub.refuseToken = undefined;
    now += 61_000;
    await waitFor("the Secret after the retry delay", async () => (await kc.json("GET", secretPath).catch(() => null)) !== null, 10_000, 10);
    expect(hub.tokens).toHaveLength(2);
  });
});
