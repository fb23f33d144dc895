/**
 * The agent channel through a real hub (`wrangler dev`: its proxy in front of workerd): the
 * WebSocket upgrade, the auto-answered ping, a status message, and a work pushed at its create;
 * reports pipelined on many sockets at once commit in the order sent, and a close frame is answered.
 * The agent's own transport is tested with the agent; this checks the hub's side end to end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentKeyPair, signAgentToken, signProof } from "../../agent/src/credentials.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { MC, waitFor } from "./support.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

describe("the agent channel under wrangler dev", () => {
  let hub: Hub;
  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("upgrades, answers pings, commits status and pushes a new work at once", async () => {
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const key = await generateAgentKeyPair();
    const reg = await fetch(`${hub.url}/agent/v1/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ clusterName: "wsc1", clusterId: "id-wsc1", publicKey: key.publicJwk, proof: await signProof("wsc1", key, "id-wsc1") }),
    });
    expect(reg.status).toBe(201);
    const keyTag = reg.headers.get("flotilla-key-tag") ?? undefined;

    // Not an upgrade: 426, as HTTP says.
    const plain = await fetch(`${hub.url}/agent/v1/clusters/wsc1/connect`, {
      headers: { authorization: `Bearer ${await signAgentToken("wsc1", key, { keyTag })}` },
    });
    expect(plain.status).toBe(426);

    const url = `${hub.url.replace(/^http/, "ws")}/agent/v1/clusters/wsc1/connect`;
    const ws = new WebSocket(url, {
      protocols: ["flotilla.agent.v1"],
      headers: { authorization: `Bearer ${await signAgentToken("wsc1", key, { keyTag })}` },
    } as any);
    const frames: string[] = [];
    let closed: number | null = null;
    ws.addEventListener("message", (e) => frames.push(String(e.data)));
    ws.addEventListener("close", (e) => (closed = e.code));
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve());
      ws.addEventListener("error", () => reject(new Error("the upgrade failed")));
    });
    expect(ws.protocol).toBe("flotilla.agent.v1");
    const parse = (f: string): any => {
      try {
        return JSON.parse(f);
      } catch {
        return f; // the pong is not JSON
      }
    };
    const message = (match: (m: any) => boolean) => waitFor("a channel message", async () => frames.map(parse).find(match), 15_000);

    ws.send("ping");
    await message((m) => m === "pong");
    ws.send(JSON.stringify({ type: "hello" }));
    expect(await message((m) => m.type === "welcome")).toMatchObject({ leaseDurationSeconds: 60, leaving: false });
    ws.send(JSON.stringify({ type: "status", id: "s1", status: { healthy: true, version: { kubernetes: "v1.31.0" } } }));
    expect(await message((m) => m.id === "s1")).toMatchObject({ type: "ack" });
    const mc = await admin(hub, "GET", `${MC}/wsc1`);
    expect(mc.body.status.version.kubernetes).toBe("v1.31.0");

    const created = await admin(hub, "POST", "/apis/work.open-cluster-management.io/v1/namespaces/wsc1/manifestworks", {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "pushed" },
      spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "pushed", namespace: "default" }, data: { a: "1" } }] } },
    });
    expect(created.status).toBe(201);
    const pushed = await message((m) => m.type === "works" && m.works.some((w: any) => w.metadata.name === "pushed"));
    expect(pushed.works[0].metadata.uid).toBe(created.body.metadata.uid);
    expect(closed).toBeNull();
    ws.close(1000);
  });

  it("20 clusters x 150 reports pipelined on each socket: each work keeps the last one sent; a close frame is answered with 1000 (issue 39)", async () => {
    const clusters = Array.from({ length: 20 }, (_, i) => `wsp${i}`);
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const n = 150;
    const started = Date.now();
    const sockets = await Promise.all(
      clusters.map(async (name, c) => {
        const key = await generateAgentKeyPair();
        const reg = await fetch(`${hub.url}/agent/v1/register`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ clusterName: name, clusterId: `id-${name}`, publicKey: key.publicJwk, proof: await signProof(name, key, `id-${name}`) }),
        });
        expect(reg.status).toBe(201);
        const keyTag = reg.headers.get("flotilla-key-tag") ?? undefined;
        const created = await admin(hub, "POST", `/apis/work.open-cluster-management.io/v1/namespaces/${name}/manifestworks`, {
          apiVersion: "work.open-cluster-management.io/v1",
          kind: "ManifestWork",
          metadata: { name: "w" },
          spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "w", namespace: "default" }, data: { a: "1" } }] } },
        });
        expect(created.status).toBe(201);
        const uid = created.body.metadata.uid as string;
        const ws = new WebSocket(`${hub.url.replace(/^http/, "ws")}/agent/v1/clusters/${name}/connect`, {
          protocols: ["flotilla.agent.v1"],
          headers: { authorization: `Bearer ${await signAgentToken(name, key, { keyTag })}` },
        } as any);
        const acks = new Map<string, any>();
        let closed: number | null = null;
        ws.addEventListener("message", (e) => {
          try {
            const m = JSON.parse(String(e.data));
            if (m.id) acks.set(m.id, m);
          } catch {
            // the pong
          }
        });
        ws.addEventListener("close", (e) => (closed = e.code));
        await new Promise<void>((resolve, reject) => {
          ws.addEventListener("open", () => resolve());
          ws.addEventListener("error", () => reject(new Error(`the upgrade of ${name} failed`)));
        });
        // Every report at once, without waiting for an answer: the even clusters with a sequence
        // (the agent's), the odd ones without (an agent of before, or a raw client).
        for (let i = 0; i < n; i++) {
          const status = {
            conditions: [
              { type: "Applied", status: "True", reason: "AppliedManifestWorkComplete", message: `step ${i}`, lastTransitionTime: "2026-11-26T00:00:00Z" },
            ],
          };
          const report = c % 2 === 0 ? { uid, sequence: 1000 + i, status } : { uid, status };
          ws.send(JSON.stringify({ type: "report", id: `r${i}`, work: "w", report }));
        }
        return { name, ws, acks, closed: () => closed };
      }),
    );
    await waitFor("every report acknowledged", async () => sockets.every((s) => s.acks.size === n) || undefined, 90_000);
    for (const s of sockets) {
      expect(
        [...s.acks.values()].filter((a) => a.type !== "ack"),
        s.name,
      ).toEqual([]);
      const work = await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/${s.name}/manifestworks/w`);
      expect(work.body.status.conditions.find((c: any) => c.type === "Applied").message, s.name).toBe(`step ${n - 1}`);
    }
    console.log(`20 x ${n} pipelined reports acknowledged and checked in ${Date.now() - started} ms`);
    // The agent's close frame is answered with its code at once (was: 1006 after about 10 s).
    const closing = Date.now();
    for (const s of sockets) s.ws.close(1000, "done");
    await waitFor("the closes answered", async () => sockets.every((s) => s.closed() !== null) || undefined, 5_000);
    expect(sockets.map((s) => s.closed())).toEqual(sockets.map(() => 1000));
    expect(Date.now() - closing).toBeLessThan(5_000);
  });
});
