/**
 * The hub's side of the agent's add-on calls (docs/agent-protocol.md "Add-ons"), inside workerd
 * with real Durable Objects and D1: the `Available` condition an agent reports from an add-on's
 * Lease (only its own namespace, only that condition, never a `Customized` add-on; an unchanged
 * report writes nothing; bad input is 4xx with nothing written), the cluster's Unknown passed on to
 * its add-ons, and token-based registration (the ServiceAccount, Role and bindings, the status
 * OCM records, a token that authenticates with least privilege and dies with the add-on).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AddonTokenAnswerSchema } from "../../src/agent-api/protocol.ts";
import { call, condition, dialChannel, MC, withClockAhead, type AgentKeys, joined, merge } from "./helpers.ts";
import { waitFor } from "../wait.ts";

const ADDON_API = "/apis/addon.open-cluster-management.io/v1alpha1";
const MCAS = (ns: string) => `${ADDON_API}/namespaces/${ns}/managedclusteraddons`;

async function createAddon(cluster: string, name: string, status?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const cma = await call("POST", `${ADDON_API}/clustermanagementaddons`, {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "ClusterManagementAddOn",
    metadata: { name },
    spec: {},
  });
  expect([201, 409]).toContain(cma.status);
  const r = await call("POST", MCAS(cluster), {
    apiVersion: "addon.open-cluster-management.io/v1alpha1",
    kind: "ManagedClusterAddOn",
    metadata: { name },
    spec: { installNamespace: `${name}-ns` },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  if (!status) return r.body;
  const s = await call("PATCH", `${MCAS(cluster)}/${name}/status`, { status }, merge);
  expect(s.status, JSON.stringify(s.body)).toBe(200);
  return s.body;
}

const available = (status: string, reason: string, message: string) => ({ status, reason, message });

async function report(cluster: string, keys: AgentKeys, body: unknown, signer = cluster) {
  return call("POST", `/agent/v1/clusters/${cluster}/addons/status`, body, { token: await keys.sign(signer) });
}

async function askToken(cluster: string, keys: AgentKeys, addon: string, body: unknown = {}) {
  return call("POST", `/agent/v1/clusters/${cluster}/addons/${addon}/token`, body, { token: await keys.sign(cluster) });
}

describe("add-on health reported by the agent", () => {
  it("writes Available as the agent derived it, only when it changed", async () => {
    const keys = await joined("ah1", { namespace: true });
    await createAddon("ah1", "obs");
    const notFound = available("Unknown", "ManagedClusterAddOnLeaseNotFound", "The status of obs add-on is unknown.");
    expect((await report("ah1", keys, { addons: [{ name: "obs", available: notFound }] })).status).toBe(200);
    let mca = (await call("GET", `${MCAS("ah1")}/obs`)).body;
    expect(condition(mca, "Available")).toMatchObject({ type: "Available", ...notFound });
    const rv = mca.metadata.resourceVersion;
    // The same again: nothing written.
    expect((await report("ah1", keys, { addons: [{ name: "obs", available: notFound }] })).status).toBe(200);
    expect((await call("GET", `${MCAS("ah1")}/obs`)).body.metadata.resourceVersion).toBe(rv);
    const up = available("True", "ManagedClusterAddOnLeaseUpdated", "obs add-on is available.");
    expect(
      (
        await report("ah1", keys, {
          addons: [
            { name: "obs", available: up },
            { name: "gone", available: up },
          ],
        })
      ).status,
    ).toBe(200);
    mca = (await call("GET", `${MCAS("ah1")}/obs`)).body;
    expect(condition(mca, "Available")).toMatchObject(up);
    expect((await call("GET", `${MCAS("ah1")}/gone`)).status).toBe(404);
  });

  it("leaves a Customized add-on's health to the hub", async () => {
    const keys = await joined("ah2", { namespace: true });
    await createAddon("ah2", "custom", { healthCheck: { mode: "Customized" } });
    expect(
      (
        await report("ah2", keys, {
          addons: [{ name: "custom", available: available("False", "ManagedClusterAddOnLeaseUpdateStopped", "custom add-on is not available.") }],
        })
      ).status,
    ).toBe(200);
    expect(condition((await call("GET", `${MCAS("ah2")}/custom`)).body, "Available")).toBeUndefined();
  });

  it("refuses bad input with a 4xx Status and writes nothing; another cluster's credential is 403", async () => {
    const keys = await joined("ah3", { namespace: true });
    await createAddon("ah3", "obs");
    const before = (await call("GET", `${MCAS("ah3")}/obs`)).body.metadata.resourceVersion;
    const cases: [unknown, number, string][] = [
      [{ addons: [{ name: "obs", available: available("Maybe", "R", "m") }] }, 422, "addons[0].available.status"],
      [{ addons: [{ name: "obs", available: available("True", "not a reason", "m") }] }, 422, "addons[0].available.reason"],
      [{ addons: [{ name: "obs", available: available("True", "R", "m"), extra: 1 }] }, 400, "extra"],
      [{ addons: "obs" }, 422, "addons"],
    ];
    for (const [body, code, field] of cases) {
      const r = await report("ah3", keys, body);
      expect(r.status, JSON.stringify(r.body)).toBe(code);
      expect(r.body.kind).toBe("Status");
      expect(JSON.stringify(r.body.details ?? r.body)).toContain(field);
    }
    // A stranger: 401 before its body is read; the agent's over-limit body: 413.
    expect((await call("POST", "/agent/v1/clusters/ah3/addons/status", { addons: [] }, { token: null })).status).toBe(401);
    expect((await call("POST", "/agent/v1/clusters/ah3/addons/obs/token", {}, { token: null })).status).toBe(401);
    const huge = await report("ah3", keys, { addons: [{ name: "obs", available: available("True", "R", "x".repeat(300 * 1024)) }] });
    expect(huge.status).toBe(413);
    const other = await joined("ah3b", { namespace: true });
    const r = await call("POST", "/agent/v1/clusters/ah3/addons/status", { addons: [] }, { token: await other.sign("ah3b") });
    expect(r.status).toBe(403);
    expect((await call("GET", `${MCAS("ah3")}/obs`)).body.metadata.resourceVersion).toBe(before);
  });

  it("sets every add-on Unknown with the cluster's reason when the cluster's lease runs out", async () => {
    const keys = await joined("ah4", { namespace: true });
    expect((await call("PATCH", `${MC}/ah4`, { spec: { leaseDurationSeconds: 1 } }, merge)).status).toBe(200);
    expect((await call("POST", "/agent/v1/clusters/ah4/heartbeat", { healthy: true }, { token: await keys.sign("ah4") })).status).toBe(200);
    await createAddon("ah4", "obs");
    await createAddon("ah4", "custom", { healthCheck: { mode: "Customized" } });
    await report("ah4", keys, { addons: [{ name: "obs", available: available("True", "ManagedClusterAddOnLeaseUpdated", "obs add-on is available.") }] });
    expect(await withClockAhead(6_000, () => runDurableObjectAlarm(env.CLUSTERS.getByName("ah4")))).toBe(true);
    const mc = (await call("GET", `${MC}/ah4`)).body;
    const unknown = condition(mc, "ManagedClusterConditionAvailable");
    expect(unknown).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
    for (const name of ["obs", "custom"]) {
      await waitFor(
        `${name} Unknown`,
        async () => condition((await call("GET", `${MCAS("ah4")}/${name}`)).body, "Available")?.status === "Unknown",
        10_000,
        50,
      );
      expect(condition((await call("GET", `${MCAS("ah4")}/${name}`)).body, "Available")).toMatchObject({
        status: "Unknown",
        reason: unknown.reason,
        message: unknown.message,
      });
    }
  });
});

describe("token-based add-on registration", () => {
  it("refuses an add-on that does not exist (404) or has no kubeClient registration (409), and a bad lifetime (422)", async () => {
    const keys = await joined("tr1", { namespace: true });
    expect((await askToken("tr1", keys, "nope")).status).toBe(404);
    await createAddon("tr1", "plain");
    const r = await askToken("tr1", keys, "plain");
    expect(r.status).toBe(409);
    expect(r.body.message).toContain("no kubeClient registration");
    const bad = await askToken("tr1", keys, "plain", { expirationSeconds: 60 });
    expect(bad.status).toBe(422);
    expect((await call("GET", "/api/v1/namespaces/tr1/serviceaccounts/plain-agent")).status).toBe(404);
  });

  it("creates the ServiceAccount, a least-privilege Role and the template's bindings, records OCM's status, and answers a token that works and dies with the add-on", async () => {
    const keys = await joined("tr2", { namespace: true });
    const tpl = await call("POST", `${ADDON_API}/addontemplates`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "metrics-template" },
      spec: {
        addonName: "metrics",
        agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "metrics", namespace: "default" } }] } },
        registration: [{ type: "KubeClient", kubeClient: { hubPermissions: [{ type: "CurrentCluster", currentCluster: { clusterRoleName: "view" } }] } }],
      },
    });
    expect(tpl.status, JSON.stringify(tpl.body)).toBe(201);
    const cma = await call("POST", `${ADDON_API}/clustermanagementaddons`, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "metrics" },
      spec: { supportedConfigs: [{ group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "metrics-template" } }] },
    });
    expect([201, 409]).toContain(cma.status);
    const mca = await call("POST", MCAS("tr2"), {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "metrics" },
      spec: {},
    });
    expect(mca.status).toBe(201);

    const r = await askToken("tr2", keys, "metrics", { expirationSeconds: 3600 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const answer = AddonTokenAnswerSchema.parse(r.body);
    expect(Date.parse(answer.expirationTimestamp) - Date.now()).toBeGreaterThan(3500_000);

    const sa = (await call("GET", "/api/v1/namespaces/tr2/serviceaccounts/metrics-agent")).body;
    expect(sa.metadata.labels).toMatchObject({
      "addon.open-cluster-management.io/name": "metrics",
      "addon.open-cluster-management.io/token-infrastructure": "true",
    });
    expect(sa.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "ManagedClusterAddOn", name: "metrics", uid: mca.body.metadata.uid })]);
    const role = (await call("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/tr2/roles/open-cluster-management:metrics:agent")).body;
    expect(role.rules.every((rule: { resourceNames?: string[] }) => rule.resourceNames?.length === 1 && rule.resourceNames[0] === "metrics")).toBe(true);
    const view = (await call("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/tr2/rolebindings/open-cluster-management:metrics:clusterrole:agent")).body;
    expect(view.roleRef).toMatchObject({ kind: "ClusterRole", name: "view" });
    expect(view.subjects).toEqual([{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "system:serviceaccount:tr2:metrics-agent" }]);

    const status = (await call("GET", `${MCAS("tr2")}/metrics`)).body.status;
    expect(status.registrations).toEqual([{ signerName: "kubernetes.io/kube-apiserver-client", subject: { user: "system:serviceaccount:tr2:metrics-agent" } }]);
    expect(status.kubeClientDriver).toBe("token");
    expect(condition({ status }, "RegistrationApplied")).toMatchObject({ status: "True", reason: "SetPermissionApplied" });
    expect(condition({ status }, "TokenInfrastructureReady")).toMatchObject({
      status: "True",
      message: `ServiceAccount tr2/metrics-agent (UID: ${sa.metadata.uid}) is ready`,
    });

    // The add-on's token: its own ManagedClusterAddOn and (through `view`) its cluster's namespace; nothing else.
    const as = { token: answer.token };
    expect((await call("GET", `${MCAS("tr2")}/metrics`, undefined, as)).status).toBe(200);
    expect((await call("GET", "/apis/work.open-cluster-management.io/v1/namespaces/tr2/manifestworks", undefined, as)).status).toBe(200);
    expect((await call("GET", "/apis/work.open-cluster-management.io/v1/namespaces/tr1/manifestworks", undefined, as)).status).toBe(403);
    expect((await call("DELETE", `${MCAS("tr2")}/metrics`, undefined, as)).status).toBe(403);
    expect((await call("GET", MC, undefined, as)).status).toBe(403);

    // A second request: the same ServiceAccount, a new token; the status unchanged.
    const rv = (await call("GET", `${MCAS("tr2")}/metrics`)).body.metadata.resourceVersion;
    const again = await askToken("tr2", keys, "metrics");
    expect(again.status).toBe(200);
    expect(again.body.token).not.toBe(answer.token);
    expect((await call("GET", `${MCAS("tr2")}/metrics`)).body.metadata.resourceVersion).toBe(rv);

    // The add-on removed: its ServiceAccount, Role and bindings go, and its tokens stop working.
    expect((await call("DELETE", `${MCAS("tr2")}/metrics`)).status).toBe(200);
    await waitFor(
      "the ServiceAccount gone",
      async () => (await call("GET", "/api/v1/namespaces/tr2/serviceaccounts/metrics-agent")).status === 404,
      10_000,
      50,
    );
    await waitFor(
      "the bindings gone",
      async () =>
        (await call("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/tr2/rolebindings/open-cluster-management:metrics:clusterrole:agent")).status === 404,
      10_000,
      50,
    );
    expect((await call("GET", `${MCAS("tr2")}/metrics`, undefined, as)).status).toBe(401);
  });

  it("registers an add-on whose status declares a kubeClient registration (the add-on manager's)", async () => {
    const keys = await joined("tr3", { namespace: true });
    await createAddon("tr3", "reg", {
      registrations: [
        {
          signerName: "kubernetes.io/kube-apiserver-client",
          subject: {
            user: "system:open-cluster-management:cluster:tr3:addon:reg:agent:reg-agent",
            groups: ["system:open-cluster-management:cluster:tr3:addon:reg"],
          },
        },
      ],
    });
    const r = await askToken("tr3", keys, "reg");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const status = (await call("GET", `${MCAS("tr3")}/reg`)).body.status;
    // As OCM's token driver: the subject becomes the ServiceAccount's user, without groups.
    expect(status.registrations).toEqual([{ signerName: "kubernetes.io/kube-apiserver-client", subject: { user: "system:serviceaccount:tr3:reg-agent" } }]);
  });
});

/** Dials the agent channel; returns the socket and the messages received. */
async function dial(name: string, keys: AgentKeys): Promise<{ ws: WebSocket; messages: Record<string, unknown>[]; closed: () => boolean }> {
  const res = await dialChannel(name, await keys.sign(name));
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  const messages: Record<string, unknown>[] = [];
  let closed = false;
  ws.accept();
  ws.addEventListener("message", (e) => {
    messages.push(JSON.parse(typeof e.data === "string" ? e.data : "{}") as Record<string, unknown>);
  });
  ws.addEventListener("close", () => {
    closed = true;
  });
  return { ws, messages, closed: () => closed };
}

describe("add-on messages over the channel", () => {
  it("acknowledges addon-status, answers addon-token with a token, refuses with an error message; the connection stays", async () => {
    const keys = await joined("ch1", { namespace: true });
    await createAddon("ch1", "obs", { registrations: [{ signerName: "kubernetes.io/kube-apiserver-client" }] });
    await createAddon("ch1", "plain");
    const c = await dial("ch1", keys);
    const answer = async (id: string) => waitFor(`the answer to ${id}`, async () => c.messages.find((m) => m.id === id), 10_000, 5);
    c.ws.send(
      JSON.stringify({
        type: "addon-status",
        id: "a1",
        status: { addons: [{ name: "obs", available: available("True", "ManagedClusterAddOnLeaseUpdated", "obs add-on is available.") }] },
      }),
    );
    expect(await answer("a1")).toEqual({ type: "ack", id: "a1" });
    expect(condition((await call("GET", `${MCAS("ch1")}/obs`)).body, "Available")).toMatchObject({ status: "True" });
    c.ws.send(JSON.stringify({ type: "addon-token", id: "t1", addon: "obs", request: { expirationSeconds: 600 } }));
    const t = await answer("t1");
    expect(t).toMatchObject({ type: "ack", id: "t1", token: expect.any(String), expirationTimestamp: expect.any(String) });
    // Issued for the origin the agent dialled: it authenticates there.
    expect((await call("GET", `${MCAS("ch1")}/obs`, undefined, { token: t.token as string })).status).toBe(200);
    c.ws.send(JSON.stringify({ type: "addon-token", id: "t2", addon: "plain", request: {} }));
    expect(await answer("t2")).toMatchObject({ type: "error", id: "t2", status: { code: 409 } });
    c.ws.send(JSON.stringify({ type: "addon-status", id: "a2", status: { addons: [{ name: "obs", available: available("Yes", "R", "m") }] } }));
    expect(await answer("a2")).toMatchObject({ type: "error", id: "a2", status: { code: 422 } });
    expect(c.closed()).toBe(false);
    c.ws.close(1000, "done");
  });
});
