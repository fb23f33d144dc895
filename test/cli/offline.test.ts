/**
 * `flotilla` without a Flotilla hub: usage errors, help, where the hub URL and token come from
 * (flags, environment, config file, via `kubeconfig`, which needs no hub), a hub that is not
 * running, a server that is not the hub, and `get works` against a stand-in server whose works
 * carry conditions (the real hub's are covered in test/cli/placement.test.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { freePort } from "../../scripts/hub-process.ts";
import { flotilla, scratch } from "./support.ts";

interface Kubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data"?: string } }[];
  users: { name: string; user: { token: string } }[];
  contexts: { name: string }[];
  "current-context": string;
}

const kubeconfigOf = (stdout: string): Kubeconfig => parseYaml(stdout) as Kubeconfig;

describe("flotilla without a hub", () => {
  describe("usage errors exit 2", () => {
    it("no command prints the help on stderr", async () => {
      const r = await flotilla([]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("Usage: flotilla [options] [command]");
    });

    it("an unknown command or option", async () => {
      const cmd = await flotilla(["frobnicate"]);
      expect(cmd.code).toBe(2);
      expect(cmd.stderr).toContain("error: unknown command 'frobnicate'");
      const opt = await flotilla(["get", "clusters", "--bogus"]);
      expect(opt.code).toBe(2);
      expect(opt.stderr).toContain("error: unknown option '--bogus'");
      expect(opt.stderr).toContain("(add --help for usage)");
    });

    it("no admin token anywhere, with where to find it", async () => {
      const r = await flotilla(["get", "clusters"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("error: no admin token: pass --token, set FLOTILLA_ADMIN_TOKEN, or put `token:` in the config file");
      expect(r.stderr).toContain("Hint: a local hub (`npm start`) keeps the admin token in ");
    });

    it("a hub URL that is not http(s)", async () => {
      const r = await flotilla(["--hub-url", "ftp://example.com", "--token", "t", "get", "clusters"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`error: hub URL "ftp://example.com" (from --hub-url) must be http or https`);
    });

    it("a config file named by FLOTILLA_CONFIG that does not exist", async () => {
      const r = await flotilla(["kubeconfig"], { env: { FLOTILLA_CONFIG: path.join(scratch, "missing.yaml") } });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("does not exist");
    });
  });

  it("every command has help (exit 0)", async () => {
    const commands = [
      ["token", "create"],
      ["token", "list"],
      ["token", "delete"],
      ["accept"],
      ["deny"],
      ["get", "clusters"],
      ["get", "placements"],
      ["get", "decisions"],
      ["get", "works"],
      ["taint", "add"],
      ["taint", "remove"],
      ["clusterset", "create"],
      ["clusterset", "set"],
      ["clusterset", "bind"],
      ["kubeconfig"],
      ["placement", "status"],
    ];
    for (const c of commands) {
      const r = await flotilla([...c, "--help"]);
      expect(r.code, c.join(" ")).toBe(0);
      expect(r.stdout, c.join(" ")).toContain(`Usage: flotilla ${c.join(" ")}`);
    }
    const top = await flotilla(["--help"]);
    expect(top.stdout).toContain("FLOTILLA_ADMIN_TOKEN");
  });

  describe("configuration: flags over environment over config file", () => {
    const cfgFile = path.join(scratch, "cfg", "config.yaml");

    beforeAll(() => {
      mkdirSync(path.dirname(cfgFile), { recursive: true });
      writeFileSync(cfgFile, "hubUrl: http://file.example:1/\ntoken: from-file\n");
    });

    it("kubeconfig for an OIDC user runs kubectl's oidc-login plugin; for a given token, that token", async () => {
      const r = await flotilla(
        ["kubeconfig", "--oidc-issuer-url", "https://dex.example.com", "--oidc-client-id", "flotilla", "--oidc-extra-scope", "groups", "email"],
        { env: { FLOTILLA_CONFIG: cfgFile } },
      );
      expect(r.code, r.stderr).toBe(0);
      const kc = kubeconfigOf(r.stdout) as unknown as {
        users: { name: string; user: { exec: { apiVersion: string; command: string; args: string[]; interactiveMode: string } } }[];
      };
      expect(kc.users[0]!.name).toBe("flotilla-oidc");
      expect(kc.users[0]!.user.exec).toMatchObject({
        apiVersion: "client.authentication.k8s.io/v1",
        command: "kubectl",
        args: [
          "oidc-login",
          "get-token",
          "--oidc-issuer-url=https://dex.example.com",
          "--oidc-client-id=flotilla",
          "--oidc-extra-scope=groups",
          "--oidc-extra-scope=email",
        ],
        interactiveMode: "IfAvailable",
      });
      expect(r.stdout).not.toContain("token:");
      const t = await flotilla(["kubeconfig", "--user-token", "abc.def"], { env: { FLOTILLA_CONFIG: cfgFile } });
      expect(kubeconfigOf(t.stdout).users[0]!.user.token).toBe("abc.def");
      const both = await flotilla(["kubeconfig", "--user-token", "x", "--serviceaccount", "a/b"], { env: { FLOTILLA_CONFIG: cfgFile } });
      expect(both.code).toBe(2);
      expect(both.stderr).toContain("use one of");
      const half = await flotilla(["kubeconfig", "--oidc-issuer-url", "https://dex.example.com"], { env: { FLOTILLA_CONFIG: cfgFile } });
      expect(half.code).toBe(2);
      expect(half.stderr).toContain("needs both --oidc-issuer-url and --oidc-client-id");
    });

    it("kubeconfig --cluster writes a context per member cluster on the hub's proxy prefix", async () => {
      const r = await flotilla(["--hub-url", "http://hub.test:8787", "--token", "t0k", "kubeconfig", "--cluster", "m1", "m2,m3"]);
      expect(r.code, r.stderr).toBe(0);
      const kc = parseYaml(r.stdout) as {
        clusters: { name: string; cluster: { server: string } }[];
        users: unknown[];
        contexts: { name: string; context: { cluster: string; user: string } }[];
        "current-context": string;
      };
      expect(kc.clusters.map((c) => [c.name, c.cluster.server])).toEqual([
        ["m1", "http://hub.test:8787/clusters/m1/proxy"],
        ["m2", "http://hub.test:8787/clusters/m2/proxy"],
        ["m3", "http://hub.test:8787/clusters/m3/proxy"],
      ]);
      expect(kc.contexts.map((c) => c.context)).toEqual(["m1", "m2", "m3"].map((c) => ({ cluster: c, user: "flotilla-admin" })));
      expect(kc["current-context"]).toBe("m1");
      expect(kc.users).toEqual([{ name: "flotilla-admin", user: { token: "t0k" } }]);
      const exec = await flotilla(["--token", "t0k", "kubeconfig", "--cluster", "m1", "--exec", "/usr/local/bin/flotilla"]);
      expect(exec.code, exec.stderr).toBe(0);
      expect(exec.stdout).not.toContain("t0k");
      expect((kubeconfigOf(exec.stdout).users[0]!.user as unknown as { exec: unknown }).exec).toEqual({
        apiVersion: "client.authentication.k8s.io/v1",
        command: "/usr/local/bin/flotilla",
        args: ["credentials"],
        interactiveMode: "Never",
        provideClusterInfo: true,
      });
      const bad = await flotilla(["--token", "t", "kubeconfig", "--cluster", "../m1"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--cluster "../m1" is not a cluster name');
      const lone = await flotilla(["--token", "t", "kubeconfig", "--exec"]);
      expect(lone.code).toBe(2);
      expect(lone.stderr).toContain("--exec goes with --cluster");
    });

    it("credentials prints a v1 ExecCredential with the CLI's token, or says what is wrong", async () => {
      const r = await flotilla(["--token", "opaque", "credentials"]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token: "opaque" } });
      const jwt = ["e30", Buffer.from(JSON.stringify({ exp: 1893456000 })).toString("base64url"), "sig"].join(".");
      const info = JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", spec: { interactive: false } });
      const j = await flotilla(["--token", jwt, "credentials"], { env: { KUBERNETES_EXEC_INFO: info } });
      expect(JSON.parse(j.stdout)).toMatchObject({ status: { token: jwt, expirationTimestamp: "2030-01-01T00:00:00Z" } });
      const notJson = await flotilla(["--token", "t", "credentials"], { env: { KUBERNETES_EXEC_INFO: "{" } });
      expect(notJson.code).toBe(2);
      expect(notJson.stderr).toContain("KUBERNETES_EXEC_INFO is not JSON");
      const none = await flotilla(["credentials"]);
      expect(none.code).toBe(2);
      expect(none.stderr).toContain("no admin token");
    });

    it("kubeconfig prints the config file's hub and token; env and flags win in turn", async () => {
      const file = await flotilla(["kubeconfig"], { env: { FLOTILLA_CONFIG: cfgFile } });
      expect(file.code, file.stderr).toBe(0);
      let kc = kubeconfigOf(file.stdout);
      expect(kc.clusters[0]!.cluster.server).toBe("http://file.example:1");
      expect(kc.users[0]!.user.token).toBe("from-file");
      expect(kc["current-context"]).toBe("flotilla");

      const env = await flotilla(["kubeconfig"], {
        env: { FLOTILLA_CONFIG: cfgFile, FLOTILLA_HUB_URL: "http://env.example:2", FLOTILLA_ADMIN_TOKEN: "from-env" },
      });
      kc = kubeconfigOf(env.stdout);
      expect(kc.clusters[0]!.cluster.server).toBe("http://env.example:2");
      expect(kc.users[0]!.user.token).toBe("from-env");

      const flags = await flotilla(
        ["kubeconfig", "--hub-url", "http://flag.example:3", "--token", "from-flag", "--config", cfgFile, "--context-name", "hub1"],
        {
          env: { FLOTILLA_HUB_URL: "http://env.example:2", FLOTILLA_ADMIN_TOKEN: "from-env" },
        },
      );
      kc = kubeconfigOf(flags.stdout);
      expect(kc.clusters[0]!.cluster.server).toBe("http://flag.example:3");
      expect(kc.users[0]).toEqual({ name: "hub1-admin", user: { token: "from-flag" } });
      expect(kc.contexts[0]!.name).toBe("hub1");
    });

    it("the default config file is ~/.config/flotilla/config.yaml ($XDG_CONFIG_HOME)", async () => {
      const home = path.join(scratch, "xdg");
      mkdirSync(path.join(home, "flotilla"), { recursive: true });
      writeFileSync(path.join(home, "flotilla", "config.yaml"), "token: xdg-token\n");
      const r = await flotilla(["kubeconfig"], { env: { XDG_CONFIG_HOME: home } });
      const kc = kubeconfigOf(r.stdout);
      expect(kc.users[0]!.user.token).toBe("xdg-token");
      expect(kc.clusters[0]!.cluster.server).toBe("http://127.0.0.1:8787");
    });

    it("a config file that is not a mapping fails with a hint", async () => {
      const bad = path.join(scratch, "cfg", "bad.yaml");
      writeFileSync(bad, "- a\n- b\n");
      const r = await flotilla(["kubeconfig"], { env: { FLOTILLA_CONFIG: bad } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Error: config file ${bad} is not a YAML mapping`);
      expect(r.stderr).toContain("Hint: fix");
      const typed = path.join(scratch, "cfg", "typed.yaml");
      writeFileSync(typed, "token: 12\n");
      const t = await flotilla(["kubeconfig"], { env: { FLOTILLA_CONFIG: typed } });
      expect(t.code).toBe(1);
      expect(t.stderr).toContain("token must be a string");
    });
  });

  describe("kubeconfig", () => {
    it("warns on stderr that kubectl sends tokens only over HTTPS for an http hub", async () => {
      const r = await flotilla(["kubeconfig", "--token", "t"]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain("insecure-skip-tls-verify");
      expect(r.stderr).toContain("kubectl sends bearer tokens only over HTTPS");
      expect(r.stderr).toContain("FLOTILLA_HTTPS=1 npm start");
    });

    it("embeds the CA of an https hub, from --ca-file or from the local state folder", async () => {
      const pem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
      const ca = path.join(scratch, "ca.pem");
      writeFileSync(ca, pem);
      const r = await flotilla(["kubeconfig", "--hub-url", "https://127.0.0.1:8443", "--token", "t", "--ca-file", ca]);
      expect(r.code, r.stderr).toBe(0);
      const cluster = kubeconfigOf(r.stdout).clusters[0]!.cluster;
      expect(Buffer.from(cluster["certificate-authority-data"]!, "base64").toString()).toBe(pem);
      expect(r.stderr).toBe("");

      const state = path.join(scratch, "state-with-ca");
      mkdirSync(path.join(state, "tls"), { recursive: true });
      writeFileSync(path.join(state, "tls", "ca.crt"), pem);
      const local = await flotilla(["kubeconfig", "--hub-url", "https://127.0.0.1:8443", "--token", "t"], { env: { FLOTILLA_STATE_DIR: state } });
      expect(Buffer.from(kubeconfigOf(local.stdout).clusters[0]!.cluster["certificate-authority-data"]!, "base64").toString()).toBe(pem);
    });

    it("fails for a CA file that cannot be read, and without a token", async () => {
      const r = await flotilla(["kubeconfig", "--hub-url", "https://127.0.0.1:8443", "--token", "t", "--ca-file", path.join(scratch, "nope.pem")]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("Error: cannot read the CA file");
      expect(r.stderr).toContain("ENOENT");
      expect(r.stderr).toContain("Hint: check --ca-file / FLOTILLA_CA_FILE");
      const noToken = await flotilla(["kubeconfig"]);
      expect(noToken.code).toBe(2);
      expect(noToken.stderr).toContain("no admin token");
    });
  });

  it("a hub that is not running: what to do next", async () => {
    const port = await freePort();
    const r = await flotilla(["get", "clusters"], { env: { FLOTILLA_HUB_URL: `http://127.0.0.1:${port}`, FLOTILLA_ADMIN_TOKEN: "t" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Error: cannot reach the hub at http://127.0.0.1:${port}: connect ECONNREFUSED`);
    expect(r.stderr).toContain("Hint: is the hub running? start it with `npm start`");
    expect(r.stderr).toContain("(from FLOTILLA_HUB_URL)");
  });

  describe("against a fake server", () => {
    let server: Server;
    let url: string;
    const seen: string[] = [];

    beforeAll(async () => {
      server = createServer((req, res) => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
        if (req.url?.startsWith("/apis/work.open-cluster-management.io/v1/")) {
          const work = (ns: string, name: string, applied: string) => ({
            apiVersion: "work.open-cluster-management.io/v1",
            kind: "ManifestWork",
            metadata: { name, namespace: ns, creationTimestamp: new Date(Date.now() - 3_600_000).toISOString() },
            spec: { workload: { manifests: [{ kind: "ConfigMap" }, { kind: "Deployment" }] } },
            status: { conditions: [{ type: "Applied", status: applied, lastTransitionTime: new Date().toISOString() }] },
          });
          const items = [work("c1", "app", "True"), work("c2", "db", "False")].filter(
            (w) => !req.url!.includes("/namespaces/") || req.url!.includes(`/namespaces/${w.metadata.namespace}/`),
          );
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ apiVersion: "work.open-cluster-management.io/v1", kind: "ManifestWorkList", metadata: {}, items }));
          return;
        }
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html>not a hub</html>");
      });
      const port = await freePort();
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${port}`;
    });

    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("get works prints ManifestWorks per cluster namespace, or across clusters", async () => {
      const env = { FLOTILLA_HUB_URL: url, FLOTILLA_ADMIN_TOKEN: "fake-token" };
      const one = await flotilla(["get", "works", "-n", "c1"], { env });
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout).toMatch(/^NAME\s+MANIFESTS\s+APPLIED\s+AVAILABLE\s+AGE\napp\s+2\s+True\s+-\s+60m\n$/);
      expect(seen).toContain("GET /apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks Bearer fake-token");
      const all = await flotilla(["get", "works"], { env });
      expect(all.stdout.split("\n")[0]).toMatch(/^CLUSTER\s+NAME\s+MANIFESTS/);
      expect(all.stdout).toMatch(/c2\s+db\s+2\s+False/);
      expect(seen).toContain("GET /apis/work.open-cluster-management.io/v1/manifestworks Bearer fake-token");
    });

    it("a server that is not the hub: says so and how to point at the hub", async () => {
      const r = await flotilla(["get", "clusters"], { env: { FLOTILLA_HUB_URL: url, FLOTILLA_ADMIN_TOKEN: "t" } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("with HTTP 200 and no Kubernetes response");
      expect(r.stderr).toContain(`Hint: is ${url} (from FLOTILLA_HUB_URL) the Flotilla hub?`);
    });
  });
});
