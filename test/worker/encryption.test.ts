/**
 * Secrets encrypted at rest (src/k8s/encryption.ts, docs/encryption.md): what D1 holds, what the
 * API serves, key rotation, rows stored before encryption, and refusals that name the key but
 * never the data.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { writeStored } from "../../src/store/d1/write.ts";
import { keyringOf } from "../../src/k8s/encryption.ts";
import { ApiError } from "../../src/k8s/errors.ts";
import { database, getObject, needsRewrite } from "../../src/store/d1/objects.ts";
import { SecretKind } from "../../src/kinds/secret.ts";
import { call, createNamespaces, SECRETS } from "./helpers.ts";

const PLAIN = "correct-horse-battery-staple";
const PLAIN_B64 = btoa(PLAIN);
const KEY_A = `a:${btoa("A".repeat(32))}`;
const KEY_B = `b:${btoa("B".repeat(16))}`;

/** The stored JSON of a Secret's row, and of every event row about it. */
async function rows(ns: string, name: string): Promise<{ object: string | undefined; events: string[] }> {
  const obj = await env.DB.prepare("SELECT body FROM objects WHERE resource = '/secrets' AND namespace = ? AND name = ?")
    .bind(ns, name)
    .first<{ body: string }>();
  const ev = await env.DB.prepare("SELECT body FROM events WHERE resource = '/secrets' AND namespace = ? AND name = ?").bind(ns, name).all<{ body: string }>();
  return { object: obj?.body, events: ev.results.map((r) => r.body) };
}

const secret = (name: string, fields: Record<string, unknown>, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, labels },
  ...fields,
});

describe("Secrets at rest", () => {
  beforeAll(() => createNamespaces("enc", "moved", "lost"));

  it("stores data sealed (object and event rows), serves it opened on get, list and watch, keeps metadata queryable", async () => {
    const created = await call("POST", SECRETS("enc"), secret("db", { stringData: { password: PLAIN } }, { app: "db" }));
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ password: PLAIN_B64 });
    const patched = await call("PATCH", `${SECRETS("enc")}/db`, { data: { user: btoa("admin") } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);

    const stored = await rows("enc", "db");
    expect(stored.events.length).toBe(2);
    for (const body of [stored.object!, ...stored.events]) {
      expect(body).not.toContain(PLAIN);
      expect(body).not.toContain(PLAIN_B64);
      expect(body).not.toContain(btoa("admin"));
      const parsed = JSON.parse(body);
      expect(parsed.data).toMatch(/^k8s:enc:aesgcm:v1:test1:[A-Za-z0-9+/]+=*$/);
      expect(parsed.metadata.labels).toEqual({ app: "db" });
    }

    const want = { password: PLAIN_B64, user: btoa("admin") };
    expect((await call("GET", `${SECRETS("enc")}/db`)).body.data).toEqual(want);
    const listed = await call("GET", `${SECRETS("enc")}?labelSelector=app%3Ddb`);
    expect(listed.body.items.map((s: { data: unknown }) => s.data)).toEqual([want]);
    const res = await exports.default.fetch(
      `https://hub.test${SECRETS("enc")}?watch=true&resourceVersion=${created.body.metadata.resourceVersion}&timeoutSeconds=2`,
      {
        headers: { authorization: "Bearer test-admin-token" },
      },
    );
    const lines = (await res.text())
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "MODIFIED", object: { data: want } });
  });

  it("reads what an older key sealed once a new key is primary, and a no-op update seals it again with the new key", async () => {
    const envA = { ...env, FLOTILLA_ENCRYPTION_KEYS: KEY_A };
    const envBA = { ...env, FLOTILLA_ENCRYPTION_KEYS: `${KEY_B},${KEY_A}` };
    const envB = { ...env, FLOTILLA_ENCRYPTION_KEYS: KEY_B };
    const { object } = await writeStored(envA, SecretKind, "rot", "s1", { verb: "create", body: secret("s1", { data: { token: PLAIN_B64 } }) });
    expect(object!.data).toEqual({ token: PLAIN_B64 });
    expect(JSON.parse((await rows("rot", "s1")).object!).data).toMatch(/^k8s:enc:aesgcm:v1:a:/);

    // The hub's own key (test1) does not have "a": a clear 500 naming the key, never the data.
    const refused = await call("GET", `${SECRETS("rot")}/s1`);
    expect(refused.status).toBe(500);
    expect(refused.body).toMatchObject({ kind: "Status", reason: "InternalError" });
    expect(refused.body.message).toContain('unable to decrypt secrets "rot/s1"');
    expect(refused.body.message).toContain('key "a"');
    expect(JSON.stringify(refused.body)).not.toContain(PLAIN_B64);
    await expect(getObject(database(env.DB, keyringOf(envB)), SecretKind, { namespace: "rot", name: "s1" })).rejects.toThrow(ApiError);

    const current = await getObject(database(env.DB, keyringOf(envBA)), SecretKind, { namespace: "rot", name: "s1" });
    expect(current!.data).toEqual({ token: PLAIN_B64 });
    expect(needsRewrite(current!)).toBe(true);
    // The rewrite step of a rotation: an update that changes nothing is stored again, sealed by "b".
    const rewritten = await writeStored(envBA, SecretKind, "rot", "s1", { verb: "update", body: current });
    expect(Number(rewritten.object!.metadata.resourceVersion)).toBeGreaterThan(Number(current!.metadata.resourceVersion));
    expect(JSON.parse((await rows("rot", "s1")).object!).data).toMatch(/^k8s:enc:aesgcm:v1:b:/);
    const afterDrop = await getObject(database(env.DB, keyringOf(envB)), SecretKind, { namespace: "rot", name: "s1" });
    expect(afterDrop!.data).toEqual({ token: PLAIN_B64 });
    expect(needsRewrite(afterDrop!)).toBe(false);
    // Up to date with the primary key: a no-op update writes nothing.
    const noop = await writeStored(envB, SecretKind, "rot", "s1", { verb: "update", body: afterDrop });
    expect(noop.object!.metadata.resourceVersion).toBe(afterDrop!.metadata.resourceVersion);
  });

  it("reads Secrets stored unencrypted before the upgrade and encrypts them on their next write, even one that changes nothing", async () => {
    const legacy = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "old", namespace: "legacy", uid: "u-old", creationTimestamp: "2026-01-01T00:00:00Z" },
      type: "Opaque",
      data: { token: PLAIN_B64 },
    };
    await env.DB.prepare("INSERT INTO objects (resource, namespace, name, uid, resource_version, body) VALUES ('/secrets', 'legacy', 'old', 'u-old', 1, ?)")
      .bind(JSON.stringify(legacy))
      .run();
    const got = await call("GET", `${SECRETS("legacy")}/old`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ token: PLAIN_B64 });
    // What `kubectl get secrets -A -o json | kubectl replace -f -` sends for it.
    const replaced = await call("PUT", `${SECRETS("legacy")}/old`, got.body);
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toEqual({ token: PLAIN_B64 });
    const body = (await rows("legacy", "old")).object!;
    expect(body).not.toContain(PLAIN_B64);
    expect(JSON.parse(body).data).toMatch(/^k8s:enc:aesgcm:v1:test1:/);
  });

  it("refuses a sealed value moved onto another Secret, and a write when no key is configured", async () => {
    expect((await call("POST", SECRETS("moved"), secret("from", { stringData: { k: PLAIN } }))).status).toBe(201);
    expect((await call("POST", SECRETS("moved"), secret("to", { stringData: { k: "other" } }))).status).toBe(201);
    const sealed = JSON.parse((await rows("moved", "from")).object!).data as string;
    await env.DB.prepare("UPDATE objects SET body = json_set(body, '$.data', ?) WHERE resource = '/secrets' AND namespace = 'moved' AND name = 'to'")
      .bind(sealed)
      .run();
    const moved = await call("GET", `${SECRETS("moved")}/to`);
    expect(moved.status).toBe(500);
    expect(moved.body.message).toContain("does not authenticate");
    expect(JSON.stringify(moved.body)).not.toContain(PLAIN_B64);

    const none = { ...env, FLOTILLA_ENCRYPTION_KEYS: "" };
    const err = await writeStored(none, SecretKind, "moved", "nokey", { verb: "create", body: secret("nokey", { data: { k: PLAIN_B64 } }) }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toContain("no encryption key is configured: set the Worker secret FLOTILLA_ENCRYPTION_KEYS");
    expect((await rows("moved", "nokey")).object).toBeUndefined();
    // A Secret without data needs no key.
    expect((await writeStored(none, SecretKind, "moved", "empty", { verb: "create", body: secret("empty", {}) })).object).toBeTruthy();
  });

  it("a watch that meets a value it cannot decrypt says so: 410 Expired for old events (list again), the Status for the initial list", async () => {
    const before = await call("GET", SECRETS("lost"));
    await writeStored({ ...env, FLOTILLA_ENCRYPTION_KEYS: KEY_A }, SecretKind, "lost", "s", { verb: "create", body: secret("s", { data: { k: PLAIN_B64 } }) });
    const read = async (query: string) => {
      const res = await exports.default.fetch(`https://hub.test${SECRETS("lost")}?watch=true&timeoutSeconds=2&${query}`, {
        headers: { authorization: "Bearer test-admin-token" },
      });
      return (await res.text())
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
    };
    const replay = await read(`resourceVersion=${before.body.metadata.resourceVersion}`);
    expect(replay).toEqual([{ type: "ERROR", object: expect.objectContaining({ kind: "Status", code: 410, reason: "Expired" }) }]);
    const initial = await read("");
    expect(initial).toEqual([{ type: "ERROR", object: expect.objectContaining({ code: 500, reason: "InternalError" }) }]);
    expect(initial[0].object.message).toContain('key "a"');
    expect(JSON.stringify([replay, initial])).not.toContain(PLAIN_B64);
  });
});
