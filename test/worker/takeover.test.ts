// The standing takeover suite (issue 10): a cluster's identity is its key. Re-registration with
// another key, forged and future-dated tokens, enumeration of names, rotation while denied and
// storage growth from strangers are all refused.
import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { SignJWT, base64url, exportJWK, generateKeyPair } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { agentKeys, call, createToken, MC, register, type AgentKeys, merge } from "./helpers.ts";

const HB = { healthy: true, clusterClaims: [{ name: "region", value: "eu" }] };

/** A request from its own source address, so one test's failures do not count against another's. */
const from = (address: string, token: string | null) => ({ token, headers: { "cf-connecting-ip": address } });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function expectStatus(res: { status: number; body: any }, code: number, reason?: string) {
  expect(res.status).toBe(code);
  expect(res.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code });
  if (reason) expect(res.body.reason).toBe(reason);
}

/** Everything the hub stores in D1, to prove a refused request wrote nothing. */
async function d1Snapshot(): Promise<string> {
  const rows = await env.DB.batch([
    env.DB.prepare("SELECT resource, namespace, name, resource_version, body FROM objects ORDER BY resource, namespace, name"),
    env.DB.prepare("SELECT name, cluster_id FROM cluster_identities ORDER BY name"),
    env.DB.prepare("SELECT value FROM counters"),
  ]);
  return JSON.stringify(rows.map((r) => r.results));
}

let fleetToken: string;
let victim: AgentKeys;

beforeAll(async () => {
  // A fleet-wide autoApprove token: the case in which a takeover used to succeed.
  fleetToken = await createToken({ autoApprove: true });
  const r = await register(fleetToken, "victim", "id-victim");
  expect(r.res.status).toBe(201);
  victim = r.keys;
  expect((await call("POST", "/agent/v1/clusters/victim/heartbeat", HB, { token: await victim.sign("victim") })).status).toBe(200);
});

describe("re-registration with another key", () => {
  it("holds the new key as pending: the accepted credential and the cluster stay as they were", async () => {
    const before = await call("GET", `${MC}/victim`);
    const attacker = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/register",
      {
        clusterName: "victim",
        clusterId: "id-victim",
        publicKey: attacker.publicJwk,
        proof: await attacker.proof("victim", "id-victim"),
        claims: [{ name: "region", value: "evil" }],
      },
      { token: fleetToken },
    );
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ clusterName: "victim", keyPending: true });
    const after = await call("GET", `${MC}/victim`);
    expect(after.body.metadata.annotations["flotilla.dev/pending-key-id"]).toBe(attacker.kid);
    expect(after.body.spec).toEqual(before.body.spec);
    expect(after.body.status.clusterClaims).toEqual([{ name: "region", value: "eu" }]);
    // The real agent goes on; the new key may read its registration and nothing else.
    expect((await call("POST", "/agent/v1/clusters/victim/heartbeat", HB, { token: await victim.sign("victim") })).status).toBe(200);
    const info = await call("GET", "/agent/v1/clusters/victim", undefined, { token: await attacker.sign("victim") });
    expect(info.status).toBe(200);
    expect(info.body.keyPending).toBe(true);
    expectStatus(await call("GET", "/agent/v1/clusters/victim/works", undefined, { token: await attacker.sign("victim") }), 403, "Forbidden");
    expectStatus(await call("POST", "/agent/v1/clusters/victim/heartbeat", HB, { token: await attacker.sign("victim") }), 403, "Forbidden");
    const rotate = await agentKeys();
    const rot = await call(
      "POST",
      "/agent/v1/clusters/victim/rotate-key",
      { publicKey: rotate.publicJwk, proof: await rotate.proof("victim") },
      { token: await attacker.sign("victim") },
    );
    expectStatus(rot, 403, "Forbidden");
  });

  it("a pending key becomes the cluster's key only when an admin accepts that key ID", async () => {
    const token = await createToken({ autoApprove: true });
    const old = (await register(token, "rekey", "id-rekey")).keys;
    const fresh = await agentKeys();
    expect((await register(token, "rekey", "id-rekey", fresh)).res.status).toBe(202);
    expectStatus(await call("PATCH", `${MC}/rekey`, { metadata: { annotations: { "flotilla.dev/pending-key-id": "forged" } } }, merge), 422, "Invalid");
    const wrong = await call("PATCH", `${MC}/rekey`, { metadata: { annotations: { "flotilla.dev/accept-key-id": old.kid } } }, merge);
    expectStatus(wrong, 422, "Invalid");
    expect(wrong.body.details.causes[0].field).toBe("metadata.annotations[flotilla.dev/accept-key-id]");
    const ok = await call("PATCH", `${MC}/rekey`, { metadata: { annotations: { "flotilla.dev/accept-key-id": fresh.kid } } }, merge);
    expect(ok.status).toBe(200);
    expect(ok.body.metadata.annotations?.["flotilla.dev/pending-key-id"]).toBeUndefined();
    expect(ok.body.metadata.annotations?.["flotilla.dev/accept-key-id"]).toBeUndefined();
    expect((await call("POST", "/agent/v1/clusters/rekey/heartbeat", HB, { token: await fresh.sign("rekey") })).status).toBe(200);
    expectStatus(await call("POST", "/agent/v1/clusters/rekey/heartbeat", HB, { token: await old.sign("rekey", { tag: null }) }), 401, "Unauthorized");
  });

  it("the same key again is an agent restart (200), and the ID never authorises", async () => {
    expect((await register(fleetToken, "victim", "id-victim", victim)).res.status).toBe(200);
    const attacker = await agentKeys();
    // Another name with the victim's ID, and the victim's name with another ID: 409, nothing written.
    const snap = await d1Snapshot();
    expect((await register(fleetToken, "victim2", "id-victim", attacker)).res.status).toBe(409);
    expect((await register(fleetToken, "victim", "id-other", attacker)).res.status).toBe(409);
    expect(await d1Snapshot()).toBe(snap);
  });
});

describe("registration proves possession of a valid key", () => {
  const body = async (keys: AgentKeys, over: Record<string, unknown> = {}) => ({
    clusterName: "pop1",
    clusterId: "id-pop1",
    publicKey: keys.publicJwk,
    proof: await keys.proof("pop1", "id-pop1"),
    ...over,
  });

  it("refuses a missing, foreign, misaddressed or future-dated proof, and writes nothing", async () => {
    const keys = await agentKeys();
    const other = await agentKeys();
    const snap = await d1Snapshot();
    const cases: [string, Record<string, unknown>, number][] = [
      ["no proof", { proof: undefined }, 422],
      ["signed by another key", { proof: await other.proof("pop1", "id-pop1") }, 400],
      ["for another cluster", { proof: await keys.proof("pop2", "id-pop1") }, 400],
      ["for another cluster ID", { proof: await keys.proof("pop1", "id-other") }, 400],
      ["with another audience", { proof: await keys.proof("pop1", "id-pop1", { aud: "flotilla" }) }, 400],
      ["dated a day ahead", { proof: await keys.proof("pop1", "id-pop1", { iatOffsetSeconds: 86_400 }) }, 400],
      ["living an hour", { proof: await keys.proof("pop1", "id-pop1", { lifetimeSeconds: 3600 }) }, 400],
      ["not a JWS", { proof: "not-a-jws" }, 400],
    ];
    for (const [what, over, code] of cases) {
      const r = await call("POST", "/agent/v1/register", await body(keys, over), { token: fleetToken });
      expect(r.status, what).toBe(code);
      expect(r.body.kind, what).toBe("Status");
    }
    expect(await d1Snapshot()).toBe(snap);
  });

  it("refuses a point that is not on the curve (422), and no later request gets a 500", async () => {
    const keys = await agentKeys();
    const x = base64url.decode(keys.publicJwk.x!);
    x[31] = x[31]! ^ 1;
    const bad = { ...keys.publicJwk, x: base64url.encode(x) };
    const r = await call("POST", "/agent/v1/register", await body(keys, { publicKey: bad }), { token: fleetToken });
    expectStatus(r, 422, "Invalid");
    expect(r.body.details.causes[0].field).toBe("publicKey");
    const short = await call("POST", "/agent/v1/register", await body(keys, { publicKey: { ...keys.publicJwk, y: "AAAA" } }), { token: fleetToken });
    expect(short.status).toBe(422);
    expect((await call("GET", `${MC}/pop1`)).status).toBe(404);
    expectStatus(await call("GET", "/agent/v1/clusters/pop1", undefined, { token: await keys.sign("pop1") }), 401, "Unauthorized");
  });
});

describe("forged tokens", () => {
  it("refuses alg none, HS256 with the public key, another cluster's key, and tokens dated ahead", async () => {
    const header = (h: object) => base64url.encode(JSON.stringify(h));
    const claims = (iat: number) => ({ iss: "victim", sub: "victim", aud: "flotilla", iat, exp: iat + 60, jti: crypto.randomUUID() });
    const now = Math.floor(Date.now() / 1000);
    const none = `${header({ alg: "none", typ: "JWT", kid: victim.kid })}.${base64url.encode(JSON.stringify(claims(now)))}.`;
    const hs = await new SignJWT(claims(now))
      .setProtectedHeader({ alg: "HS256", kid: victim.kid })
      .sign(new TextEncoder().encode(JSON.stringify(victim.publicJwk)));
    const other = await agentKeys();
    const tokens: [string, string][] = [
      ["alg none", none],
      ["HS256 keyed with the public key", hs],
      ["signed by another key under the victim's kid", (await other.sign("victim")).replace(/^[^.]+/, header({ alg: "ES256", typ: "JWT", kid: victim.kid }))],
      ["dated a day ahead", await victim.sign("victim", { iatOffsetSeconds: 86_400 })],
      ["dated an hour ahead", await victim.sign("victim", { iatOffsetSeconds: 3600 })],
      ["expired", await victim.sign("victim", { iatOffsetSeconds: -600 })],
      ["for another audience", await victim.sign("victim", { aud: "kubernetes" })],
    ];
    for (const [what, token] of tokens) {
      const r = await call("POST", "/agent/v1/clusters/victim/heartbeat", HB, from("10.0.1.1", token));
      expect(r.status, what).toBe(401);
      expect(r.body.message, what).toBe("invalid agent credential");
    }
    // Within the 30 s clock skew, a token dated ahead is fine.
    expect((await call("POST", "/agent/v1/clusters/victim/heartbeat", HB, { token: await victim.sign("victim", { iatOffsetSeconds: 20 }) })).status).toBe(200);
  });

  it("answers a registered and an unknown name alike (no enumeration), on /agent/v1 and /apis", async () => {
    const stranger = await agentKeys();
    for (const path of ["/agent/v1/clusters/NAME", MC]) {
      const known = await call("GET", path.replace("NAME", "victim"), undefined, from("10.0.2.1", await stranger.sign("victim")));
      const unknown = await call("GET", path.replace("NAME", "nobody"), undefined, from("10.0.2.1", await stranger.sign("nobody")));
      expect(known.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(known.body).toEqual(unknown.body);
    }
  });

  it("answers every failed credential on /apis as kube-apiserver does: 401 Unauthorized", async () => {
    const stranger = await agentKeys();
    for (const token of ["wrong-admin-token", await stranger.sign("victim"), await stranger.sign("nobody"), "a.b.c"]) {
      const r = await call("GET", MC, undefined, from("10.0.3.1", token));
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ kind: "Status", status: "Failure", reason: "Unauthorized", message: "Unauthorized", code: 401 });
    }
  });
});

describe("key rotation", () => {
  it("is refused while the cluster is denied, and needs a proof for the new key", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "rot-deny", "id-rot-deny");
    const next = await agentKeys();
    const noProof = await call(
      "POST",
      "/agent/v1/clusters/rot-deny/rotate-key",
      { publicKey: next.publicJwk, proof: await keys.proof("rot-deny") },
      { token: await keys.sign("rot-deny") },
    );
    expectStatus(noProof, 400, "BadRequest");
    await call("PATCH", `${MC}/rot-deny`, { spec: { hubAcceptsClient: false } }, merge);
    const denied = await call(
      "POST",
      "/agent/v1/clusters/rot-deny/rotate-key",
      { publicKey: next.publicJwk, proof: await next.proof("rot-deny") },
      { token: await keys.sign("rot-deny") },
    );
    expectStatus(denied, 403, "Forbidden");
    // The denied key was not rotated: the new one is unknown.
    expectStatus(await call("GET", "/agent/v1/clusters/rot-deny", undefined, { token: await next.sign("rot-deny") }), 401, "Unauthorized");
  });
});

describe("strangers store nothing", () => {
  it("300 forged agent requests with random names create no Durable Object and write nothing to D1", async () => {
    const before = new Set((await listDurableObjectIds(env.CLUSTERS)).map((id) => id.toString()));
    const snap = await d1Snapshot();
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const kid = base64url.encode(JSON.stringify(await exportJWK(publicKey))).slice(0, 43);
    const codes = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const sub = `stranger-${crypto.randomUUID().slice(0, 8)}`;
      const iat = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: "ES256", typ: "JWT", kid, ktag: base64url.encode(crypto.getRandomValues(new Uint8Array(32))) })
        .setIssuer(sub)
        .setSubject(sub)
        .setAudience("flotilla")
        .setIssuedAt(iat)
        .setExpirationTime(iat + 60)
        .setJti(crypto.randomUUID())
        .sign(privateKey);
      const path = [`/agent/v1/clusters/${sub}/heartbeat`, `/agent/v1/clusters/${sub}/works`, `/agent/v1/clusters/${sub}`, MC][i % 4]!;
      const r = await call(i % 4 === 0 ? "POST" : "GET", path, i % 4 === 0 ? HB : undefined, from(`10.1.${i % 250}.${Math.floor(i / 250)}`, token));
      codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
      expect([401, 429]).toContain(r.status);
      expect(r.body.kind).toBe("Status");
    }
    const after = (await listDurableObjectIds(env.CLUSTERS)).map((id) => id.toString()).filter((id) => !before.has(id));
    expect(after).toEqual([]);
    expect(await d1Snapshot()).toBe(snap);
    expect(codes.get(401)).toBeGreaterThan(0);
  });
});
