/**
 * Kubernetes Events end to end: a hub on `wrangler dev` (HTTPS, for kubectl's token), a real agent
 * on a simulated cluster, and the real kubectl. `kubectl get events -A` and `kubectl describe mcl`
 * show the cluster's join, its lease expiries and recoveries in order, the repeats folded
 * ("x2"); `kubectl events --for placement/X -n NS` shows the placement's decision changes; every
 * Event is gone once FLOTILLA_EVENT_TTL_SECONDS passed after its last write, and not before.
 *
 * The expiry runs on a second hub started beside the first with a TTL of its own (the hub var
 * FLOTILLA_EVENT_TTL_SECONDS): long enough for a lease cycle to fold a repeat into its Event,
 * short enough to watch it expire in seconds; the first hub's TTL covers its whole scenario.
 */
import {} from "node:fs";
import {} from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubectlWith, startAgent, stopAgent, waitFor, type AgentProcess, scratchDir, writeAdminKubeconfig } from "./support.ts";

const { dir, file } = scratchDir("flotilla-events-");
/** The first hub's Events' TTL: long enough for its scenario under load. */
const TTL_SECONDS = 600;
/** The second hub's: longer than a lease cycle under load (a repeat folds into the Event), short enough to watch. */
const EXPIRY_TTL_SECONDS = 25;

let hub: Hub;
/** The second hub, on which the Events expire. */
let expiryHub: Hub;
let expiryAgent: AgentProcess | undefined;
let kubeconfig: string;
let agent: AgentProcess | undefined;
const state = path.join(dir, "ev1.json");
const { kubectl } = kubectlWith(() => kubeconfig, dir);

const available = async () =>
  (await kubectl("get", "mcl", "ev1", "-o", 'jsonpath={.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status}')).trim();

/** Stops the agent, waits for the lease to expire (Unknown), restarts it and waits for Available again. */
async function leaseCycle(): Promise<void> {
  await stopAgent(agent!);
  await waitFor("the lease to expire", async () => (await available()) === "Unknown", 60_000);
  agent = startAgent({ url: hub.url, caFile: hub.caFile }, ["--cluster-name", "ev1", "--simulate-state", state]);
  await waitFor("the cluster to recover", async () => (await available()) === "True", 60_000);
}

/** The Events section of `kubectl describe`: its rows' reason and age columns, in the order shown. */
function describedEvents(text: string): { type: string; reason: string; age: string; from: string; message: string }[] {
  const section = text.slice(text.indexOf("\nEvents:"));
  const lines = section
    .split("\n")
    .slice(3)
    .filter((l) => /^\s+(Normal|Warning)\s/.test(l));
  return lines.map((l) => {
    const [type, reason, ...rest] = l.trim().split(/\s{2,}/);
    return { type: type!, reason: reason!, age: rest[0] ?? "", from: rest[1] ?? "", message: rest.slice(2).join("  ") };
  });
}

beforeAll(async () => {
  [hub, expiryHub] = await Promise.all([
    startHub({ https: true, graceMultiplier: 2, env: { FLOTILLA_EVENT_TTL_SECONDS: String(TTL_SECONDS) } }),
    startHub({ graceMultiplier: 2, env: { FLOTILLA_EVENT_TTL_SECONDS: String(EXPIRY_TTL_SECONDS) } }),
  ]);
  kubeconfig = await writeAdminKubeconfig(hub, dir);
});

afterAll(async () => {
  if (agent) await stopAgent(agent);
  if (expiryAgent) await stopAgent(expiryAgent);
  await Promise.all([hub?.stop(), expiryHub?.stop()]);
}, 120_000);

// The two scenarios run side by side (`describe.concurrent`), each on its own hub and cluster (ev1,
// ev2): the expiry's wait for its TTL overlaps the first scenario's lease cycles.
describe.concurrent("Events through kubectl", () => {
  it("get events -A and describe mcl show the join, lease expiries and recoveries in order, folded; events --for shows a placement's decisions", async ({
    expect,
  }) => {
    await kubectl(
      "apply",
      "-f",
      file(
        "setup.yaml",
        [
          "apiVersion: v1",
          "kind: Namespace",
          "metadata:",
          "  name: evapps",
          "---",
          "apiVersion: cluster.open-cluster-management.io/v1beta2",
          "kind: ManagedClusterSet",
          "metadata:",
          "  name: evset",
          "---",
          "apiVersion: cluster.open-cluster-management.io/v1beta2",
          "kind: ManagedClusterSetBinding",
          "metadata:",
          "  name: evset",
          "  namespace: evapps",
          "spec:",
          "  clusterSet: evset",
          "---",
          "apiVersion: cluster.open-cluster-management.io/v1beta1",
          "kind: Placement",
          "metadata:",
          "  name: web",
          "  namespace: evapps",
          "spec: {}",
          "",
        ].join("\n"),
      ),
    );
    const token = await createBootstrapToken(hub);
    agent = startAgent({ url: hub.url, caFile: hub.caFile }, ["--cluster-name", "ev1", "--bootstrap-token", token, "--simulate-state", state]);
    await waitFor("the cluster to register", async () => (await kubectl("get", "mcl", "-o", "name")).includes("/ev1"));
    await kubectl(
      "patch",
      "mcl",
      "ev1",
      "--type",
      "merge",
      "-p",
      '{"metadata":{"labels":{"cluster.open-cluster-management.io/clusterset":"evset"}},"spec":{"hubAcceptsClient":true,"leaseDurationSeconds":1}}',
    );
    await waitFor("the cluster to be Available", async () => (await available()) === "True", 60_000);
    await leaseCycle();
    await leaseCycle();

    // kubectl get events -A, oldest last seen first: the join, then the lease expiry and the
    // recovery, each folded over the two cycles.
    const listed = await kubectl(
      "get",
      "events",
      "-A",
      "--sort-by=.lastTimestamp",
      "-o",
      "custom-columns=NS:.metadata.namespace,REASON:.reason,COUNT:.count,OBJECT:.involvedObject.name,MESSAGE:.message",
      "--field-selector",
      "involvedObject.kind=ManagedCluster",
    );
    const rows = listed
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => l.trim().split(/\s+/));
    const clusterRows = rows.filter((r) => r[3] === "ev1" && !r[1]!.startsWith("ManagedClusterTaint"));
    // (A lease with leaseDurationSeconds 1 may also expire once between the acceptance and the
    // agent's first heartbeat at that interval: then the repeats count one more.)
    const shown = clusterRows.map((r) => `${r[0]} ${r[1]} ${r[2]}`);
    expect(shown.slice(0, 4)).toEqual([
      "default ManagedClusterCreated 1",
      "default ManagedClusterAccepted 1",
      "default ManagedClusterJoined 1",
      "default ManagedClusterAvailable 1",
    ]);
    expect(shown.slice(4)).toHaveLength(2);
    expect(shown[4]).toMatch(/^default ManagedClusterLeaseUpdateStopped [23]$/);
    expect(shown[5]).toMatch(/^default ManagedClusterAvailable [23]$/);
    // The plain table kubectl prints (the server's Table): LAST SEEN, TYPE, REASON, OBJECT, MESSAGE.
    const table = await kubectl("get", "events", "-A");
    expect(table.split("\n")[0]).toMatch(/^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE/);
    expect(table).toMatch(
      /default\s+\S+\s+Warning\s+ManagedClusterLeaseUpdateStopped\s+managedcluster\/ev1\s+managed cluster ev1 available condition is unknown/,
    );
    // Listed in the order the Events were first recorded (their names, as client-go's): the
    // recovery, an Event of its own, after the join and the lease expiry.
    const lines = table.split("\n").filter((l) => l.includes("managedcluster/ev1"));
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(at(/ManagedClusterJoined/)).toBeGreaterThanOrEqual(0);
    expect(at(/available again/)).toBeGreaterThan(at(/ManagedClusterJoined/));
    expect(at(/available again/)).toBeGreaterThan(at(/ManagedClusterLeaseUpdateStopped/));

    // kubectl describe: the same Events about the cluster, by its uid, in order, "(x2 over ...)".
    const described = describedEvents(await kubectl("describe", "mcl", "ev1")).filter((e) => !e.reason.startsWith("ManagedClusterTaint"));
    expect(described.map((e) => e.reason)).toEqual([
      "ManagedClusterCreated",
      "ManagedClusterAccepted",
      "ManagedClusterJoined",
      "ManagedClusterAvailable",
      "ManagedClusterLeaseUpdateStopped",
      "ManagedClusterAvailable",
    ]);
    expect(described[4]).toMatchObject({ type: "Warning", from: "managed-cluster-lease-controller" });
    expect(described[4]!.age).toMatch(/\(x[23] over /);
    expect(described[5]!.age).toMatch(/\(x[23] over /);

    // kubectl events --for placement/web: the decision changes (the lease expiry's unreachable
    // taint removes the cluster, its recovery adds it back).
    const placementEvents = await kubectl("events", "--for", "placement/web", "-n", "evapps");
    expect(placementEvents.split("\n")[0]).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE/);
    expect(placementEvents).toMatch(/DecisionUpdate\s+Placement\/web\s+Decision \S+ updated: 1 added \(ev1\), 0 removed; 1 cluster decided/);
    expect(placementEvents).toMatch(/DecisionUpdate\s+Placement\/web\s+Decision \S+ updated: 0 added, 1 removed \(ev1\); 0 clusters decided/);
    expect(placementEvents).not.toMatch(/ManagedCluster/);
  }, 600_000);

  it("every Event is gone one TTL after its last write (a folded repeat's included), not before", async ({ expect }) => {
    const EV = "/api/v1/events";
    const MCL = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
    const state2 = path.join(dir, "ev2.json");
    const available2 = async () =>
      ((await admin(expiryHub, "GET", `${MCL}/ev2`)).body?.status?.conditions ?? []).find(
        (c: { type: string }) => c.type === "ManagedClusterConditionAvailable",
      )?.status;
    const token = await createBootstrapToken(expiryHub);
    expiryAgent = startAgent(expiryHub, ["--cluster-name", "ev2", "--bootstrap-token", token, "--simulate-state", state2]);
    await waitFor("the cluster to register", async () => (await admin(expiryHub, "GET", `${MCL}/ev2`)).status === 200);
    const accept = await admin(expiryHub, "PATCH", `${MCL}/ev2`, { spec: { hubAcceptsClient: true, leaseDurationSeconds: 1 } }, "application/merge-patch+json");
    expect(accept.status).toBe(200);
    await waitFor("the cluster to be Available", async () => (await available2()) === "True", 60_000);
    // A lease cycle, then the agent stopped for good: the lease expiry's Event is written twice (folded).
    await stopAgent(expiryAgent);
    await waitFor("the lease to expire", async () => (await available2()) === "Unknown", 60_000);
    expiryAgent = startAgent(expiryHub, ["--cluster-name", "ev2", "--simulate-state", state2]);
    await waitFor("the cluster to recover", async () => (await available2()) === "True", 60_000);
    await stopAgent(expiryAgent);
    expiryAgent = undefined;
    await waitFor("the lease to expire once more", async () => (await available2()) === "Unknown", 60_000);
    const expiries = async () =>
      ((await admin(expiryHub, "GET", `${EV}?fieldSelector=reason%3DManagedClusterLeaseUpdateStopped`)).body?.items ?? [])[0]?.count ?? 0;
    await waitFor("the expiry's repeat to be folded into its Event", async () => (await expiries()) >= 2);
    const events = (await admin(expiryHub, "GET", EV)).body.items as { lastTimestamp: string }[];
    const last = Math.max(...events.map((e) => Date.parse(e.lastTimestamp)));
    await waitFor(
      "every Event to expire",
      async () => ((await admin(expiryHub, "GET", EV)).body.items ?? []).length === 0,
      (EXPIRY_TTL_SECONDS + 120) * 1000,
      1_000,
    );
    // Not before their TTL (lastTimestamp has whole seconds: 1 s of slack).
    expect(Date.now() - last).toBeGreaterThanOrEqual((EXPIRY_TTL_SECONDS - 1) * 1000);
    expect((await admin(expiryHub, "GET", "/apis/events.k8s.io/v1/events")).body.items).toEqual([]);
  }, 300_000);
});
