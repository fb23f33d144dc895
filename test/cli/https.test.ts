/**
 * `flotilla` against an HTTPS hub (`FLOTILLA_HTTPS=1 npm start`, certificate signed by a local
 * CA): the CA from --ca-file or the local state folder, the TLS failure hint, http:// against
 * it, a kubeconfig that embeds the CA, and the hub's log telling once, calmly, of clients that do
 * not trust the CA.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { request } from "node:https";
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { startHub, type Hub } from "../../scripts/hub-process.ts";
import { waitFor } from "../wait.ts";
import { flotilla } from "./support.ts";

/** A GET of `url` over HTTPS, trusting `ca` (none: Node's own roots): resolves the status, or the error's code. */
function get(url: string, ca?: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(url, { ca }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end();
  });
}

describe("flotilla against an HTTPS hub", () => {
  let hub: Hub;
  let caFile: string;

  beforeAll(async () => {
    hub = await startHub({ https: true });
    caFile = hub.caFile!;
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it("trusts the hub's CA given with --ca-file or FLOTILLA_CA_FILE", async () => {
    const flag = await flotilla(["get", "clusters", "--ca-file", caFile], { hub });
    expect(flag.code, flag.stderr).toBe(0);
    expect(flag.stderr).toBe("No clusters found.\n");
    const env = await flotilla(["clusterset", "create", "tls-set"], { hub, env: { FLOTILLA_CA_FILE: caFile } });
    expect(env.code, env.stderr).toBe(0);
    expect(env.stdout).toContain("clusterset tls-set created");
  });

  it("finds the CA in the local hub's state folder (FLOTILLA_STATE_DIR) by itself", async () => {
    const r = await flotilla(["token", "create", "-o", "json"], { hub, env: { FLOTILLA_STATE_DIR: hub.stateDir } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).status.token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  });

  it("token create prints an agent command that trusts the same CA", async () => {
    const r = await flotilla(["token", "create", "--ca-file", caFile], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`NODE_EXTRA_CA_CERTS=${caFile} npx flotilla-agent --hub-url ${hub.url} `);
  });

  it("without the CA, fails and says how to trust it; never skips verification", async () => {
    const r = await flotilla(["get", "clusters"], { hub });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Error: cannot reach the hub at https:\/\/127\.0\.0\.1:\d+: .*(certificate|CERT)/);
    expect(r.stderr).toContain("Hint: trust the hub's CA with --ca-file / FLOTILLA_CA_FILE");
  });

  it("http:// against the HTTPS hub fails with a hint to use https", async () => {
    const r = await flotilla(["get", "clusters"], { hub, env: { FLOTILLA_HUB_URL: hub.url.replace("https:", "http:") } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error: /);
    expect(r.stderr).toMatch(/Hint: .*https/);
  });

  it("kubeconfig embeds the CA, so the certificate verifies with it alone", async () => {
    const r = await flotilla(["kubeconfig", "--ca-file", caFile], { hub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    const kc = parseYaml(r.stdout);
    expect(kc.clusters[0].cluster.server).toBe(hub.url);
    expect(Buffer.from(kc.clusters[0].cluster["certificate-authority-data"], "base64").toString()).toBe(readFileSync(caFile, "utf8"));
    expect(kc.users[0].user.token).toBe(hub.adminToken);
    expect(r.stdout).not.toContain("insecure-skip-tls-verify");
  });
  it("kubeconfig --serviceaccount writes a token the hub issues for it, which kubectl then uses", async () => {
    const r = await flotilla(["kubeconfig", "--ca-file", caFile, "--serviceaccount", "default/default", "--duration", "10m", "--context-name", "ci"], { hub });
    expect(r.code, r.stderr).toBe(0);
    const kc = parseYaml(r.stdout);
    expect(kc.users[0].name).toBe("ci-default-default");
    expect(kc.users[0].user.token).not.toBe(hub.adminToken);
    expect(kc.contexts[0]).toEqual({ name: "ci", context: { cluster: "ci", user: "ci-default-default" } });
    const file = path.join(mkdtempSync(path.join(tmpdir(), "flotilla-kc-")), "ci.kubeconfig");
    writeFileSync(file, r.stdout);
    const { stdout } = await promisify(execFile)("kubectl", ["--kubeconfig", file, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    expect(stdout).toBe("system:serviceaccount:default:default");
    const missing = await flotilla(["kubeconfig", "--ca-file", caFile, "--serviceaccount", "default/nobody"], { hub });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('serviceaccounts "nobody" not found');
  });

  it("logs clients that do not trust the local CA once, calmly, with the CA file to trust", async () => {
    // A browser that does not trust the CA, visiting twice (Chromium refuses in the handshake,
    // with a TLS alert, as curl does; Node's clients check the certificate after it).
    const browser = await chromium.launch({
      executablePath: process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    });
    try {
      const page = await browser.newPage();
      for (let i = 0; i < 2; i++) await expect(page.goto(`${hub.url}/ui`)).rejects.toThrow(/ERR_CERT_AUTHORITY_INVALID/);
    } finally {
      await browser.close();
    }
    // A request that verifies, logged after the refusals: the log has caught up with them.
    const marker = `/tls-barrier/${randomUUID()}`;
    expect(await get(`${hub.url}${marker}`, readFileSync(caFile, "utf8"))).toBe(404);
    await waitFor("the marker request in the hub's log", async () => hub.output().includes(marker));
    const told = hub
      .output()
      .split("\n")
      .filter((l) => l.includes("refused the hub's certificate"));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`Trust ${caFile}`);
    expect(told[0]).not.toContain("ERROR");
    // (The http:// request above fails its handshake otherwise: that error stays as it was.)
    expect(hub.output()).not.toContain("TLS handshake failed: received fatal alert");
  });
});
