import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { agentKeys, call, condition, createToken, MC, register, withClockAhead } from "./helpers.ts";

const heartbeat = (over: Record<string, unknown> = {}) => ({
  healthy: true,
  version: { kubernetes: "v1.31.2" },
  capacity: { cpu: "12", memory: "48Gi" },
  allocatable: { cpu: "11400m", memory: "45Gi" },
  clusterClaims: [{ name: "region", value: "eu" }],
  ...over,
});

async function hb(name: string, keys: Awaited<ReturnType<typeof agentKeys>>, body = heartbeat(), target = name) {
  return call("POST", `/agent/v1/clusters/${target}/heartbeat`, body, { token: await keys.sign(name) });
}

describe("registration (double opt-in)", () => {
  it("registers pending, is accepted by the admin, then joins and becomes Available", async () => {
    const token = await createToken();
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const { keys, res } = await register(token, "reg1", "id-reg1");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ clusterName: "reg1", hubAcceptsClient: false, leaseDurationSeconds: 60 });

    const pending = await call("GET", `${MC}/reg1`);
    expect(pending.body.spec.hubAcceptsClient).toBe(false);
    // The cluster ID is no secret and authorises nothing: it is not served.
    expect(pending.body.metadata.annotations?.["flotilla.dev/cluster-id"]).toBeUndefined();
    expect(pending.body.status.clusterClaims).toEqual([{ name: "region", value: "eu" }]);

    const early = await hb("reg1", keys);
    expect(early.status).toBe(403);
    const info = await call("GET", "/agent/v1/clusters/reg1", undefined, { token: await keys.sign("reg1") });
    expect(info.status).toBe(200);
    expect(info.body.hubAcceptsClient).toBe(false);

    await call("PATCH", `${MC}/reg1`, { spec: { hubAcceptsClient: true } }, { contentType: "application/merge-patch+json" });
    const ok = await hb("reg1", keys);
    expect(ok.status).toBe(200);
    expect(ok.body.leaseDurationSeconds).toBe(60);
    const joined = await call("GET", `${MC}/reg1`);
    expect(condition(joined.body, "ManagedClusterJoined")).toMatchObject({ status: "True", reason: "ManagedClusterJoined" });
    expect(condition(joined.body, "ManagedClusterConditionAvailable")).toMatchObject({ status: "True", reason: "ManagedClusterAvailable" });
    expect(joined.body.status.version.kubernetes).toBe("v1.31.2");
    expect(joined.body.status.allocatable).toEqual({ cpu: "11400m", memory: "45Gi" });
    expect(joined.body.spec.taints ?? []).toEqual([]);
  });

  it("serves a pending cluster that reported no claims (no status yet) to its agent: 200, not 500", async () => {
    // The Durable Object hands out a frozen copy of its cluster; reading the status of one that has
    // none must not try to add it (TypeError: Cannot add property status, object is not extensible).
    const token = await createToken();
    const keys = await agentKeys();
    const proof = await keys.proof("bare1", "id-bare1");
    const res = await call(
      "POST",
      "/agent/v1/register",
      { clusterName: "bare1", clusterId: "id-bare1", publicKey: keys.publicJwk, proof, claims: [] },
      { token },
    );
    expect(res.status).toBe(201);
    keys.tag = res.headers.get("flotilla-key-tag") ?? undefined;
    expect((await call("GET", `${MC}/bare1`)).body.status).toBeUndefined();
    for (let i = 0; i < 2; i++) {
      const info = await call("GET", "/agent/v1/clusters/bare1", undefined, { token: await keys.sign("bare1") });
      expect(info.status, JSON.stringify(info.body)).toBe(200);
      expect(info.body).toMatchObject({ clusterName: "bare1", hubAcceptsClient: false, denied: false, joined: false });
    }
    expect((await hb("bare1", keys)).status).toBe(403);
    // Registering again while pending (an agent restart) is answered too.
    const again = await call(
      "POST",
      "/agent/v1/register",
      { clusterName: "bare1", clusterId: "id-bare1", publicKey: keys.publicJwk, proof: await keys.proof("bare1", "id-bare1"), claims: [] },
      { token },
    );
    expect(again.status, JSON.stringify(again.body)).toBeLessThan(300);

    // Once accepted, the first heartbeat gives it a status.
    await call("PATCH", `${MC}/bare1`, { spec: { hubAcceptsClient: true } }, { contentType: "application/merge-patch+json" });
    expect((await hb("bare1", keys, heartbeat({ clusterClaims: undefined }))).status).toBe(200);
    expect(condition((await call("GET", `${MC}/bare1`)).body, "ManagedClusterConditionAvailable")).toMatchObject({ status: "True" });
  });

  it("autoApprove tokens accept at once; expired and revoked tokens are refused", async () => {
    const auto = await createToken({ autoApprove: true });
    const { res } = await register(auto, "auto1", "id-auto1");
    expect(res.body.hubAcceptsClient).toBe(true);
    const obj = await call("GET", `${MC}/auto1`);
    expect(obj.body.metadata.annotations["open-cluster-management.io/automatically-accepted-on"]).toBeTruthy();

    const revoked = await createToken();
    await call("DELETE", `/apis/flotilla.dev/v1alpha1/bootstraptokens/${revoked.split(".")[0]}`);
    expect((await register(revoked, "rev1", "id-rev1")).res.status).toBe(401);

    const short = await createToken({ ttlSeconds: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    const expired = await register(short, "exp1", "id-exp1");
    expect(expired.res.status).toBe(401);
    expect(expired.res.body.message).toContain("expired");
    expect((await call("GET", `${MC}/exp1`)).status).toBe(404);
  });

  it("the admin may choose the token (spec.token, write-only): agents installed with it register; never stored or served", async () => {
    const BT = "/apis/flotilla.dev/v1alpha1/bootstraptokens";
    const chosen = "rcvr01.abcdefghij012345";
    const created = await call("POST", BT, { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec: { autoApprove: true, token: chosen } });
    expect(created.status).toBe(201);
    expect(created.body.metadata.name).toBe("rcvr01");
    expect(created.body.status.token).toBe(chosen);
    expect(created.body.spec.token).toBeUndefined();
    const read = await call("GET", `${BT}/rcvr01`);
    expect(JSON.stringify(read.body)).not.toContain("abcdefghij012345");
    const { res } = await register(chosen, "chosen1", "id-chosen1");
    expect(res.status).toBe(201);
    expect(res.body.hubAcceptsClient).toBe(true);
    // The same ID again is taken; a malformed token, or one naming another ID than the name, is 422.
    expect((await call("POST", BT, { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec: { token: chosen } })).status).toBe(409);
    const bad = await call("POST", BT, { apiVersion: "flotilla.dev/v1alpha1", kind: "BootstrapToken", spec: { token: "short.token" } });
    expect(bad.status).toBe(422);
    expect(bad.body.details.causes[0].field).toBe("spec.token");
    const other = await call("POST", BT, {
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "BootstrapToken",
      metadata: { name: "other1" },
      spec: { token: chosen },
    });
    expect(other.status).toBe(422);
    // A dry run neither stores it nor echoes it into the spec.
    const dry = await call("POST", `${BT}?dryRun=All`, {
      apiVersion: "flotilla.dev/v1alpha1",
      kind: "BootstrapToken",
      spec: { token: "rcvr02.abcdefghij012345" },
    });
    expect(dry.status).toBe(201);
    expect(dry.body.spec.token).toBeUndefined();
    expect((await call("GET", `${BT}/rcvr02`)).status).toBe(404);
  });

  it("enforces cluster ID uniqueness and lets a restart back in", async () => {
    const token = await createToken();
    const first = await register(token, "uniq1", "id-shared");
    expect(first.res.status).toBe(201);
    const dupId = await register(token, "uniq2", "id-shared");
    expect(dupId.res.status).toBe(409);
    expect(dupId.res.body.message).toContain('"uniq1"');
    expect((await call("GET", `${MC}/uniq2`)).status).toBe(404);
    const dupName = await register(token, "uniq1", "id-other");
    expect(dupName.res.status).toBe(409);
    const again = await register(token, "uniq1", "id-shared", first.keys);
    expect(again.res.status).toBe(200);
  });

  it("scopes credentials: another cluster's endpoints are 403, forged or replayed tokens 401", async () => {
    const token = await createToken({ autoApprove: true });
    const a = await register(token, "scope-a", "id-scope-a");
    await register(token, "scope-b", "id-scope-b");
    const cross = await hb("scope-a", a.keys, heartbeat(), "scope-b");
    expect(cross.status).toBe(403);
    const stranger = await agentKeys();
    expect((await hb("scope-a", stranger)).status).toBe(401);
    const jwt = await a.keys.sign("scope-a", { jti: "fixed-jti" });
    expect((await call("POST", "/agent/v1/clusters/scope-a/heartbeat", heartbeat(), { token: jwt })).status).toBe(200);
    const replay = await call("POST", "/agent/v1/clusters/scope-a/heartbeat", heartbeat(), { token: jwt });
    expect(replay.status).toBe(401);
    expect(replay.body.message).toBe("invalid agent credential");
    const old = await a.keys.sign("scope-a", { iatOffsetSeconds: -200 });
    expect((await call("POST", "/agent/v1/clusters/scope-a/heartbeat", heartbeat(), { token: old })).status).toBe(401);
    const long = await a.keys.sign("scope-a", { lifetimeSeconds: 3600 });
    expect((await call("POST", "/agent/v1/clusters/scope-a/heartbeat", heartbeat(), { token: long })).status).toBe(401);
    expect((await call("GET", MC, undefined, { token: await a.keys.sign("scope-a") })).status).toBe(403);
  });

  it("deny and delete stop the credential at once", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "deny1", "id-deny1");
    expect((await hb("deny1", keys)).status).toBe(200);
    await call("PATCH", `${MC}/deny1`, { spec: { hubAcceptsClient: false } }, { contentType: "application/merge-patch+json" });
    const denied = await hb("deny1", keys);
    expect(denied.status).toBe(403);
    const info = await call("GET", "/agent/v1/clusters/deny1", undefined, { token: await keys.sign("deny1") });
    expect(info.body.denied).toBe(true);
    await call("DELETE", `${MC}/deny1`);
    expect((await hb("deny1", keys)).status).toBe(401);
    // The identity is released with the cluster: the same ID may join under a new name.
    expect((await register(token, "deny1-new", "id-deny1")).res.status).toBe(201);
  });

  it("rotates keys without downtime: the old key keeps working during the overlap", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "rot1", "id-rot1");
    const next = await agentKeys();
    const r = await call(
      "POST",
      "/agent/v1/clusters/rot1/rotate-key",
      { publicKey: next.publicJwk, proof: await next.proof("rot1") },
      { token: await keys.sign("rot1") },
    );
    expect(r.status).toBe(200);
    expect(r.body.kid).toBe(next.kid);
    expect((await hb("rot1", next)).status).toBe(200);
    expect((await hb("rot1", keys)).status).toBe(200);
    const stub = env.CLUSTERS.getByName("rot1");
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec("UPDATE keys SET not_after = 1 WHERE not_after IS NOT NULL");
    });
    expect((await hb("rot1", keys)).status).toBe(401);
    expect((await hb("rot1", next)).status).toBe(200);
  });

  const rotate = async (cluster: string, signer: Awaited<ReturnType<typeof agentKeys>>, to: Awaited<ReturnType<typeof agentKeys>>) =>
    call(
      "POST",
      `/agent/v1/clusters/${cluster}/rotate-key`,
      { publicKey: to.publicJwk, proof: await to.proof(cluster) },
      { token: await signer.sign(cluster) },
    );

  it("a key retired by a rotation may not rotate (a leaked key hands nothing over)", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys: k1 } = await register(token, "rot-retired", "id-rot-retired");
    const k2 = await agentKeys();
    expect((await rotate("rot-retired", k1, k2)).status).toBe(200);
    // K1 still authenticates during its grace...
    expect((await hb("rot-retired", k1)).status).toBe(200);
    // ...but its holder cannot rotate the cluster to a key of their own.
    const k4 = await agentKeys();
    const refused = await rotate("rot-retired", k1, k4);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ kind: "Status", reason: "Forbidden" });
    expect((await hb("rot-retired", k4)).status).toBe(401);
    // The current key is untouched and still rotates.
    expect((await hb("rot-retired", k2)).status).toBe(200);
    const k3 = await agentKeys();
    expect((await rotate("rot-retired", k2, k3)).status).toBe(200);
    expect((await hb("rot-retired", k3)).status).toBe(200);
  });

  it("a rotation ends the grace of every older key at once", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys: k1 } = await register(token, "rot-chain", "id-rot-chain");
    const k2 = await agentKeys();
    const k3 = await agentKeys();
    expect((await rotate("rot-chain", k1, k2)).status).toBe(200);
    expect((await rotate("rot-chain", k2, k3)).status).toBe(200);
    expect((await hb("rot-chain", k1)).status).toBe(401);
    expect((await hb("rot-chain", k2)).status).toBe(200);
    expect((await hb("rot-chain", k3)).status).toBe(200);
    const rows = await runInDurableObject(env.CLUSTERS.getByName("rot-chain"), (_obj, state) =>
      state.storage.sql.exec("SELECT kid, not_after FROM keys ORDER BY kid").toArray(),
    );
    expect(rows.map((r) => r.kid).sort()).toEqual([k2.kid, k3.kid].sort());
    expect(rows.find((r) => r.kid === k3.kid)?.not_after).toBeNull();
  });

  it("registering again with a retired key is held for an admin, not confirmed", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys: k1 } = await register(token, "rot-rereg", "id-rot-rereg");
    const k2 = await agentKeys();
    expect((await rotate("rot-rereg", k1, k2)).status).toBe(200);
    const again = await register(token, "rot-rereg", "id-rot-rereg", k1);
    expect(again.res.status).toBe(202);
    expect(again.res.body.keyPending).toBe(true);
    expect((await call("GET", `${MC}/rot-rereg`)).body.metadata.annotations["flotilla.dev/pending-key-id"]).toBe(k1.kid);
    // K1 gained nothing: it still may not rotate, and K2 stays current.
    expect((await rotate("rot-rereg", k1, await agentKeys())).status).toBe(403);
    expect((await hb("rot-rereg", k2)).status).toBe(200);
  });
});

describe("leases and availability", () => {
  it("a healthy heartbeat writes no D1 when nothing changed; few SQLite rows", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "cost1", "id-cost1");
    const first = await hb("cost1", keys);
    // The status changed: its commit (with its outbox row), and the row's deletion once the
    // scheduler ran.
    expect(first.headers.get("x-flotilla-d1-queries")).toBe("2");
    const second = await hb("cost1", keys);
    expect(second.status).toBe(200);
    expect(second.headers.get("x-flotilla-d1-queries")).toBe("0");
    expect(Number(second.headers.get("x-flotilla-storage-rows-written"))).toBe(2);
  });

  it("an unhealthy report gives Available=False and the unavailable taint", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "sick1", "id-sick1");
    await hb("sick1", keys, heartbeat({ healthy: false, healthMessage: "livez: 500" }));
    const obj = (await call("GET", `${MC}/sick1`)).body;
    expect(condition(obj, "ManagedClusterConditionAvailable")).toMatchObject({
      status: "False",
      reason: "ManagedClusterKubeAPIServerUnavailable",
      message: "livez: 500",
    });
    expect(obj.spec.taints.map((t: { key: string; effect: string }) => `${t.key}:${t.effect}`)).toEqual([
      "cluster.open-cluster-management.io/unavailable:NoSelect",
    ]);
    await hb("sick1", keys);
    expect((await call("GET", `${MC}/sick1`)).body.spec.taints ?? []).toEqual([]);
  });

  it("a lease not renewed within 5 x leaseDurationSeconds makes the cluster Unknown and unreachable", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "lease1", "id-lease1");
    await call("PATCH", `${MC}/lease1`, { spec: { leaseDurationSeconds: 1 } }, { contentType: "application/merge-patch+json" });
    const first = await hb("lease1", keys);
    expect(first.body.leaseDurationSeconds).toBe(1);
    const stub = env.CLUSTERS.getByName("lease1");
    // Not yet expired: the alarm only re-arms.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(condition((await call("GET", `${MC}/lease1`)).body, "ManagedClusterConditionAvailable").status).toBe("True");
    // 6 s later, past 5 x 1 s without a renewal.
    expect(await withClockAhead(6000, () => runDurableObjectAlarm(stub))).toBe(true);
    const obj = (await call("GET", `${MC}/lease1`)).body;
    expect(condition(obj, "ManagedClusterConditionAvailable")).toMatchObject({ status: "Unknown", reason: "ManagedClusterLeaseUpdateStopped" });
    expect(obj.spec.taints.map((t: { key: string }) => t.key)).toEqual(["cluster.open-cluster-management.io/unreachable"]);
    await hb("lease1", keys);
    const back = (await call("GET", `${MC}/lease1`)).body;
    expect(condition(back, "ManagedClusterConditionAvailable").status).toBe("True");
    expect(back.spec.taints ?? []).toEqual([]);
  });

  it("a shortened lease counts from the interval the agent was last told", async () => {
    const token = await createToken({ autoApprove: true });
    const { keys } = await register(token, "lease2", "id-lease2");
    expect((await hb("lease2", keys)).body.leaseDurationSeconds).toBe(60);
    await call("PATCH", `${MC}/lease2`, { spec: { leaseDurationSeconds: 1 } }, { contentType: "application/merge-patch+json" });
    const stub = env.CLUSTERS.getByName("lease2");
    // 10 s after a renewal made under a 60 s lease: within 5 x 60 s, so still Available.
    await withClockAhead(10_000, () => runDurableObjectAlarm(stub));
    expect(condition((await call("GET", `${MC}/lease2`)).body, "ManagedClusterConditionAvailable").status).toBe("True");
    // The next renewal tells the agent 1 s; from then on 5 x 1 s applies.
    expect((await hb("lease2", keys)).body.leaseDurationSeconds).toBe(1);
    await withClockAhead(10_000, () => runDurableObjectAlarm(stub));
    expect(condition((await call("GET", `${MC}/lease2`)).body, "ManagedClusterConditionAvailable").status).toBe("Unknown");
  });
});
