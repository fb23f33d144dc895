// Failed authentication is limited, valid credentials never are (issue 27, docs/agent-protocol.md
// "Authentication failures"). Runs in workerd with wrangler.toml's AUTH_FAILURES binding, which
// Miniflare simulates with a real counter (50 per key per wall-clock minute).
import { SignJWT, base64url, calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, agentKeys, call, condition, createToken, MC, register, type AgentKeys } from "./helpers.ts";

const HB = { healthy: true };
/** Attempts enough to cross the limit of 50 even when a wall-clock minute (the simulated window) ends midway. */
const ENOUGH_TO_LIMIT = 110;

/** A request from `address`, as Cloudflare's edge gives it in CF-Connecting-IP. */
const from = (address: string, token: string | null) => ({ token, headers: { "cf-connecting-ip": address } });

type Answer = Awaited<ReturnType<typeof call>>;

function expect429(r: Answer) {
  expect(r.status).toBe(429);
  expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: 429, reason: "TooManyRequests" });
  expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
}

/**
 * A token that names `cluster` and is signed by a key the hub never saw; with `kid` it names that
 * key ID (the victim's, say), with `ktag` it carries a made-up key tag.
 */
async function forged(cluster: string, opts: { kid?: string; ktag?: boolean } = {}): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = opts.kid ?? (await calculateJwkThumbprint(await exportJWK(publicKey)));
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid, ...(opts.ktag ? { ktag: base64url.encode(crypto.getRandomValues(new Uint8Array(32))) } : {}) })
    .setIssuer(cluster)
    .setSubject(cluster)
    .setAudience("flotilla")
    .setIssuedAt(iat)
    .setExpirationTime(iat + 60)
    .setJti(crypto.randomUUID())
    .sign(privateKey);
}

/** A bootstrap secret of the right form that is almost surely wrong. */
const wrongSecret = () => [...crypto.getRandomValues(new Uint8Array(16))].map((b) => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");

let fleetToken: string;

beforeAll(async () => {
  fleetToken = await createToken({ autoApprove: true });
});

/** Registers an accepted cluster whose agent has its key tag, and sends a first heartbeat. */
async function joined(name: string): Promise<AgentKeys> {
  const r = await register(fleetToken, name, `id-${name}`);
  expect(r.res.status).toBe(201);
  expect(r.keys.tag).toBeTruthy();
  expect((await call("POST", `/agent/v1/clusters/${name}/heartbeat`, HB, { token: await r.keys.sign(name) })).status).toBe(200);
  return r.keys;
}

describe("a stranger who knows a cluster's name cannot lock its agent out", () => {
  it(
    "1,000 forged tokens naming the cluster from 100 addresses, while its agent heartbeats: every heartbeat 200, the cluster stays Available",
    { timeout: 300_000 },
    async () => {
      const victim = await joined("lockout-victim");
      const agentStatuses: number[] = [];
      const forgedStatuses = new Map<number, number>();
      for (let round = 0; round < 100; round++) {
        // Ten forged tokens at once, one from each of ten addresses: random keys naming the victim,
        // some with the victim's key ID, some with a made-up key tag.
        const batch = Array.from({ length: 10 }, async (_, j) => {
          const i = round * 10 + j;
          const token = await forged("lockout-victim", { kid: i % 2 === 0 ? victim.kid : undefined, ktag: i % 3 === 0 });
          const path = i % 5 === 0 ? "/agent/v1/clusters/lockout-victim/works" : "/agent/v1/clusters/lockout-victim/heartbeat";
          const r = await call(i % 5 === 0 ? "GET" : "POST", path, i % 5 === 0 ? undefined : HB, from(`198.51.100.${i % 100}`, token));
          forgedStatuses.set(r.status, (forgedStatuses.get(r.status) ?? 0) + 1);
          expect(r.body).toMatchObject({ kind: "Status", code: 401, message: "invalid agent credential" });
        });
        // The real agent, from one of the same addresses (a NAT, say), in the middle of it.
        const real = call("POST", "/agent/v1/clusters/lockout-victim/heartbeat", HB, from(`198.51.100.${round}`, await victim.sign("lockout-victim")));
        await Promise.all(batch);
        agentStatuses.push((await real).status);
      }
      expect(forgedStatuses).toEqual(new Map([[401, 1000]]));
      expect(agentStatuses.filter((s) => s !== 200)).toEqual([]);
      const mc = (await call("GET", `${MC}/lockout-victim`)).body;
      expect(condition(mc, "ManagedClusterConditionAvailable")).toMatchObject({ status: "True" });
      expect((mc.spec.taints ?? []).map((t: { key: string }) => t.key)).toEqual([]);
      // Its works are served too.
      expect((await call("GET", "/agent/v1/clusters/lockout-victim/works", undefined, from("198.51.100.7", await victim.sign("lockout-victim")))).status).toBe(
        200,
      );
    },
  );

  it("an address limited by forged tokens still serves a real agent's tagged token, and refuses the forgeries with 429", async () => {
    const victim = await joined("nat-victim");
    const address = "203.0.113.50";
    let limited: Answer | undefined;
    for (let i = 0; i < ENOUGH_TO_LIMIT && !limited; i++) {
      const r = await call("POST", "/agent/v1/clusters/nat-victim/heartbeat", HB, from(address, await forged("nat-victim", { kid: victim.kid })));
      if (r.status === 429) limited = r;
      else expect(r.body).toMatchObject({ code: 401, message: "invalid agent credential" });
    }
    expect(limited).toBeDefined();
    expect429(limited!);
    // The forgeries go on being refused; the agent behind the same address is served.
    expect429(await call("POST", "/agent/v1/clusters/nat-victim/heartbeat", HB, from(address, await forged("nat-victim", { ktag: true }))));
    for (let i = 0; i < 3; i++) {
      expect((await call("POST", "/agent/v1/clusters/nat-victim/heartbeat", HB, from(address, await victim.sign("nat-victim")))).status).toBe(200);
    }
    // Another address is not limited at all.
    expect((await call("POST", "/agent/v1/clusters/nat-victim/heartbeat", HB, from("203.0.113.51", await forged("nat-victim")))).body.code).toBe(401);
  });

  it("counts an IPv6 client by its /64: addresses of one subscriber share one limit", async () => {
    let limited: Answer | undefined;
    for (let i = 0; i < ENOUGH_TO_LIMIT && !limited; i++) {
      // Every attempt from another address of the same /64.
      const r = await call("POST", "/agent/v1/clusters/nobody/heartbeat", HB, from(`2001:db8:aa:bb::${(i + 1).toString(16)}`, await forged("nobody")));
      if (r.status === 429) limited = r;
    }
    expect(limited).toBeDefined();
    expect429(limited!);
    // Another /64 is not limited.
    expect((await call("POST", "/agent/v1/clusters/nobody/heartbeat", HB, from("2001:db8:aa:bc::1", await forged("nobody")))).status).toBe(401);
  });
});

describe("wrong secrets for a bootstrap token ID do not lock out its correct secret", () => {
  it("1,000 wrong secrets for a real token ID from 100 addresses: every one 401, then the correct secret registers", { timeout: 300_000 }, async () => {
    const token = await createToken({ autoApprove: true });
    const id = token.split(".")[0]!;
    const statuses = new Map<number, number>();
    for (let round = 0; round < 100; round++) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, j) => {
          const i = round * 10 + j;
          const r = await call("POST", "/agent/v1/register", { clusterName: "x", clusterId: "x" }, from(`192.0.2.${i % 100}`, `${id}.${wrongSecret()}`));
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          expect(r.body).toMatchObject({ kind: "Status", code: 401 });
        }),
      );
    }
    expect(statuses).toEqual(new Map([[401, 1000]]));
    // The correct secret, from one of the attackers' addresses even, registers.
    const keys = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/register",
      {
        clusterName: "bootstrap-victim",
        clusterId: "id-bootstrap-victim",
        publicKey: keys.publicJwk,
        proof: await keys.proof("bootstrap-victim", "id-bootstrap-victim"),
      },
      from("192.0.2.1", token),
    );
    expect(r.status).toBe(201);
  });

  it("one wrong secret presented over and over, from any number of addresses, is refused once over its limit; the correct secret still registers", async () => {
    const token = await createToken({ autoApprove: true });
    const wrong = `${token.split(".")[0]}.${wrongSecret()}`;
    let limited: Answer | undefined;
    for (let i = 0; i < ENOUGH_TO_LIMIT && !limited; i++) {
      const r = await call("POST", "/agent/v1/register", { clusterName: "x", clusterId: "x" }, from(`192.0.2.${100 + (i % 100)}`, wrong));
      if (r.status === 429) limited = r;
      else expect(r.status).toBe(401);
    }
    expect(limited).toBeDefined();
    expect429(limited!);
    const keys = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/register",
      {
        clusterName: "bootstrap-victim2",
        clusterId: "id-bootstrap-victim2",
        publicKey: keys.publicJwk,
        proof: await keys.proof("bootstrap-victim2", "id-bootstrap-victim2"),
      },
      from("192.0.2.150", token),
    );
    expect(r.status).toBe(201);
  });

  it("a brute force of a bootstrap token from one address is refused with 429 after its limit, and its guesses are no longer checked", async () => {
    const token = await createToken({ autoApprove: true });
    const id = token.split(".")[0]!;
    const address = "192.0.2.250";
    let limited: Answer | undefined;
    for (let i = 0; i < ENOUGH_TO_LIMIT && !limited; i++) {
      const r = await call("POST", "/agent/v1/register", { clusterName: "x", clusterId: "x" }, from(address, `${id}.${wrongSecret()}`));
      if (r.status === 429) limited = r;
      else expect(r.status).toBe(401);
    }
    expect(limited).toBeDefined();
    expect429(limited!);
    // Checking a bootstrap token costs a D1 read, so a limited address gets none: even the right
    // secret waits out Retry-After there (docs/agent-protocol.md: the one case a valid credential
    // waits, only behind an address that itself sent the failures)...
    const keys = await agentKeys();
    const body = {
      clusterName: "brute-victim",
      clusterId: "id-brute-victim",
      publicKey: keys.publicJwk,
      proof: await keys.proof("brute-victim", "id-brute-victim"),
    };
    expect429(await call("POST", "/agent/v1/register", body, from(address, token)));
    // ...while it registers from any other address at once.
    expect((await call("POST", "/agent/v1/register", body, from("192.0.2.251", token))).status).toBe(201);
  });
});

describe("one address shared by every client (the local hub)", () => {
  it("many wrong admin tokens: 429 with Retry-After once over the limit, while the real admin token, agents and registrations from that address go on", async () => {
    const local = "127.0.0.1";
    const keys = await joined("local-agent");
    let limited: Answer | undefined;
    let wrong = 0;
    for (; wrong < ENOUGH_TO_LIMIT && !limited; wrong++) {
      const r = await call("GET", MC, undefined, from(local, `wrong-admin-token-${wrong}`));
      if (r.status === 429) limited = r;
      else expect(r.body).toMatchObject({ kind: "Status", code: 401 });
    }
    expect(limited).toBeDefined();
    expect429(limited!);
    expect(wrong).toBeGreaterThan(50);
    // A brute force of the admin token goes on being refused...
    for (let i = 0; i < 5; i++) expect429(await call("GET", MC, undefined, from(local, `${ADMIN}${i}`)));
    // ...and the admin, the agents and a new registration from the same address are served.
    expect((await call("GET", MC, undefined, from(local, ADMIN))).status).toBe(200);
    expect((await call("POST", "/agent/v1/clusters/local-agent/heartbeat", HB, from(local, await keys.sign("local-agent")))).status).toBe(200);
    expect((await call("GET", "/agent/v1/clusters/local-agent/works", undefined, from(local, await keys.sign("local-agent")))).status).toBe(200);
    const next = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/register",
      { clusterName: "local-agent2", clusterId: "id-local-agent2", publicKey: next.publicJwk, proof: await next.proof("local-agent2", "id-local-agent2") },
      from(local, fleetToken),
    );
    expect(r.status).toBe(201);
    // An agent's JWT on the admin API from that address is still told what it may not do (403, not 429).
    expect((await call("GET", MC, undefined, from(local, await keys.sign("local-agent")))).status).toBe(403);
  });
});
