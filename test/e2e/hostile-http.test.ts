/**
 * End to end, over real HTTP against `wrangler dev`: what only a real connection shows of the
 * hostile-input rules (test/worker/hostile.test.ts has the rest).
 * - A 50 MB chunked body (no Content-Length) on every write path gets a 413 Status, not a reset
 *   connection: the Worker drains what it refuses (src/api/request.ts, MAX_DRAIN_BYTES). On the
 *   agent paths that is once the agent is authenticated; a stranger gets 401 unread.
 * - A request target over 8 KiB gets a 414 Status from the Worker; from 65,535 bytes workerd
 *   itself answers 414 in plain text before the Worker sees the request.
 * - A malformed percent-escape reaches the Worker and gets a 400 Status.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken, signProof, type AgentKeyPair } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, createNamespaces, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { MC } from "./support.ts";

const FIFTY_MB = 50 * 1024 * 1024;

/** Sends `total` bytes of JSON whitespace as a chunked body (no Content-Length) and returns the answer. @throws Error when the connection fails before an answer */
function sendChunked(
  hub: Hub,
  method: string,
  path: string,
  headers: Record<string, string>,
  total = FIFTY_MB,
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(`${hub.url}${path}`, { method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => {
        answered = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      });
    });
    req.on("error", (e) => {
      if (!answered) reject(e);
    });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

describe("hostile input over real HTTP (wrangler dev)", () => {
  let hub: Hub;
  let bootstrap: string;
  let hookPath: string;
  let agentKey: AgentKeyPair;
  const auth = () => ({ authorization: `Bearer ${hub.adminToken}` });
  /** A fresh JWT of cluster c1's agent (each is good once). */
  const agentAuth = async () => ({ authorization: `Bearer ${await signAgentToken("c1", agentKey)}` });

  beforeAll(async () => {
    hub = await startHub();
    bootstrap = await createBootstrapToken(hub);
    await createNamespaces(hub, "apps");
    const secret = await admin(hub, "POST", "/api/v1/namespaces/apps/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "hook" },
      stringData: { token: "s3cret" },
    });
    expect(secret.status).toBe(201);
    const placement = await admin(hub, "POST", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/apps/placements", {
      apiVersion: "cluster.open-cluster-management.io/v1beta1",
      kind: "Placement",
      metadata: { name: "web" },
      spec: {},
    });
    expect(placement.status).toBe(201);
    const receiver = await admin(hub, "POST", "/apis/flotilla.dev/v1alpha1/namespaces/apps/webhookreceivers", {
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "WebhookReceiver",
      metadata: { name: "hook" },
      spec: {
        type: "generic",
        secretRef: { name: "hook" },
        target: { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: "web" },
        action: { type: "Reevaluate" },
      },
    });
    expect(receiver.status).toBe(201);
    hookPath = receiver.body.status.webhookPath;
    // Cluster c1 and its agent's key: the agent paths read a body only once it is authenticated.
    agentKey = await generateAgentKeyPair();
    const registered = await fetch(`${hub.url}/agent/v1/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${bootstrap}`, "content-type": "application/json" },
      body: JSON.stringify({ clusterName: "c1", clusterId: "id-c1", publicKey: agentKey.publicJwk, proof: await signProof("c1", agentKey, "id-c1") }),
    });
    expect(registered.status).toBe(201);
    expect((await admin(hub, "PATCH", `${MC}/c1`, { spec: { hubAcceptsClient: true } }, "application/merge-patch+json")).status).toBe(200);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  const json = { "content-type": "application/json" };
  const writePaths: [string, string, string, () => Record<string, string> | Promise<Record<string, string>>][] = [
    ["create on /apis", "POST", MC, () => ({ ...auth(), ...json })],
    ["update on /apis", "PUT", `${MC}/c1`, () => ({ ...auth(), ...json })],
    ["merge patch on /apis", "PATCH", `${MC}/c1`, () => ({ ...auth(), "content-type": "application/merge-patch+json" })],
    ["apply on /apis", "PATCH", `${MC}/c1?fieldManager=e2e`, () => ({ ...auth(), "content-type": "application/apply-patch+yaml" })],
    ["create on /api", "POST", "/api/v1/namespaces/apps/secrets", () => ({ ...auth(), ...json })],
    ["register on /agent/v1", "POST", "/agent/v1/register", () => ({ authorization: `Bearer ${bootstrap}`, ...json })],
    ["heartbeat on /agent/v1", "POST", "/agent/v1/clusters/c1/heartbeat", async () => ({ ...(await agentAuth()), ...json })],
    ["work status on /agent/v1", "PUT", "/agent/v1/clusters/c1/works/w1/status", async () => ({ ...(await agentAuth()), ...json })],
    ["a delivery on /hooks", "POST", "", () => json],
  ];

  for (const [what, method, path, headers] of writePaths) {
    it(`answers a 50 MB chunked ${what} with a 413 Status`, async () => {
      const r = await sendChunked(hub, method, path || hookPath, await headers());
      expect(r.status, r.text.slice(0, 300)).toBe(413);
      expect(r.headers["content-type"]).toMatch(/^application\/json/);
      expect(JSON.parse(r.text)).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: 413, reason: "RequestEntityTooLarge" });
    });
  }

  for (const [what, method, path] of [
    ["heartbeat", "POST", "/agent/v1/clusters/c1/heartbeat"],
    ["work status", "PUT", "/agent/v1/clusters/c1/works/w1/status"],
  ] as const) {
    it(`answers a stranger's 50 MB chunked ${what} with a 401 Status, its body unread`, async () => {
      const stranger = await generateAgentKeyPair();
      for (const authorization of [`Bearer ${await signAgentToken("c1", stranger)}`, undefined]) {
        const r = await sendChunked(hub, method, path, { ...(authorization ? { authorization } : {}), ...json });
        expect(r.status, r.text.slice(0, 300)).toBe(401);
        expect(JSON.parse(r.text)).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });
      }
    });
  }

  it("answers a request target over 8 KiB with a 414 Status, and workerd answers from 64 KiB", async () => {
    const worker = await hubFetch(hub, "GET", `${MC}?labelSelector=a%3D${"b".repeat(10_000)}`, auth());
    expect(worker.status).toBe(414);
    expect(JSON.parse(worker.text)).toMatchObject({ kind: "Status", code: 414, reason: "RequestURITooLong" });
    // Before the Worker: workerd refuses a request target of 65,535 bytes or more with a plain 414.
    const server = await hubFetch(hub, "GET", `${MC}?labelSelector=a%3D${"b".repeat(70_000)}`, auth());
    expect(server.status).toBe(414);
  });

  it("answers a malformed percent-escape with a 400 Status on every prefix", async () => {
    for (const path of [`${MC}/%E0%A4%A`, "/api/v1/namespaces/%zz/secrets", "/agent/v1/clusters/%E0%A4%A/works", "/hooks/%E0%A4%A"]) {
      const r = await hubFetch(hub, "GET", path, auth());
      expect(r.status, path).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ kind: "Status", code: 400, reason: "BadRequest" });
    }
  });
});
