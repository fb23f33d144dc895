/**
 * The edge location an agent reaches (`request.cf.colo`, src/edge.ts) is recorded on its
 * ManagedCluster as the `flotilla.dev/colo` annotation, by the HTTP heartbeat and by the channel's
 * connect, and written only when it changed: a heartbeat through the same location commits
 * nothing. An agent cannot name a location itself (the Worker sets or removes the header).
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { COLO_ANNOTATION } from "../../src/edge.ts";
import { call, dialChannel, MC, type AgentKeys, joined } from "./helpers.ts";

/** A heartbeat through the edge location `colo` (none: a request without `cf`), to the hub at `origin`. */
async function heartbeat(name: string, keys: AgentKeys, colo?: string, origin = "https://hub.test"): Promise<number> {
  const res = await exports.default.fetch(`${origin}/agent/v1/clusters/${name}/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${await keys.sign(name)}`, "content-type": "application/json", "x-flotilla-channel-colo": "EVIL" },
    body: JSON.stringify({ healthy: true }),
    ...(colo ? { cf: { colo } } : {}),
  });
  await res.text();
  return res.status;
}

async function cluster(name: string) {
  const r = await call("GET", `${MC}/${name}`);
  expect(r.status).toBe(200);
  return r.body as { metadata: { resourceVersion: string; annotations?: Record<string, string> } };
}

describe("the edge location of a cluster's agent", () => {
  it("a heartbeat records it, again only when it changes", async () => {
    const keys = await joined("edge-hb", { heartbeat: false });
    expect(await heartbeat("edge-hb", keys, "FRA")).toBe(200);
    const first = await cluster("edge-hb");
    expect(first.metadata.annotations?.[COLO_ANNOTATION]).toBe("FRA");
    expect(await heartbeat("edge-hb", keys, "FRA")).toBe(200);
    expect((await cluster("edge-hb")).metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    expect(await heartbeat("edge-hb", keys, "SJC")).toBe(200);
    const moved = await cluster("edge-hb");
    expect(moved.metadata.annotations?.[COLO_ANNOTATION]).toBe("SJC");
    expect(Number(moved.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion));
  });

  it("a local hub (wrangler dev: loopback or IP-literal host) records no canned location", async () => {
    const keys = await joined("edge-local", { heartbeat: false });
    for (const origin of ["http://127.0.0.1:8787", "https://localhost:8787", "http://[::1]:8787", "http://192.168.1.20:8787"]) {
      expect(await heartbeat("edge-local", keys, "DFW", origin)).toBe(200);
      expect((await cluster("edge-local")).metadata.annotations?.[COLO_ANNOTATION]).toBeUndefined();
    }
  });

  it("a heartbeat without a location leaves the recorded one", async () => {
    const keys = await joined("edge-none", { heartbeat: false });
    expect(await heartbeat("edge-none", keys, "NRT")).toBe(200);
    const before = await cluster("edge-none");
    expect(await heartbeat("edge-none", keys)).toBe(200);
    const after = await cluster("edge-none");
    expect(after.metadata.annotations?.[COLO_ANNOTATION]).toBe("NRT");
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("the channel's connect records it; a header the agent sends is not taken", async () => {
    const keys = await joined("edge-ws", { heartbeat: false });
    const forged = await dialChannel("edge-ws", await keys.sign("edge-ws"), { "x-flotilla-channel-colo": "EVIL" });
    expect(forged.status).toBe(101);
    forged.webSocket!.accept();
    forged.webSocket!.close(1000, "done");
    expect((await cluster("edge-ws")).metadata.annotations?.[COLO_ANNOTATION]).not.toBe("EVIL");
    const res = await dialChannel("edge-ws", await keys.sign("edge-ws"), { "x-flotilla-channel-colo": "EVIL" }, { colo: "AMS" });
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    expect((await cluster("edge-ws")).metadata.annotations?.[COLO_ANNOTATION]).toBe("AMS");
    res.webSocket!.close(1000, "done");
  });
});
