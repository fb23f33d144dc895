/**
 * The simulated member cluster: an in-memory Kubernetes API server speaking the real REST protocol
 * over HTTP on 127.0.0.1 (the stand-in for kube-apiserver in tests, like kwok), so that the agent's
 * real `@kubernetes/client-node` code and `kubectl` can be pointed at it through a kubeconfig.
 *
 * Module map: `store` (objects, resourceVersion, persistence), `resources` (types + discovery),
 * `cluster` (API semantics, GC), `ssa` (server-side apply), `patch`, `selectors`, `validation`,
 * `controllers` (seeding + status controllers), `table` (kubectl tables), `openapi`, `server` (HTTP).
 *
 * Workloads come up as kwok's stages bring them: a Deployment, StatefulSet, DaemonSet or
 * ReplicaSet is observed at once with its replicas not ready, and ready `readyDelayMs` later (a
 * Job completes, a Pod runs); a bad image (tag `bad...`) is never ready (controllers.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify as toYaml } from "yaml";
import { SimAuth, type UserInfo } from "./auth.ts";
import { Cluster } from "./cluster.ts";
import { createHandler } from "./server.ts";
import { Store } from "./store.ts";
import { SimStreams } from "./stream.ts";

/** Options of {@link startSimulatedCluster}. */
export interface SimulatedClusterOptions {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Reported by `/version` and as the Nodes' kubelet version. Default `v1.31.2`. */
  kubernetesVersion?: string;
  /**
   * Number of Nodes created at first start (default 3), named `sim-node-1..N`, each with capacity
   * cpu "4", memory "16Gi", pods "110" and allocatable cpu "3800m", memory "15Gi", pods "110".
   */
  nodes?: number;
  /**
   * When set, the whole store (including the kube-system UID and Secrets) is loaded from this JSON
   * file at start if it exists, and saved to it after every write (write to a temp file + rename),
   * so a restarted simulator is the same cluster. Seeding options are ignored when the file exists.
   */
  statePath?: string;
  /** ClusterProperty objects (about.k8s.io/v1beta1, name → `spec.value`) created at first start. */
  clusterProperties?: Record<string, string>;
  /**
   * Users authenticated by bearer token (token → user), like kube-apiserver's
   * `--token-auth-file`; their requests, and impersonated ones, are authorized by the RBAC
   * objects stored in the cluster (auth.ts). A request without credentials is the cluster admin.
   */
  users?: Record<string, UserInfo>;
  /**
   * Milliseconds until a workload's replicas are ready after the simulated controllers first see
   * its generation (a Job completes, a Pod runs), as kwok's stages with a delay; default 0 (at
   * once). Per object: annotation `sim.flotilla.dev/ready-delay` (milliseconds). A workload whose
   * image tag starts with `bad` (`nginx:bad`) or annotated `sim.flotilla.dev/never-ready: "true"`
   * is never ready.
   */
  readyDelayMs?: number;
  /**
   * The clock (epoch milliseconds) readiness is judged by; default `Date.now`. When given, no
   * timer runs: move the clock, then call {@link SimulatedCluster.reconcile}.
   */
  now?: () => number;
}

/** A running simulated cluster. */
export interface SimulatedCluster {
  /** Base URL, `http://127.0.0.1:PORT`. */
  url: string;
  /**
   * Path of a kubeconfig (in a fresh temp dir) with cluster/context/user "simulated" pointing at `url`,
   * no auth, `insecure-skip-tls-verify: true` (required by client-node 2.x for http:// servers).
   */
  kubeconfigPath: string;
  /** The same kubeconfig as YAML text. */
  kubeconfigYaml: string;
  /** Runs the simulated controllers now (workloads whose delay has passed become ready); for an injected clock. */
  reconcile(): void;
  /** When false, `/livez`, `/healthz` and `/readyz` answer HTTP 500 (the API itself keeps working). */
  setHealthy(healthy: boolean): void;
  /** Stops listening, ends open watches and removes the kubeconfig temp dir. Resolves when the port is free. */
  close(): Promise<void>;
}

/** Builds the kubeconfig YAML for a cluster served at `url` (cluster, context and user all named "simulated"). */
export function kubeconfigFor(url: string): string {
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    // client-node 2.x refuses plain-HTTP servers unless the cluster entry sets insecure-skip-tls-verify.
    clusters: [{ name: "simulated", cluster: { server: url, "insecure-skip-tls-verify": true } }],
    contexts: [{ name: "simulated", context: { cluster: "simulated", user: "simulated", namespace: "default" } }],
    "current-context": "simulated",
    users: [{ name: "simulated", user: {} }],
    preferences: {},
  });
}

/**
 * Starts a simulated cluster and resolves once it is listening. Rejects if the state file is
 * unreadable or the port is taken.
 */
export async function startSimulatedCluster(opts: SimulatedClusterOptions = {}): Promise<SimulatedCluster> {
  const kubernetesVersion = opts.kubernetesVersion ?? "v1.31.2";
  const store = new Store(opts.statePath);
  const cluster = new Cluster(store, {
    ...(opts.readyDelayMs !== undefined ? { readyDelayMs: opts.readyDelayMs } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  });
  if (!store.loaded) cluster.seed({ kubernetesVersion, nodes: opts.nodes ?? 3, clusterProperties: opts.clusterProperties ?? {} });
  // A restarted cluster's workloads that were still coming up get their delay (and timer) again.
  else cluster.reconcile();
  let healthy = true;
  let address = "127.0.0.1:0";
  const auth = new SimAuth(cluster, opts.users);
  const streams = new SimStreams(cluster, auth);
  const server: Server = createServer(
    createHandler({ cluster, auth, kubernetesVersion, healthy: () => healthy, address: () => address, streams: streams.stats }),
  );
  // exec, attach and port-forward over WebSocket (stream.ts).
  server.on("upgrade", (req, socket, head) => streams.upgrade(req, socket, head));
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  address = `127.0.0.1:${port}`;
  const url = `http://${address}`;
  const dir = mkdtempSync(join(tmpdir(), "flotilla-sim-"));
  const kubeconfigPath = join(dir, "kubeconfig.yaml");
  const kubeconfigYaml = kubeconfigFor(url);
  writeFileSync(kubeconfigPath, kubeconfigYaml);
  return {
    url,
    kubeconfigPath,
    kubeconfigYaml,
    reconcile: () => cluster.reconcile(),
    setHealthy(h: boolean) {
      healthy = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        cluster.stop();
        streams.close();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
