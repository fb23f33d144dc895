/**
 * The agent's kubeconfig loading and transport (agent/src/kubeconfig.ts, kube.ts) against real
 * HTTPS servers with a local CA: what client-go does with each kubeconfig field is what the agent
 * must do (CA, insecure-skip-tls-verify, tls-server-name, client certificates, token, tokenFile,
 * basic, exec plugins with a retry after 401, $KUBECONFIG merging, in-cluster), and fields it
 * does not implement are refused by name.
 */
import fs from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { KubeError } from "../../agent/src/kube.ts";
import { inClusterConfig, kubeConfigFromYaml, loadKubeConfig } from "../../agent/src/kubeconfig.ts";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import { ensureLocalTls } from "../../scripts/tls.mjs";

interface Seen {
  authorization: string | undefined;
  clientCertCN: string | undefined;
  path: string;
}

let dir: string;
let tls: { ca: string; cert: string; key: string };
let server: https.Server;
let url: string;
const seen: Seen[] = [];
/** Tokens the server accepts (anything else: 401). Undefined: accept all. */
let accepted: Set<string> | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-kubeconfig-"));
  tls = (await ensureLocalTls(dir)) as typeof tls;
  server = https.createServer({ cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key), requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    const authorization = req.headers.authorization;
    seen.push({ authorization, clientCertCN: peer && peer.subject ? String(peer.subject.CN) : undefined, path: req.url ?? "" });
    const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
    if (accepted && (!token || !accepted.has(token))) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: "Unauthorized", reason: "Unauthorized", code: 401 }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ gitVersion: "v1.31.2" }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: url, ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
    "current-context": "ctx",
  });
}

function last(): Seen {
  const s = seen.at(-1);
  if (!s) throw new Error("no request seen");
  return s;
}

describe("kubeconfig TLS", () => {
  it("trusts certificate-authority (relative to the kubeconfig's directory) and refuses an unknown CA", async () => {
    const kc = kubeConfigFromYaml(kubeconfig({ "certificate-authority": path.join("tls", "ca.crt") }, { token: "t0" }), dir);
    expect(await kc.json("GET", "/version")).toEqual({ gitVersion: "v1.31.2" });
    expect(last().authorization).toBe("Bearer t0");
    const untrusted = kubeConfigFromYaml(kubeconfig({}, { token: "t0" }), dir);
    await expect(untrusted.json("GET", "/version")).rejects.toThrow(/certificate/);
    kc.close();
    untrusted.close();
  });

  it("honours certificate-authority-data, insecure-skip-tls-verify and tls-server-name", async () => {
    const caData = fs.readFileSync(tls.ca).toString("base64");
    const a = kubeConfigFromYaml(kubeconfig({ "certificate-authority-data": caData, "tls-server-name": "localhost" }));
    expect((await a.request("GET", "/version")).status).toBe(200);
    const wrongName = kubeConfigFromYaml(kubeconfig({ "certificate-authority-data": caData, "tls-server-name": "elsewhere.example" }));
    await expect(wrongName.request("GET", "/version")).rejects.toThrow(/elsewhere\.example/);
    const insecure = kubeConfigFromYaml(kubeconfig({ "insecure-skip-tls-verify": true }));
    expect((await insecure.request("GET", "/version")).status).toBe(200);
    for (const k of [a, wrongName, insecure]) k.close();
  });

  it("presents client-certificate-data and client-key-data", async () => {
    const kc = kubeConfigFromYaml(
      kubeconfig(
        { "certificate-authority": tls.ca },
        { "client-certificate-data": fs.readFileSync(tls.cert).toString("base64"), "client-key-data": fs.readFileSync(tls.key).toString("base64") },
      ),
    );
    await kc.request("GET", "/version");
    expect(last().clientCertCN).toBe("127.0.0.1");
    expect(last().authorization).toBeUndefined();
    kc.close();
  });
});

describe("kubeconfig credentials", () => {
  it("reads tokenFile and sends basic credentials", async () => {
    fs.writeFileSync(path.join(dir, "token"), "from-file\n");
    const fromFile = kubeConfigFromYaml(kubeconfig({ "certificate-authority": tls.ca }, { tokenFile: "token" }), dir);
    await fromFile.request("GET", "/version");
    expect(last().authorization).toBe("Bearer from-file");
    const basic = kubeConfigFromYaml(kubeconfig({ "certificate-authority": tls.ca }, { username: "ann", password: "s3cret" }));
    await basic.request("GET", "/version");
    expect(last().authorization).toBe(`Basic ${Buffer.from("ann:s3cret").toString("base64")}`);
    fromFile.close();
    basic.close();
  });

  it("runs an exec plugin, caches its token, and runs it again after a 401", async () => {
    const counter = path.join(dir, "exec-count");
    fs.writeFileSync(counter, "0");
    const plugin = path.join(dir, "plugin.mjs");
    fs.writeFileSync(
      plugin,
      `import fs from "node:fs";
const n = Number(fs.readFileSync(${JSON.stringify(counter)}, "utf8")) + 1;
fs.writeFileSync(${JSON.stringify(counter)}, String(n));
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: "ExecCredential", status: { token: "exec-" + n + "-" + process.env.EXTRA } }));
`,
    );
    const kc = kubeConfigFromYaml(
      kubeconfig(
        { "certificate-authority": tls.ca },
        {
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: process.execPath,
            args: [plugin],
            env: [{ name: "EXTRA", value: "x" }],
            interactiveMode: "Never",
          },
        },
      ),
    );
    accepted = new Set(["exec-1-x"]);
    try {
      await kc.json("GET", "/version");
      await kc.json("GET", "/version");
      expect(fs.readFileSync(counter, "utf8")).toBe("1");
      expect(last().authorization).toBe("Bearer exec-1-x");
      // The server stops accepting the cached token: one 401, the plugin runs again, the retry succeeds.
      accepted = new Set(["exec-2-x"]);
      expect(await kc.json("GET", "/version")).toEqual({ gitVersion: "v1.31.2" });
      expect(fs.readFileSync(counter, "utf8")).toBe("2");
      expect(seen.slice(-2).map((s) => s.authorization)).toEqual(["Bearer exec-1-x", "Bearer exec-2-x"]);
      // Still refused after the new credential: the 401 reaches the caller as a KubeError.
      accepted = new Set();
      const err = await kc.json("GET", "/version").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubeError);
      expect((err as KubeError).code).toBe(401);
    } finally {
      accepted = undefined;
      kc.close();
    }
  });

  it("refuses auth-provider and proxy-url by name", () => {
    expect(() => kubeConfigFromYaml(kubeconfig({}, { "auth-provider": { name: "gcp", config: {} } }))).toThrow(/auth-provider gcp is not supported/);
    expect(() => kubeConfigFromYaml(kubeconfig({ "proxy-url": "http://proxy:3128" }))).toThrow(/proxy-url is not supported/);
    expect(() => kubeConfigFromYaml(kubeconfig({}, { exec: { apiVersion: "client.authentication.k8s.io/v1alpha1", command: "x" } }))).toThrow(
      /v1alpha1 is not supported/,
    );
  });
});

describe("where the configuration comes from", () => {
  it("merges a $KUBECONFIG list as client-go does: the first file to set a value wins", async () => {
    const a = path.join(dir, "a.yaml");
    const b = path.join(dir, "b.yaml");
    fs.writeFileSync(
      a,
      stringify({
        "current-context": "ctx",
        contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
        users: [{ name: "u", user: { token: "from-a" } }],
      }),
    );
    fs.writeFileSync(
      b,
      stringify({
        "current-context": "other",
        clusters: [{ name: "c", cluster: { server: url, "certificate-authority": tls.ca } }],
        users: [{ name: "u", user: { token: "from-b" } }],
      }),
    );
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = [a, path.join(dir, "missing.yaml"), b].join(path.delimiter);
    try {
      const kc = loadKubeConfig();
      await kc.request("GET", "/version");
      expect(last().authorization).toBe("Bearer from-a");
      kc.close();
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
    expect(() => loadKubeConfig(path.join(dir, "missing.yaml"))).toThrow(/cannot read kubeconfig/);
  });

  it("uses the in-cluster service account: host and port from the environment, its CA and token", async () => {
    const sa = path.join(dir, "sa");
    fs.mkdirSync(sa, { recursive: true });
    fs.copyFileSync(tls.ca, path.join(sa, "ca.crt"));
    fs.writeFileSync(path.join(sa, "token"), "sa-token");
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = "127.0.0.1";
    process.env.KUBERNETES_SERVICE_PORT = String((server.address() as AddressInfo).port);
    try {
      const kc = inClusterConfig(sa);
      expect(await kc.json("GET", "/version")).toEqual({ gitVersion: "v1.31.2" });
      expect(last().authorization).toBe("Bearer sa-token");
      kc.close();
    } finally {
      for (const [k, v] of [
        ["KUBERNETES_SERVICE_HOST", saved.host],
        ["KUBERNETES_SERVICE_PORT", saved.port],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(() => inClusterConfig(sa)).toThrow(/not in a pod/);
  });
});

describe("watch", () => {
  it("streams line-delimited events until aborted, and a refused watch is a KubeError", async () => {
    const sim = await startSimulatedCluster({});
    const kc = kubeConfigFromYaml(sim.kubeconfigYaml);
    try {
      const events: string[] = [];
      const ac = new AbortController();
      const done = kc.watch("/api/v1/namespaces/default/configmaps", { query: { watch: "true" }, signal: ac.signal }, (ev) => {
        const obj = ev.object as { metadata?: { name?: string } };
        events.push(`${String(ev.type)} ${obj.metadata?.name}`);
        if (events.length === 2) ac.abort();
      });
      await kc.json("POST", "/api/v1/namespaces/default/configmaps", {
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { k: "1" } },
      });
      await kc.json("PATCH", "/api/v1/namespaces/default/configmaps/a", { body: { data: { k: "2" } }, contentType: "application/merge-patch+json" });
      await done;
      expect(events).toEqual(["ADDED a", "MODIFIED a"]);
      const err = await kc.watch("/apis/example.com/v1/widgets", { query: { watch: "true" } }, () => undefined).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubeError);
      expect((err as KubeError).code).toBe(404);
    } finally {
      kc.close();
      await sim.close();
    }
  });
});
