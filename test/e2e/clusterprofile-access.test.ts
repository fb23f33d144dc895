/**
 * A ClusterProfile consumer reaches a member cluster through the access the hub advertises
 * (docs/proxy.md "ClusterProfile access"), end to end: a real hub (`wrangler dev` over HTTPS), a
 * real agent (`flotilla-agent --simulate`, ws transport), and a consumer that follows
 * kubernetes-sigs/cluster-inventory-api's `pkg/access` (config.go at 8375ac2) and client-go's exec
 * authenticator (`plugin/pkg/client/auth/exec/exec.go` at 32ce75a7d) step by step, each step citing
 * the upstream lines it reproduces, then lists pods with Python's `kubernetes` client (Debian's
 * python3-kubernetes, which runs the exec plugin itself). Also `flotilla kubeconfig --cluster
 * NAME --exec` with kubectl, and `flotilla credentials`' expiry for a JWT.
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { admin, createBootstrapToken, createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import { BINDINGS, cond, MC, merge, scratchDir, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const FLOTILLA = path.join(root, "agent/bin/flotilla.js");
const { dir, file } = scratchDir("flotilla-cp-access-");
const G = "cluster.open-cluster-management.io";
const NS = "consumers";
const PYTHON = "/usr/bin/python3";

/** kubeconfig v1 `Cluster` as a ClusterProfile's `AccessProvider.cluster` holds it. */
interface KubeCluster {
  server: string;
  "certificate-authority-data"?: string;
  "proxy-url"?: string;
  extensions?: { name: string; extension: unknown }[];
}
/** cluster-inventory-api `apis/v1alpha1` `AccessProvider` (clusterprofile_types.go:101-104). */
interface AccessProvider {
  name: string;
  cluster: KubeCluster;
}
/** client-go `clientcmdapi.ExecConfig` as JSON (what `pkg/access` `Provider.ExecConfig` holds). */
interface ExecConfig {
  apiVersion: string;
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  provideClusterInfo?: boolean;
  interactiveMode?: string;
}

let hub: Hub;
let agent: AgentProcess;

beforeAll(async () => {
  hub = await startHub({ https: true });
  const token = await createBootstrapToken(hub);
  agent = startAgent(hub, ["--cluster-name", "m1", "--bootstrap-token", token, "--simulate-state", path.join(dir, "m1.json")]);
  await waitFor("m1 to register", async () => (await admin(hub, "GET", `${MC}/m1`)).status === 200);
  expect((await admin(hub, "PATCH", `${MC}/m1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
  await waitFor("m1 Available", async () => cond((await admin(hub, "GET", `${MC}/m1`)).body, "ManagedClusterConditionAvailable")?.status === "True");
  await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
  // m1 in set "fleet", bound in namespace NS: the hub writes m1's ClusterProfile there.
  await createNamespaces(hub, NS);
  expect(
    (await admin(hub, "POST", `/apis/${G}/v1beta2/managedclustersets`, { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSet", metadata: { name: "fleet" } }))
      .status,
  ).toBe(201);
  const binding = { apiVersion: `${G}/v1beta2`, kind: "ManagedClusterSetBinding", metadata: { name: "fleet" }, spec: { clusterSet: "fleet" } };
  expect((await admin(hub, "POST", BINDINGS(NS), binding)).status).toBe(201);
  expect((await admin(hub, "PATCH", `${MC}/m1`, { metadata: { labels: { [`${G}/clusterset`]: "fleet" } } }, merge)).status).toBe(200);
}, 180_000);

afterAll(async () => {
  if (agent) await stopAgent(agent);
  await hub?.stop();
});

/** GET over HTTPS trusting only `caPem`, with a bearer token: status and parsed body. */
function httpsGet(url: string, caPem: Buffer, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: "GET", ca: caPem, headers: { authorization: `Bearer ${token}`, accept: "application/json" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "null") }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Runs `command args` with `env` (on top of this process's), as exec.Command does: stdout and exit code. */
function runPlugin(command: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe("ClusterProfile access (cluster-inventory-api pkg/access, KEP-5339)", () => {
  it("a consumer following pkg/access's exec-plugin flow lists the member's pods through the advertised provider", async () => {
    // The hub writes m1's profile with status.accessProviders when it writes the profile.
    let profile: { metadata: { name: string }; status?: { accessProviders?: AccessProvider[]; credentialProviders?: AccessProvider[] } } | undefined;
    await waitFor("m1's ClusterProfile with accessProviders", async () => {
      const r = await admin(hub, "GET", `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles/m1`);
      profile = r.status === 200 ? (r.body as typeof profile) : undefined;
      return (profile?.status?.accessProviders?.length ?? 0) > 0;
    });
    const caPem = readFileSync(hub.caFile!);
    expect(profile!.status!.accessProviders).toEqual([
      { name: "flotilla", cluster: { server: `${hub.url}/clusters/m1/proxy`, "certificate-authority-data": caPem.toString("base64") } },
    ]);

    // 1. The provider file, read as config.go NewFromFile (L107-122): JSON `{"providers": [...]}`,
    //    each `Provider` (L79-84) a name and a client-go ExecConfig. A second provider the profile
    //    does not list comes first, so the choice below is by the profile's names.
    const providerFile = file(
      "clusterprofile-provider-file.json",
      JSON.stringify({
        providers: [
          { name: "other-vendor", execConfig: { apiVersion: "client.authentication.k8s.io/v1", command: "/bin/false", provideClusterInfo: false } },
          {
            name: "flotilla",
            execConfig: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: process.execPath,
              args: [FLOTILLA, "credentials"],
              env: [{ name: "FLOTILLA_ADMIN_TOKEN", value: hub.adminToken }],
              provideClusterInfo: true,
            },
          },
        ],
      }),
    );
    const config = JSON.parse(readFileSync(providerFile, "utf8")) as { providers: { name: string; execConfig: ExecConfig }[] };

    // 2. getClusterAccessorFromClusterProfile (L212-237): status.credentialProviders (deprecated)
    //    then status.accessProviders into a map by name (accessProviders win), and the first of
    //    the config's providers, in the config's order, that the map holds.
    const byName = new Map<string, AccessProvider>();
    for (const p of profile!.status!.credentialProviders ?? []) byName.set(p.name, p);
    for (const p of profile!.status!.accessProviders ?? []) byName.set(p.name, p);
    const accessor = config.providers.map((p) => byName.get(p.name)).find((a) => a !== undefined);
    expect(accessor?.name).toBe("flotilla");

    // 3. getExecConfigAndFlagsFromConfig (L199-208): the exec config of the provider so named.
    const execConfig = config.providers.find((p) => p.name === accessor!.name)!.execConfig;
    // (L142-161: no additional-args/-envs extensions in Flotilla's profile, and the policies are
    //  unset, i.e. Ignore; L187-194: no `client.authentication.k8s.io/exec` extension either.)
    expect(accessor!.cluster.extensions ?? []).toEqual([]);

    // 4. The rest.Config (L164-185): Host = cluster.server, CAData = certificate-authority-data,
    //    Proxy = proxy-url (none), ExecProvider = the exec config with InteractiveMode "Never".
    const rest = {
      host: accessor!.cluster.server,
      caData: Buffer.from(accessor!.cluster["certificate-authority-data"] ?? "", "base64"),
      execProvider: { ...execConfig, interactiveMode: "Never" },
    };
    expect(accessor!.cluster["proxy-url"]).toBeUndefined();

    // 5. client-go's exec authenticator, refreshCredsLocked (exec.go L435-505): Interactive is
    //    false for "Never" (isInteractive, L234-258); with provideClusterInfo the rest.Config's
    //    cluster (rest/exec.go ConfigToExecCluster: server, certificate-authority-data) goes in
    //    spec.cluster; the ExecCredential, encoded in the configured apiVersion, is passed in
    //    KUBERNETES_EXEC_INFO (L450-455) beside the process's environment and the config's env
    //    (L450); the command runs with its args (L458); stdout must decode in the same
    //    apiVersion (L478-484), with a status (L486-488) holding a token (L490-492); a status
    //    without expirationTimestamp never expires (L497-501).
    const execInfo = {
      kind: "ExecCredential",
      apiVersion: rest.execProvider.apiVersion,
      spec: {
        interactive: false,
        ...(rest.execProvider.provideClusterInfo ? { cluster: { server: rest.host, "certificate-authority-data": rest.caData.toString("base64") } } : {}),
      },
    };
    const env: Record<string, string> = Object.fromEntries((rest.execProvider.env ?? []).map((e) => [e.name, e.value]));
    const plugin = await runPlugin(rest.execProvider.command, rest.execProvider.args ?? [], { ...env, KUBERNETES_EXEC_INFO: JSON.stringify(execInfo) });
    expect(plugin.stderr).toBe("");
    expect(plugin.code).toBe(0);
    const cred = JSON.parse(plugin.stdout) as { apiVersion: string; kind: string; status?: { token?: string; expirationTimestamp?: string } };
    expect(cred.apiVersion).toBe(rest.execProvider.apiVersion);
    expect(cred.kind).toBe("ExecCredential");
    expect(cred.status?.token).toBe(hub.adminToken);
    expect(cred.status?.expirationTimestamp).toBeUndefined(); // the admin token does not expire

    // 6. The request, as the authenticator's round tripper sends it (exec.go L372:
    //    `Authorization: Bearer <token>`), to Host + the API path, trusting only CAData.
    const pods = await httpsGet(`${rest.host}/api/v1/pods`, rest.caData, cred.status!.token!);
    expect(pods.status).toBe(200);
    expect((pods.body as { kind: string }).kind).toBe("PodList");

    // 7. The same rest.Config as a kubeconfig, loaded by Python's kubernetes client, whose own
    //    ExecProvider (kubernetes/config/exec_provider.py) runs the plugin and lists pods.
    const kubeconfig = file(
      "consumer.kubeconfig",
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "m1", cluster: { server: rest.host, "certificate-authority-data": rest.caData.toString("base64") } }],
        users: [{ name: "flotilla", user: { exec: rest.execProvider } }],
        contexts: [{ name: "m1", context: { cluster: "m1", user: "flotilla" } }],
        "current-context": "m1",
      }),
    );
    const script = [
      "import json, sys",
      "from kubernetes import client, config",
      "config.load_kube_config(config_file=sys.argv[1])",
      "pods = client.CoreV1Api().list_pod_for_all_namespaces()",
      "print(json.dumps({'kind': 'PodList', 'count': len(pods.items)}))",
    ].join("\n");
    const { stdout } = await run(PYTHON, ["-c", script, kubeconfig], { timeout: 60_000 });
    expect(JSON.parse(stdout.trim().split("\n").pop()!)).toMatchObject({ kind: "PodList" });
  });

  it("flotilla kubeconfig --cluster m1 --exec: kubectl reaches the member through the exec plugin", async () => {
    const { stdout } = await run(
      process.execPath,
      [FLOTILLA, "kubeconfig", "--hub-url", hub.url, "--ca-file", hub.caFile!, "--cluster", "m1", "--exec", FLOTILLA],
      { cwd: root, env: { ...process.env, FLOTILLA_ADMIN_TOKEN: hub.adminToken } },
    );
    const doc = parseYaml(stdout) as {
      clusters: { name: string; cluster: { server: string } }[];
      users: { user: { exec?: ExecConfig } }[];
      "current-context": string;
    };
    expect(doc.clusters).toMatchObject([{ name: "m1", cluster: { server: `${hub.url}/clusters/m1/proxy` } }]);
    expect(doc.users[0]!.user.exec).toMatchObject({ apiVersion: "client.authentication.k8s.io/v1", command: FLOTILLA, args: ["credentials"] });
    expect(doc["current-context"]).toBe("m1");
    const config = file("members.kubeconfig", stdout);
    // kubectl runs the plugin with the token in its environment, as a user's shell would have it.
    const r = await run("kubectl", ["--kubeconfig", config, "--cache-dir", path.join(dir, "cache"), "--context", "m1", "get", "namespaces", "-o", "name"], {
      cwd: dir,
      env: { ...process.env, FLOTILLA_ADMIN_TOKEN: hub.adminToken },
    });
    expect(r.stdout).toContain("namespace/default");
  });

  it("flotilla credentials gives a JWT's expiry and answers in the apiVersion asked for", async () => {
    const tr = await admin(hub, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 600 },
    });
    expect(tr.status).toBe(201);
    const { token, expirationTimestamp } = (tr.body as { status: { token: string; expirationTimestamp: string } }).status;
    const info = JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1beta1", kind: "ExecCredential", spec: { interactive: false } });
    const r = await runPlugin(process.execPath, [FLOTILLA, "--token", token, "credentials"], { KUBERNETES_EXEC_INFO: info });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      apiVersion: "client.authentication.k8s.io/v1beta1",
      kind: "ExecCredential",
      status: { token, expirationTimestamp },
    });
    const bad = await runPlugin(process.execPath, [FLOTILLA, "--token", token, "credentials"], {
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1alpha1", kind: "ExecCredential" }),
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("KUBERNETES_EXEC_INFO asks for apiVersion");
  });
});
