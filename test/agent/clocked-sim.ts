/**
 * A simulated member cluster on an injected clock, for the tests of workloads coming up
 * (sim-ready.test.ts) and of the agent as KubeFleet's work applier (fleet-apply.test.ts): the
 * test moves the clock and runs the simulated controllers; no sleep decides an outcome.
 */
import type { KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { DynamicClient, type ObjectRef } from "../../agent/src/work/dynamic.ts";
import type { Obj } from "../../agent/src/work/types.ts";
import { startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** The clock's start, epoch ms. */
export const T0 = Date.parse("2026-11-29T12:00:00Z");
/** The agent's namespace (its records). */
export const AGENT_NS = "flotilla-agent";
export const DEPLOY = { group: "apps", version: "v1", resource: "deployments" };
export const STS = { group: "apps", version: "v1", resource: "statefulsets" };
export const DS = { group: "apps", version: "v1", resource: "daemonsets" };
export const JOB = { group: "batch", version: "v1", resource: "jobs" };
export const CM = { group: "", version: "v1", resource: "configmaps" };
export const SVC = { group: "", version: "v1", resource: "services" };

/** One object of a resource type. */
export const ref = (gvr: { group: string; version: string; resource: string }, namespace: string, name: string): ObjectRef => ({ ...gvr, namespace, name });

/** A dynamic client whose answers are typed loosely, for reading fields in assertions. */
export type JsonClient = { [K in keyof DynamicClient]: (...a: Json[]) => Promise<Json> };

/** A running clocked simulated cluster. */
export interface ClockedSim {
  cluster: SimulatedCluster;
  kc: KubeConfig;
  dyn: JsonClient;
  clock: { now: number };
  /** Moves the clock by `ms` and runs the simulated controllers. */
  advance: (ms: number) => void;
}

/**
 * Starts a simulated cluster whose workloads are ready `readyDelayMs` after a change, on a clock
 * starting at {@link T0}, with the agent's namespace; `onClose` receives its closing.
 */
export async function clockedSim(readyDelayMs: number, onClose: (fn: () => Promise<void>) => void): Promise<ClockedSim> {
  const clock = { now: T0 };
  const cluster = await startSimulatedCluster({ readyDelayMs, now: () => clock.now });
  onClose(() => cluster.close());
  const kc: KubeConfig = kubeConfigFromYaml(cluster.kubeconfigYaml);
  const dyn = new DynamicClient(kc) as unknown as JsonClient;
  await dyn.create({ group: "", version: "v1", resource: "namespaces" }, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: AGENT_NS } }, "test");
  const advance = (ms: number) => {
    clock.now += ms;
    cluster.reconcile();
  };
  return { cluster, kc, dyn, clock, advance };
}

/** A pod template labelled `app: name` with one container. */
export const podTemplate = (name: string, image: string) => ({ metadata: { labels: { app: name } }, spec: { containers: [{ name, image }] } });

/** A Deployment in `default`. */
export const deployment = (name: string, image: string, replicas = 2, annotations?: Record<string, string>): Obj => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace: "default", ...(annotations ? { annotations } : {}) },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: podTemplate(name, image) },
});
