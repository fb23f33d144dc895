/**
 * The simulated cluster brings workloads to ready as kwok's stages with a delay do
 * (agent/sim/controllers.ts, cluster.ts): observed at once, ready after the delay, a spec change
 * starting again, a bad image never ready; judged by the agent's availability rules
 * (agent/src/work/availability.ts). On an injected clock: no sleep decides an outcome.
 */
import { afterEach, describe, expect, it } from "vitest";
import { trackAvailability } from "../../agent/src/work/availability.ts";
import { isBadImage, neverReady } from "../../agent/sim/controllers.ts";
import { clockedSim as start, deployment, DEPLOY, DS, JOB, podTemplate, ref, STS, type Json } from "./clocked-sim.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});
const clockedSim = (readyDelayMs: number) => start(readyDelayMs, (fn) => cleanups.push(fn));

describe("the simulated cluster brings workloads to ready after a delay, as kwok", () => {
  it("a Deployment is observed at once, ready after the delay; a spec change starts again; a bad image is never ready", async () => {
    const { dyn, advance } = await clockedSim(1000);
    await dyn.create(DEPLOY, "default", deployment("web", "nginx:1.27", 3), "test");
    let d = await dyn.get(ref(DEPLOY, "default", "web"));
    expect(d.status).toMatchObject({ observedGeneration: 1, replicas: 3, updatedReplicas: 3, unavailableReplicas: 3 });
    expect(d.status.readyReplicas).toBeUndefined();
    expect(trackAvailability(DEPLOY, d)).toBe("ManifestNotAvailableYet");
    advance(999);
    expect((await dyn.get(ref(DEPLOY, "default", "web"))).status.readyReplicas).toBeUndefined();
    advance(1);
    d = await dyn.get(ref(DEPLOY, "default", "web"));
    expect(d.status).toMatchObject({ observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 });
    expect(d.status.conditions.find((c: Json) => c.type === "Available")?.status).toBe("True");
    expect(trackAvailability(DEPLOY, d)).toBe("Available");
    // A new image: generation 2, not ready until the delay passed again.
    await dyn.mergePatch(ref(DEPLOY, "default", "web"), { spec: { template: { spec: { containers: [{ name: "web", image: "nginx:1.28" }] } } } }, "test");
    d = await dyn.get(ref(DEPLOY, "default", "web"));
    expect(d.metadata.generation).toBe(2);
    expect(d.status.observedGeneration).toBe(2);
    expect(trackAvailability(DEPLOY, d)).toBe("ManifestNotAvailableYet");
    advance(1000);
    expect(trackAvailability(DEPLOY, await dyn.get(ref(DEPLOY, "default", "web")))).toBe("Available");
    // A bad image (tag `bad...`), or the never-ready annotation, is never ready.
    await dyn.mergePatch(ref(DEPLOY, "default", "web"), { spec: { template: { spec: { containers: [{ name: "web", image: "nginx:bad" }] } } } }, "test");
    await dyn.create(DEPLOY, "default", deployment("stuck", "nginx:1.27", 1, { "sim.flotilla.dev/never-ready": "true" }), "test");
    advance(3_600_000);
    expect(trackAvailability(DEPLOY, await dyn.get(ref(DEPLOY, "default", "web")))).toBe("ManifestNotAvailableYet");
    expect((await dyn.get(ref(DEPLOY, "default", "stuck"))).status.availableReplicas).toBeUndefined();
    // Per-object delay (annotation) and zero replicas (nothing to wait for).
    await dyn.create(DEPLOY, "default", deployment("slow", "nginx:1.27", 1, { "sim.flotilla.dev/ready-delay": "5000" }), "test");
    await dyn.create(DEPLOY, "default", deployment("none", "nginx:1.27", 0), "test");
    expect(trackAvailability(DEPLOY, await dyn.get(ref(DEPLOY, "default", "none")))).toBe("Available");
    advance(4999);
    expect(trackAvailability(DEPLOY, await dyn.get(ref(DEPLOY, "default", "slow")))).toBe("ManifestNotAvailableYet");
    advance(1);
    expect(trackAvailability(DEPLOY, await dyn.get(ref(DEPLOY, "default", "slow")))).toBe("Available");
  });

  it("StatefulSets, DaemonSets and Jobs come up after the delay too; a watch sees the change", async () => {
    const { dyn, advance, cluster } = await clockedSim(500);
    const seen: string[] = [];
    const ac = new AbortController();
    cleanups.push(() => ac.abort());
    // The watch is open (its headers came) before anything is created.
    const res = await fetch(`${cluster.url}/apis/apps/v1/namespaces/default/statefulsets?watch=true`, { signal: ac.signal });
    const watching = (async () => {
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.trim()) seen.push(String(JSON.parse(line).object?.status?.readyReplicas ?? 0));
        }
      }
    })().catch(() => undefined);
    await dyn.create(
      STS,
      "default",
      { apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "db" }, spec: { replicas: 2, template: podTemplate("db", "pg:16") } },
      "t",
    );
    await dyn.create(
      DS,
      "default",
      { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "agent" }, spec: { template: podTemplate("agent", "a:1") } },
      "t",
    );
    await dyn.create(
      JOB,
      "default",
      { apiVersion: "batch/v1", kind: "Job", metadata: { name: "once" }, spec: { template: podTemplate("once", "busybox:1") } },
      "t",
    );
    await dyn.create(
      JOB,
      "default",
      { apiVersion: "batch/v1", kind: "Job", metadata: { name: "never" }, spec: { template: podTemplate("never", "busybox:bad") } },
      "t",
    );
    expect(trackAvailability(STS, await dyn.get(ref(STS, "default", "db")))).toBe("ManifestNotAvailableYet");
    expect(trackAvailability(DS, await dyn.get(ref(DS, "default", "agent")))).toBe("ManifestNotAvailableYet");
    expect((await dyn.get(ref(JOB, "default", "once"))).status).toMatchObject({ active: 1 });
    advance(500);
    const db = await dyn.get(ref(STS, "default", "db"));
    expect(db.status).toMatchObject({ readyReplicas: 2, availableReplicas: 2, currentReplicas: 2, updatedReplicas: 2 });
    expect(db.status.currentRevision).toBe(db.status.updateRevision);
    expect(trackAvailability(STS, db)).toBe("Available");
    expect(trackAvailability(DS, await dyn.get(ref(DS, "default", "agent")))).toBe("Available");
    expect((await dyn.get(ref(JOB, "default", "once"))).status.conditions.find((c: Json) => c.type === "Complete")?.status).toBe("True");
    expect((await dyn.get(ref(JOB, "default", "never"))).status.conditions).toBeUndefined();
    await expect.poll(() => seen.includes("2")).toBe(true);
    ac.abort();
    await watching;
  });

  it("a bad image is a tag starting with `bad`", () => {
    expect([
      isBadImage("nginx:bad"),
      isBadImage("reg.io:5000/app:bad-2"),
      isBadImage("reg.io:5000/badger"),
      isBadImage("nginx:1.2"),
      isBadImage("bad"),
    ]).toEqual([true, true, false, false, false]);
    expect(
      neverReady({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", uid: "u", resourceVersion: "1", creationTimestamp: "" },
        spec: { containers: [{ image: "x:bad" }] },
      }),
    ).toBe(true);
  });
});
