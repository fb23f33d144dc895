/**
 * The agent channel through a real hub (`wrangler dev`: its proxy in front of workerd): the
 * WebSocket upgrade, the auto-answered ping, a status message, and a work pushed at its create.
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
});
