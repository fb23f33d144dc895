/**
 * The proxy to a member cluster's API through the hub (docs/proxy.md), end to end: a real hub
 * (`wrangler dev` over HTTPS), a real agent process (`flotilla-agent --simulate`, ws transport)
 * and the real kubectl with a kubeconfig whose `server` is the proxy's prefix (Flotilla's
 * `/clusters/{name}/proxy` and Karmada's `/apis/cluster.karmada.io/v1alpha1/clusters/{name}/proxy`):
 * get, list, `get -w`, `apply --server-side`, delete; who the member sees (`kubectl auth whoami`
 * through the proxy: the hub user, impersonated by the agent, with the hub as an extra); a user
 * without `managedclusters/proxy` gets 403 and reaches nothing; a cluster without a connected agent
 * answers 503; hostile paths are 400 and a flood of streams is bounded (429) without a wedge;
 * every proxied request is in the hub's audit log.
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { adminKubeconfigYaml, cond, MC, merge, scratchDir, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const run = promisify(execFile);
const { dir, file } = scratchDir("flotilla-proxy-");
const AVAILABLE = "ManagedClusterConditionAvailable";

/** A process's resident set size in MiB (Linux `/proc/<pid>/status` VmRSS). */
const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

let hub: Hub;
let hubConfig: string;
const agents: AgentProcess[] = [];

/** A kubeconfig like the hub's whose server is the hub's URL + `prefix`. */
const memberConfig = (name: string, prefix: string, token?: string) => {
  let yaml = hubConfig.replace(/server: (\S+)/, (_m, url: string) => `server: ${url}${prefix}`);
  if (token) yaml = yaml.replace(/token: \S+/, `token: ${token}`);
  return file(name, yaml);
};

/** kubectl with kubeconfig `config`: stdout and stderr, and whether it succeeded. */
async function kubectl(config: string, ...args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  try {
    const r = await run("kubectl", ["--kubeconfig", config, "--cache-dir", path.join(dir, "cache"), ...args], { cwd: dir });
    return { ok: true, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string };
    return { ok: false, out: x.stdout ?? "", err: x.stderr ?? String(e) };
  }
}

beforeAll(async () => {
  hub = await startHub({
    https: true,
    expectedServerErrors: [{ path: /^\/clusters\/offline\/proxy\//, status: 503, why: "a cluster without a connected agent answers 503" }],
  });
  const token = await createBootstrapToken(hub);
  hubConfig = await adminKubeconfigYaml(hub);
  const agent = startAgent(hub, ["--cluster-name", "m1", "--bootstrap-token", token, "--simulate-state", path.join(dir, "m1.json")]);
  agents.push(agent);
  await waitFor("m1 to register", async () => (await admin(hub, "GET", `${MC}/m1`)).status === 200);
  expect((await admin(hub, "PATCH", `${MC}/m1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
  await waitFor("m1 Available", async () => cond((await admin(hub, "GET", `${MC}/m1`)).body, AVAILABLE)?.status === "True");
  await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
}, 180_000);

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  await hub?.stop();
});

describe("the proxy to a member cluster's API (kubectl through the hub)", () => {
  it("gets and lists through Flotilla's prefix and Karmada's", async () => {
    const m1 = memberConfig("m1.yaml", "/clusters/m1/proxy");
    const ns = await kubectl(m1, "get", "namespaces");
    expect(ns.err).toBe("");
    expect(ns.out).toMatch(/\nkube-system\s+Active/);
    const nodes = await kubectl(m1, "get", "nodes", "-o", "name");
    expect(nodes.out).toContain("node/sim-node-1");
    const karmada = memberConfig("m1-karmada.yaml", "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy");
    const one = await kubectl(karmada, "get", "namespace", "kube-system", "-o", "jsonpath={.metadata.name}");
    expect(one.out).toBe("kube-system");
    const pods = await kubectl(karmada, "get", "pods", "-A");
    expect(pods.ok).toBe(true);
  });

  it("applies server-side, watches, and deletes through the proxy", async () => {
    const m1 = memberConfig("m1.yaml", "/clusters/m1/proxy");
    const cm = file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: through-hub\n  namespace: default\ndata:\n  a: '1'\n");
    const applied = await kubectl(m1, "apply", "--server-side", "-f", cm);
    expect(applied.err).toBe("");
    expect(applied.out).toContain("configmap/through-hub serverside-applied");
    expect((await kubectl(m1, "get", "configmap", "through-hub", "-o", "jsonpath={.data.a}")).out).toBe("1");

    // A watch: long-lived and chunked, each event as the member sends it.
    const watch = spawn("kubectl", ["--kubeconfig", m1, "get", "configmaps", "-n", "default", "-w", "-o", "name"], { cwd: dir });
    let seen = "";
    watch.stdout.on("data", (d: Buffer) => (seen += d.toString()));
    watch.stderr.on("data", (d: Buffer) => (seen += d.toString()));
    try {
      await waitFor("the watch's first list", async () => seen.includes("configmap/through-hub"));
      const cm2 = file("cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n  namespace: default\ndata:\n  b: '2'\n");
      expect((await kubectl(m1, "apply", "--server-side", "-f", cm2)).ok).toBe(true);
      await waitFor("the watch to see the create", async () => seen.includes("configmap/watched")).catch((e: Error) => {
        throw new Error(`${e.message}; the watch printed: ${seen}`);
      });
      expect((await kubectl(m1, "delete", "configmap", "watched")).out).toContain('configmap "watched" deleted');
      // `-o name` prints each event's object: the delete prints it a second time.
      await waitFor("the watch to see the delete", async () => seen.split("configmap/watched").length - 1 >= 2);
    } finally {
      watch.kill("SIGTERM");
    }
    expect((await kubectl(m1, "get", "configmap", "watched")).err).toContain('configmaps "watched" not found');
  });

  it("kubectl logs and logs -f through the proxy; a 50 MiB log stream leaves the channel's works unharmed", async () => {
    const m1 = memberConfig("m1.yaml", "/clusters/m1/proxy");
    const pod = (name: string, annotations: Record<string, string>) =>
      file(
        `${name}.yaml`,
        [
          "apiVersion: v1",
          "kind: Pod",
          "metadata:",
          `  name: ${name}`,
          "  namespace: default",
          "  annotations:",
          ...Object.entries(annotations).map(([k, v]) => `    ${k}: "${v}"`),
          "spec:",
          "  containers:",
          "  - name: app",
          "    image: nginx",
          "",
        ].join("\n"),
      );
    expect(
      (await kubectl(m1, "apply", "--server-side", "-f", pod("chatty", { "sim.flotilla.dev/log-lines": "3", "sim.flotilla.dev/log-interval-ms": "100" }))).ok,
    ).toBe(true);
    const logs = await kubectl(m1, "logs", "chatty");
    expect(logs.out).toBe("chatty app line 1\nchatty app line 2\nchatty app line 3\n");
    expect((await kubectl(m1, "logs", "chatty", "--tail", "1")).out).toBe("chatty app line 3\n");

    // logs -f: lines keep coming; the client leaving ends the member's stream.
    const follow = spawn("kubectl", ["--kubeconfig", m1, "logs", "-f", "chatty"], { cwd: dir });
    let followed = "";
    follow.stdout.on("data", (d: Buffer) => (followed += d.toString()));
    try {
      await waitFor("followed lines", async () => followed.includes("chatty app line 8\n"));
    } finally {
      follow.kill("SIGTERM");
    }

    // 50 MiB through logs -f while a work is delivered: the work reaches Applied within 1 s.
    const MIB = 1024 * 1024;
    expect(
      (
        await kubectl(
          m1,
          "apply",
          "--server-side",
          "-f",
          pod("flood", { "sim.flotilla.dev/log-lines": "0", "sim.flotilla.dev/log-follow-bytes": String(50 * MIB) }),
        )
      ).ok,
    ).toBe(true);
    const big = spawn("kubectl", ["--kubeconfig", m1, "logs", "-f", "flood"], { cwd: dir });
    let got = 0;
    big.stdout.on("data", (d: Buffer) => (got += d.length));
    try {
      await waitFor("the stream to start", async () => got > MIB);
      const t0 = performance.now();
      const work = {
        apiVersion: "work.open-cluster-management.io/v1",
        kind: "ManifestWork",
        metadata: { name: "during-logs" },
        spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "during-logs", namespace: "default" }, data: { a: "1" } }] } },
      };
      expect((await admin(hub, "POST", "/apis/work.open-cluster-management.io/v1/namespaces/m1/manifestworks", work)).status).toBe(201);
      await waitFor(
        "the work Applied",
        async () =>
          cond((await admin(hub, "GET", "/apis/work.open-cluster-management.io/v1/namespaces/m1/manifestworks/during-logs")).body, "Applied")?.status ===
          "True",
        20_000,
        20,
      );
      const ms = performance.now() - t0;
      const streamed = got;
      console.log(`proxy: a work reached Applied ${ms.toFixed(0)} ms after its create while logs -f streamed (${(streamed / MIB).toFixed(1)} MiB by then)`);
      expect(ms).toBeLessThan(1000);
      expect(streamed).toBeLessThan(50 * MIB);
      const t1 = performance.now();
      let peak = 0;
      await waitFor(
        "50 MiB of log",
        async () => {
          peak = Math.max(peak, rssMiB(agents[0]!.child.pid!));
          return got >= 50 * MIB;
        },
        120_000,
        100,
      );
      // The agent process holds the simulated cluster too (--simulate): its RSS bounds the agent's.
      console.log(`proxy: the agent's RSS (with its simulated cluster) peaked at ${peak.toFixed(0)} MiB while streaming`);
      expect(peak).toBeLessThan(150);
      console.log(`proxy: logs -f carried 50 MiB in ${((performance.now() - t1) / 1000).toFixed(1)} s after the first MiB`);
    } finally {
      big.kill("SIGTERM");
    }
  });

  it("the member sees the hub user, impersonated by the agent, never the client's Impersonate headers", async () => {
    const m1 = memberConfig("m1.yaml", "/clusters/m1/proxy");
    const me = await kubectl(m1, "auth", "whoami", "-o", "json");
    const review = JSON.parse(me.out) as { status: { userInfo: { username: string; groups: string[]; extra?: Record<string, string[]> } } };
    expect(review.status.userInfo.username).toBe("flotilla:admin");
    expect(review.status.userInfo.groups).toContain("system:masters");
    expect(review.status.userInfo.extra?.["flotilla.io/hub"]?.[0]).toMatch(/^127\.0\.0\.1:\d+$/);

    // A hub user with the proxy permission on m1 only: a ServiceAccount of the hub.
    await admin(hub, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "ops" } });
    expect(
      (await admin(hub, "POST", "/api/v1/namespaces/ops/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "viewer" } })).status,
    ).toBe(201);
    const tr = await admin(hub, "POST", "/api/v1/namespaces/ops/serviceaccounts/viewer/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    });
    expect(tr.status).toBe(201);
    const viewerToken = tr.body.status.token as string;
    const viewer = memberConfig("viewer.yaml", "/clusters/m1/proxy", viewerToken);

    // Without `managedclusters/proxy`: 403 at the hub, the member sees nothing.
    const refused = await kubectl(viewer, "get", "namespaces");
    expect(refused.ok).toBe(false);
    expect(refused.err).toContain('cannot get resource "managedclusters/proxy" in API group "cluster.open-cluster-management.io"');
    // Impersonation the hub does not allow is refused at the hub too.
    const asAdmin = await kubectl(viewer, "--as", "kubernetes-admin", "get", "namespaces");
    expect(asAdmin.err).toContain("cannot impersonate");

    expect(
      (
        await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "proxy-m1" },
          rules: [{ apiGroups: ["cluster.open-cluster-management.io"], resources: ["managedclusters/proxy"], resourceNames: ["m1"], verbs: ["*"] }],
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "proxy-m1-viewer" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "proxy-m1" },
          subjects: [{ kind: "ServiceAccount", name: "viewer", namespace: "ops" }],
        })
      ).status,
    ).toBe(201);
    const who = JSON.parse((await kubectl(viewer, "auth", "whoami", "-o", "json")).out) as typeof review;
    expect(who.status.userInfo.username).toBe("system:serviceaccount:ops:viewer");
    // The member's own RBAC decides what the hub user may do there: nothing yet.
    const memberRefused = await kubectl(viewer, "get", "namespaces");
    expect(memberRefused.err).toContain('User "system:serviceaccount:ops:viewer" cannot list resource "namespaces"');
    // Karmada's prefix needs `clusters/proxy` of cluster.karmada.io, which the viewer lacks.
    const karmada = memberConfig("viewer-karmada.yaml", "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy", viewerToken);
    expect((await kubectl(karmada, "get", "namespaces")).err).toContain('cannot get resource "clusters/proxy" in API group "cluster.karmada.io"');

    // A raw request with Impersonate-User from the admin: the hub impersonates, the member sees
    // the hub's impersonated user, never the header itself (whoami would show the member's).
    const raw = await hubFetch(
      hub,
      "POST",
      "/clusters/m1/proxy/apis/authentication.k8s.io/v1/selfsubjectreviews",
      {
        authorization: `Bearer ${hub.adminToken}`,
        "content-type": "application/json",
        "impersonate-user": "system:serviceaccount:ops:viewer",
      },
      JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }),
    );
    expect(raw.status).toBe(201);
    const rawUser = (JSON.parse(raw.text) as typeof review).status.userInfo;
    expect(rawUser.username).toBe("system:serviceaccount:ops:viewer");
    expect(rawUser.groups).not.toContain("system:masters");
  });

  it("a cluster without a connected agent answers 503 with a Status saying so", async () => {
    expect(
      (
        await admin(hub, "POST", MC, {
          apiVersion: "cluster.open-cluster-management.io/v1",
          kind: "ManagedCluster",
          metadata: { name: "offline" },
          spec: { hubAcceptsClient: true },
        })
      ).status,
    ).toBe(201);
    const r = await hubFetch(hub, "GET", "/clusters/offline/proxy/api/v1/namespaces", { authorization: `Bearer ${hub.adminToken}` });
    expect(r.status).toBe(503);
    const status = JSON.parse(r.text) as { kind: string; reason: string; message: string };
    expect(status.kind).toBe("Status");
    expect(status.reason).toBe("ServiceUnavailable");
    expect(status.message).toContain("cluster offline has no agent connected");
  });

  it("refuses hostile paths with 400 and bounds a flood of streams without a wedge", async () => {
    const auth = { authorization: `Bearer ${hub.adminToken}` };
    // `%2e%2e` is `..` to the URL parser: the path is resolved before routing and no longer
    // under the proxy (404), as any HTTP server resolves it.
    const resolved = await hubFetch(hub, "GET", "/clusters/m1/proxy/api/%2e%2e/%2e%2e/clusters/other/proxy/api", auth);
    expect(resolved.status).toBe(404);
    expect(JSON.parse(resolved.text).kind).toBe("Status");
    for (const p of [
      "/clusters/m1/proxy/api/v1/namespaces/%2e%2e%2fkube-system",
      "/clusters/m1/proxy//evil.example/api",
      "/clusters/m1/proxy/http:%2F%2Fevil.example/api",
      "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/..%2f..%2fsecrets",
    ]) {
      const r = await hubFetch(hub, "GET", p, auth);
      expect({ p, status: r.status }).toEqual({ p, status: 400 });
      expect(JSON.parse(r.text).kind).toBe("Status");
    }
    const tooBig = await hubFetch(
      hub,
      "POST",
      "/clusters/m1/proxy/api/v1/namespaces/default/configmaps",
      { ...auth, "content-type": "application/json" },
      "x".repeat(3 * 1024 * 1024 + 1),
    );
    expect(tooBig.status).toBe(413);

    // 40 watches at once: at most 32 stream, the rest are 429 with a Status; once they end, a get works.
    const controllers = Array.from({ length: 40 }, () => new AbortController());
    const { request } = await import("node:https");
    const ca = readFileSync(hub.caFile!);
    const codes = await Promise.all(
      controllers.map(
        (ac) =>
          new Promise<number>((resolve) => {
            const req = request(
              `${hub.url}/clusters/m1/proxy/api/v1/namespaces/default/configmaps?watch=1`,
              { headers: auth, ca, signal: ac.signal },
              (res) => {
                resolve(res.statusCode ?? 0);
                res.on("data", () => undefined);
                res.on("error", () => undefined);
              },
            );
            req.on("error", () => resolve(-1));
            req.end();
          }),
      ),
    );
    // The earlier test's watch may still hold its stream while its cancel travels.
    expect(codes.filter((c) => c === 200).length).toBeGreaterThanOrEqual(31);
    expect(codes.filter((c) => c === 200 || c === 429).length).toBe(40);
    for (const ac of controllers) ac.abort();
    await waitFor("the streams to be freed", async () => {
      const r = await hubFetch(hub, "GET", "/clusters/m1/proxy/api/v1/namespaces/kube-system", auth);
      return r.status === 200;
    });
    const m1 = memberConfig("m1.yaml", "/clusters/m1/proxy");
    expect((await kubectl(m1, "get", "namespace", "default", "-o", "name")).out.trim()).toBe("namespace/default");
  });

  it("records every proxied request in the hub's audit log: who, cluster, verb, path", async () => {
    const got = await waitFor("the proxied reads in the audit log", async () => {
      const r = await admin(hub, "GET", "/apis/flotilla.dev/v1alpha1/auditevents?limit=500");
      const items = (r.body?.items ?? []) as {
        verb: string;
        requestURI: string;
        user: { username?: string };
        objectRef?: { resource?: string; subresource?: string; name?: string };
      }[];
      const proxied = items.filter((e) => e.objectRef?.subresource === "proxy");
      return proxied.some((e) => e.verb === "get" && e.requestURI.startsWith("/clusters/m1/proxy/api/v1/namespaces")) ? proxied : undefined;
    });
    const e = got.find((x) => x.requestURI.startsWith("/clusters/m1/proxy/"))!;
    expect(e.objectRef).toMatchObject({ resource: "managedclusters", subresource: "proxy", name: "m1" });
    expect(e.user.username).toBeTruthy();
  });
});
