/**
 * The test kit's member clusters: agents started together against a hub a test started
 * (scripts/hub-process.ts `startHub`), each registered with a bootstrap token, accepted by the
 * admin (OCM's `hubAcceptsClient`, with the labels the test gives it) and awaited until the hub
 * says `ManagedClusterConditionAvailable=True`. Node only.
 */
import path from "node:path";
import { expect } from "vitest";
import { admin, createBootstrapToken, type Hub } from "../../scripts/hub-process.ts";
import { waitFor } from "../wait.ts";
import { startAgent, stopAgent, type AgentProcess } from "./agents.ts";
import { MC, MERGE_PATCH } from "./api.ts";

const AVAILABLE = "ManagedClusterConditionAvailable";

/** One member cluster a test joins to its hub. */
export interface Member {
  /** The ManagedCluster's name (`--cluster-name`). */
  name: string;
  /** The labels the admin's acceptance sets on the ManagedCluster (a JSON merge patch); none by default. */
  labels?: Record<string, string>;
  /** Further `spec` fields of the acceptance patch besides `hubAcceptsClient: true`, e.g. `leaseDurationSeconds`. */
  spec?: Record<string, unknown>;
  /**
   * The agent's CLI arguments after `--cluster-name` and `--bootstrap-token`. Default: a simulated
   * cluster whose state file is `<stateDir>/<name>.json` (`--simulate-state`).
   */
  args?: string[];
  /** False when {@link args} name a real member cluster (e.g. `--kubeconfig`) rather than `--simulate`; default true. */
  simulate?: boolean;
}

/** Where {@link joinMembers} starts its agents, and with which token. */
export interface JoinOptions {
  /**
   * A bootstrap token's secret (`createBootstrapToken`). Default: a new token with `autoApprove`,
   * so that an agent is accepted as it registers and does not wait for its next acceptance poll
   * (5 s, agent/src/agent.ts `acceptancePollMs`); the admin's acceptance patch then sets the labels.
   */
  token?: string;
  /** The folder of the simulated clusters' state files (for members without {@link Member.args}). */
  stateDir?: string;
  /** The list the agents are pushed to as they start, so that `afterAll` stops them even when joining fails. */
  agents: AgentProcess[];
}

/**
 * Joins `members` to `hub`: starts their agents all at once (with {@link JoinOptions.token}), then,
 * for each as soon as its ManagedCluster exists, accepts it with its labels (the PATCH must answer
 * 200), and waits until every one of them is `ManagedClusterConditionAvailable=True`.
 * @throws Error (or a failed expectation) when an agent does not register, an acceptance is refused
 *   or the members do not turn Available within 60 s each.
 */
export async function joinMembers(hub: Hub, members: readonly Member[], opts: JoinOptions): Promise<void> {
  const token = opts.token ?? (await createBootstrapToken(hub, { autoApprove: true }));
  for (const m of members) {
    const args = m.args ?? ["--simulate-state", path.join(opts.stateDir ?? ".", `${m.name}.json`)];
    opts.agents.push(startAgent(hub, ["--cluster-name", m.name, "--bootstrap-token", token, ...args], m.simulate ?? true));
  }
  await Promise.all(members.map((m) => accept(hub, m)));
  const names = new Set(members.map((m) => m.name));
  await waitFor("the members Available", async () => {
    const items = (await admin(hub, "GET", MC)).body.items as { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
    const available = items.filter((mc) => names.has(mc.metadata.name) && mc.status?.conditions?.some((c) => c.type === AVAILABLE && c.status === "True"));
    return available.length === names.size;
  });
}

/**
 * Waits until the agent of `m` registered (its ManagedCluster exists), then accepts it as the
 * admin does: a merge patch of `metadata.labels` and `spec.hubAcceptsClient: true` that must answer 200.
 */
export async function accept(hub: Hub, m: Pick<Member, "name" | "labels" | "spec">): Promise<void> {
  await waitFor(`${m.name} to register`, async () => (await admin(hub, "GET", `${MC}/${m.name}`)).status === 200);
  const patch = { ...(m.labels ? { metadata: { labels: m.labels } } : {}), spec: { hubAcceptsClient: true, ...m.spec } };
  expect((await admin(hub, "PATCH", `${MC}/${m.name}`, patch, MERGE_PATCH)).status).toBe(200);
}

/**
 * Waits until exactly `count` ManagedClusters of `hub` (of those `GET <listPath>` returns: all by
 * default, or a label-selected list) have `ManagedClusterConditionAvailable=True`.
 * @throws Error after 60 s
 */
export async function waitAvailable(hub: Hub, count: number, listPath = MC): Promise<void> {
  await waitFor("the members Available", async () => {
    const items = (await admin(hub, "GET", listPath)).body.items as { status?: { conditions?: { type: string; status: string }[] } }[];
    return items.filter((mc) => mc.status?.conditions?.some((c) => c.type === AVAILABLE && c.status === "True")).length === count;
  });
}

/** Stops `agents` (SIGTERM, all at once, each exit awaited) and then `hub`, as a test file's `afterAll` does; a hub not started is skipped. */
export async function stopAll(agents: readonly AgentProcess[], hub: Hub | undefined): Promise<void> {
  await Promise.all(agents.map(stopAgent));
  await hub?.stop();
}

/**
 * Creates ManagedCluster `name` with `labels`, accepted (`hubAcceptsClient: true`; the create must
 * answer 201), and marks it `ManagedClusterConditionAvailable=True` (reason
 * `ManagedClusterAvailable`) by a merge patch of its status that must answer 200, as its agent's
 * heartbeat would say: no agent runs. A cluster not Available is tainted, and not picked by a placement.
 */
export async function createAvailableCluster(hub: Hub, name: string, labels: Record<string, string> = {}): Promise<void> {
  const r = await admin(hub, "POST", MC, {
    apiVersion: "cluster.open-cluster-management.io/v1",
    kind: "ManagedCluster",
    metadata: { name, labels },
    spec: { hubAcceptsClient: true },
  });
  expect(r.status).toBe(201);
  const available = {
    type: "ManagedClusterConditionAvailable",
    status: "True",
    reason: "ManagedClusterAvailable",
    message: "test",
    lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  expect((await admin(hub, "PATCH", `${MC}/${name}/status`, { status: { conditions: [available] } }, MERGE_PATCH)).status).toBe(200);
}
