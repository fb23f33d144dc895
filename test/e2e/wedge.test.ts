/**
 * No object is wedged by its writers (issue 27, finding 1), against a real hub (`wrangler dev`):
 * the isolate is first driven through 3,000 writes (1,000 Placements and 2,000 Secrets, 16 in
 * flight), then 50 concurrent merge patches, each adding its own label, go to one Placement, one
 * ManifestWork and one Secret, and 50 agent status reports on one work race 50 admin patches of
 * it. Every request must be answered without a 5xx, every patch must be applied (all labels
 * present), and each object must take a PATCH and a DELETE afterwards. Writes to one object once
 * queued behind another request's promise in a module-level map; workerd cancelled the waiters
 * as hung and the key then answered 500 until the hub restarted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespaces, startHub, type Hub } from "../../scripts/hub-process.ts";
import {
  adminCall,
  appliedStatus,
  autoApproveToken,
  manifestWork,
  PATHS,
  pool,
  registerAgent,
  ServerErrors,
  statusOf,
  tokenOf,
  type LoadAgent,
} from "./load.ts";
import { merge } from "./support.ts";

const NS = "wedge";
const WRITERS = 50;

describe("concurrent writers never wedge an object (wrangler dev)", () => {
  let hub: Hub;
  let agent: LoadAgent;
  const errors = new ServerErrors();

  beforeAll(async () => {
    // A lease grace of 100 durations: the one heartbeat keeps the cluster Available through the run.
    hub = await startHub({ graceMultiplier: 100 });
    await createNamespaces(hub, NS);
    agent = await registerAgent(hub, await autoApproveToken(hub), "wedge-c1");
  });

  afterAll(async () => {
    await hub?.stop();
  });

  /** `WRITERS` concurrent merge patches of `path`, patch i adding label `k<i>`; answers their statuses. */
  const labelBurst = (path: string, n = WRITERS) =>
    Promise.all(
      Array.from({ length: n }, (_, i) => adminCall(hub, errors, "PATCH", path, { metadata: { labels: { [`k${i}`]: "v" } } }, merge).then((r) => r.status)),
    );

  /** Checks that every label of a burst is on the object at `path`, and that it takes a PATCH and a DELETE. */
  const expectAppliedAndWritable = async (path: string, n = WRITERS) => {
    const got = await adminCall(hub, errors, "GET", path);
    expect(got.status).toBe(200);
    const labels = got.body.metadata.labels ?? {};
    expect(Array.from({ length: n }, (_, i) => `k${i}`).filter((k) => labels[k] !== "v")).toEqual([]);
    expect((await adminCall(hub, errors, "PATCH", path, { metadata: { labels: { after: "yes" } } }, merge)).status).toBe(200);
    expect([200, 202]).toContain((await adminCall(hub, errors, "DELETE", path)).status);
  };

  it("takes 3,000 writes (1,000 Placements, 2,000 Secrets, 16 in flight)", async () => {
    const writes = [
      ...Array.from(
        { length: 1000 },
        (_, i) => () =>
          adminCall(hub, errors, "POST", PATHS.placements(NS), {
            apiVersion: "cluster.open-cluster-management.io/v1beta1",
            kind: "Placement",
            metadata: { name: `p-${i}` },
            spec: {},
          }),
      ),
      ...Array.from(
        { length: 2000 },
        (_, i) => () =>
          adminCall(hub, errors, "POST", PATHS.secrets(NS), { apiVersion: "v1", kind: "Secret", metadata: { name: `s-${i}` }, stringData: { i: String(i) } }),
      ),
    ];
    const refused: string[] = [];
    await pool(writes, 16, async (w, i) => {
      const r = await w();
      if (r.status !== 201) refused.push(`write ${i}: ${r.status}`);
    });
    expect(errors.seen).toEqual([]);
    expect(refused).toEqual([]);
  });

  it("applies 50 concurrent patches of one Placement, then takes a PATCH and a DELETE", async () => {
    const path = `${PATHS.placements(NS)}/p-7`;
    expect(new Set(await labelBurst(path))).toEqual(new Set([200]));
    await expectAppliedAndWritable(path);
    expect(errors.seen).toEqual([]);
  });

  it("applies 50 concurrent patches of one Secret, then takes a PATCH and a DELETE", async () => {
    const path = `${PATHS.secrets(NS)}/x`;
    expect(
      (await adminCall(hub, errors, "POST", PATHS.secrets(NS), { apiVersion: "v1", kind: "Secret", metadata: { name: "x" }, stringData: { a: "b" } })).status,
    ).toBe(201);
    expect(new Set(await labelBurst(path))).toEqual(new Set([200]));
    await expectAppliedAndWritable(path);
    expect(errors.seen).toEqual([]);
  });

  it("applies 50 concurrent patches of one ManifestWork, then takes a PATCH and a DELETE", async () => {
    const path = `${PATHS.works(agent.name)}/burst`;
    expect((await adminCall(hub, errors, "POST", PATHS.works(agent.name), manifestWork("burst"))).status).toBe(201);
    expect(new Set(await labelBurst(path))).toEqual(new Set([200]));
    await expectAppliedAndWritable(path);
    expect(errors.seen).toEqual([]);
  });

  it("takes 50 agent status reports on one work racing 50 admin patches of it", async () => {
    const path = `${PATHS.works(agent.name)}/reported`;
    const created = await adminCall(hub, errors, "POST", PATHS.works(agent.name), manifestWork("reported"));
    expect(created.status).toBe(201);
    const uid: string = created.body.metadata.uid;
    // A works poll first, so that the reports also take the path that writes on the delivered copy.
    const polled = await agent.client.getWorks(agent.name, await tokenOf(agent), undefined, 0);
    expect(polled.ok).toBe(true);
    const reports = Array.from({ length: WRITERS }, async (_, i) => {
      const r = await agent.client.putWorkStatus(agent.name, "reported", await tokenOf(agent), { uid, status: appliedStatus(1, `report ${i}`) });
      return statusOf(errors, `report ${i}`, r);
    });
    const [reported, patched] = await Promise.all([Promise.all(reports), labelBurst(path)]);
    expect(errors.seen).toEqual([]);
    expect(new Set(reported)).toEqual(new Set([200]));
    expect(new Set(patched)).toEqual(new Set([200]));
    const got = await adminCall(hub, errors, "GET", path);
    expect(got.body.status.conditions[0].message).toMatch(/^report \d+$/);
    // The agent's path is writable afterwards too.
    const again = await agent.client.putWorkStatus(agent.name, "reported", await tokenOf(agent), { uid, status: appliedStatus(1, "after") });
    expect(statusOf(errors, "report after", again)).toBe(200);
    await expectAppliedAndWritable(path);
    expect(errors.seen).toEqual([]);
  });

  it("logged no cancellation of hung code", () => {
    expect(hub.output()).not.toMatch(/had hung/);
  });
});
