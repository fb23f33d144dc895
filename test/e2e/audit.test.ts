/**
 * The audit log end to end, on a hub under `wrangler dev`: real kubectl writes a Secret and reads
 * `kubectl get auditevents`; a bad token gets 401, an agent's credential on the admin API gets
 * 403; `flotilla audit` lists and follows the log. Then the whole audit table (the hub's D1
 * files, read once the hub stopped) and the hub's whole log are searched: no token and no secret
 * value anywhere, and the three events with their fields.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createBootstrapToken, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { waitFor, writeAdminKubeconfig } from "./support.ts";
import { cleanEnv } from "../cli/support.ts";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dir = mkdtempSync(path.join(tmpdir(), "flotilla-audit-"));
const AUDIT = "/apis/flotilla.dev/v1alpha1/auditevents";
const SECRET_VALUE = "correct-horse-battery-staple-41f9";
const BAD_TOKEN = "bad-token-0a6e2c55d1";

let hub: Hub;
let kubeconfig: string;

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: dir });
  return stdout;
}

/** The CLI's environment: this hub, its admin token and CA. */
function cliEnv(): NodeJS.ProcessEnv {
  return cleanEnv({ FLOTILLA_HUB_URL: hub.url, FLOTILLA_ADMIN_TOKEN: hub.adminToken, FLOTILLA_CA_FILE: hub.caFile! });
}

async function flotilla(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [path.join(root, "agent/bin/flotilla.js"), ...args], { cwd: root, env: cliEnv() });
  return stdout;
}

/** Registers a cluster's agent over HTTP and returns a JWT it signs (an agent credential). */
async function agentCredential(cluster: string): Promise<string> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const now = Math.floor(Date.now() / 1000);
  const proof = await new SignJWT({ cid: `id-${cluster}` })
    .setProtectedHeader({ alg: "ES256", kid })
    .setIssuer(cluster)
    .setSubject(cluster)
    .setAudience("flotilla-registration")
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .setJti(crypto.randomUUID())
    .sign(privateKey);
  const token = await createBootstrapToken(hub, { autoApprove: true });
  const r = await hubFetch(
    hub,
    "POST",
    "/agent/v1/register",
    { authorization: `Bearer ${token}`, "content-type": "application/json" },
    JSON.stringify({ clusterName: cluster, clusterId: `id-${cluster}`, publicKey: publicJwk, proof }),
  );
  expect(r.status).toBe(201);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid })
    .setIssuer(cluster)
    .setSubject(cluster)
    .setAudience("flotilla")
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .setJti(crypto.randomUUID())
    .sign(privateKey);
}

beforeAll(async () => {
  // HTTPS with the local CA: kubectl sends a bearer token over TLS only.
  hub = await startHub({ https: true });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  await createNamespaces(hub, "audit-e2e");
});

afterAll(async () => {
  await hub?.stop();
});

interface Event {
  auditID: string;
  verb: string;
  user: { username?: string; groups?: string[] };
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus: { code: number; reason?: string; message?: string };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

describe("the audit log through wrangler dev, kubectl and the CLI", () => {
  it("records an allowed write, a denied request and a bad token; kubectl and flotilla audit read them", async () => {
    expect(await kubectl("create", "secret", "generic", "app-db", "-n", "audit-e2e", `--from-literal=password=${SECRET_VALUE}`)).toContain(
      "secret/app-db created",
    );
    expect((await hubFetch(hub, "GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", { authorization: `Bearer ${BAD_TOKEN}` })).status).toBe(
      401,
    );
    const agent = await agentCredential("audit-agent");
    const placement = { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name: "sneaky" }, spec: {} };
    const denied = await hubFetch(
      hub,
      "POST",
      "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/audit-e2e/placements",
      { authorization: `Bearer ${agent}`, "content-type": "application/json" },
      JSON.stringify(placement),
    );
    expect(denied.status, denied.text).toBe(403);
    // A read with the admin token: answered, not recorded.
    expect(await kubectl("get", "secrets", "-n", "audit-e2e")).toContain("app-db");

    // kubectl get auditevents: the server's Table, filtered by field selectors.
    const table = await waitFor("the create in kubectl get auditevents", async () => {
      const out = await kubectl("get", "auditevents", "--field-selector", "objectRef.namespace=audit-e2e,verb=create");
      return /secrets\s+audit-e2e\/app-db\s+201/.test(out) ? out : undefined;
    });
    expect(table).toMatch(/^TIME\s+USER\s+VERB\s+RESOURCE\s+OBJECT\s+CODE\n/);
    expect(table).toMatch(/\n\S+Z\s+flotilla:admin\s+create\s+secrets\s+audit-e2e\/app-db\s+201\n/);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const all = JSON.parse(await kubectl("get", "auditevents", "-o", "json", "--field-selector", `requestReceivedTimestamp>=${since}`)) as { items: Event[] };
    const write = all.items.find((e) => e.verb === "create" && e.objectRef?.name === "app-db")!;
    expect(write).toMatchObject({
      user: { username: "flotilla:admin", groups: ["system:masters", "system:authenticated"] },
      sourceIPs: ["127.0.0.1"],
      objectRef: { resource: "secrets", namespace: "audit-e2e", name: "app-db" },
      responseStatus: { code: 201 },
    });
    expect(write.userAgent).toMatch(/^kubectl/);
    const unauthenticated = await waitFor(
      "the 401's record",
      async () =>
        (await admin(hub, "GET", `${AUDIT}?fieldSelector=objectRef.resource%3Dmanagedclusters`)).body.items.find(
          (e: Event) => e.responseStatus.code === 401,
        ) as Event | undefined,
    );
    expect(unauthenticated).toMatchObject({
      verb: "list",
      user: {},
      responseStatus: { reason: "Unauthorized", message: "Authentication failed, attempted: bearer" },
    });
    const forbidden = await waitFor(
      "the 403's record",
      async () =>
        (await admin(hub, "GET", `${AUDIT}?fieldSelector=objectRef.resource%3Dplacements`)).body.items.find((e: Event) => e.responseStatus.code === 403) as
          Event | undefined,
    );
    expect(forbidden).toMatchObject({ verb: "create", objectRef: { namespace: "audit-e2e", resource: "placements" }, responseStatus: { reason: "Forbidden" } });
    expect((await admin(hub, "GET", `${AUDIT}?fieldSelector=verb%3Dlist,objectRef.resource%3Dsecrets`)).body.items).toEqual([]);
    // Discovery: kubectl knows the resource and its verbs.
    expect(await kubectl("api-resources", "--api-group", "flotilla.dev", "-o", "wide")).toMatch(
      /auditevents\s+flotilla\.dev\/v1alpha1\s+false\s+AuditEvent\s+list,watch\s/,
    );
    expect(await kubectl("explain", "auditevents.objectRef")).toMatch(/subresource/);
    expect(await kubectl("delete", "auditevents", "--all").catch((e: { stderr?: string }) => e.stderr ?? "")).toMatch(
      /MethodNotAllowed|not allow|does not allow|not supported/i,
    );

    // flotilla audit: the table, filtered; --watch follows the log.
    const listed = await flotilla("audit", "--user", "flotilla:admin", "--verb", "create", "--resource", "secrets", "-n", "audit-e2e", "--since", "1h");
    expect(listed).toMatch(/^TIME\s+USER\s+VERB\s+RESOURCE\s+OBJECT\s+CODE\n\S+Z\s+flotilla:admin\s+create\s+secrets\s+audit-e2e\/app-db\s+201\n$/);
    const watcher = spawn(process.execPath, [path.join(root, "agent/bin/flotilla.js"), "audit", "-n", "audit-e2e", "--watch"], {
      cwd: root,
      env: cliEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let watched = "";
    watcher.stdout.on("data", (d: Buffer) => (watched += d.toString()));
    try {
      await waitFor("the watch's first table", () => Promise.resolve(watched.includes("audit-e2e/app-db")));
      expect(await kubectl("delete", "secret", "app-db", "-n", "audit-e2e")).toContain("deleted");
      await waitFor("the delete in flotilla audit --watch", () => Promise.resolve(/flotilla:admin\s+delete\s+secrets\s+audit-e2e\/app-db\s+200/.test(watched)));
    } finally {
      watcher.kill("SIGTERM");
    }

    // The whole audit table and the hub's whole log: no token, no secret value.
    const agentToken = agent;
    await hub.stop();
    const d1 = path.join(hub.stateDir, "v3/d1/miniflare-D1DatabaseObject");
    const rows: string[] = [];
    for (const f of readdirSync(d1).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite")) {
      const db = new DatabaseSync(path.join(d1, f), { readOnly: true });
      const has = db.prepare("SELECT name FROM sqlite_master WHERE name = 'audit_events'").get();
      if (has) for (const r of db.prepare("SELECT * FROM audit_events").all()) rows.push(JSON.stringify(r));
      db.close();
    }
    const table2 = rows.join("\n");
    const log = readFileSync(hub.logFile, "utf8") + hub.output();
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const needle of [hub.adminToken, BAD_TOKEN, agentToken, SECRET_VALUE, Buffer.from(SECRET_VALUE).toString("base64")]) {
      expect(table2.includes(needle), `audit table holds ${needle.slice(0, 6)}...`).toBe(false);
      expect(log.includes(needle), `hub log holds ${needle.slice(0, 6)}...`).toBe(false);
    }
    expect(table2).toContain('\\"code\\":401');
    expect(table2).toContain('\\"code\\":403');
    expect(table2).toMatch(/flotilla:admin.*create.*secrets.*audit-e2e/);
  });
});
