/**
 * CLI for the simulated member cluster:
 *   node --import tsx agent/sim/main.ts [--port 0] [--state FILE] [--nodes 3] [--kubernetes-version v1.31.2] [--property name=value ...]
 * Prints `url: ...` and `kubeconfig: ...` on stdout and runs until SIGINT/SIGTERM.
 */
import { Command } from "commander";
import { startSimulatedCluster, type SimulatedClusterOptions } from "./index.ts";

const program = new Command()
  .name("flotilla-sim")
  .description("In-memory Kubernetes API server (simulated member cluster)")
  .option("--port <n>", "TCP port on 127.0.0.1 (0 = random)", "0")
  .option("--state <file>", "JSON state file: loaded at start, saved after every write")
  .option("--nodes <n>", "number of Nodes at first start", "3")
  .option("--kubernetes-version <v>", "version reported by /version", "v1.31.2")
  .option("--property <name=value...>", "ClusterProperty to create at first start (repeatable)");
program.parse();
const o = program.opts<{ port: string; state?: string; nodes: string; kubernetesVersion: string; property?: string[] }>();

const opts: SimulatedClusterOptions = { port: Number(o.port), nodes: Number(o.nodes), kubernetesVersion: o.kubernetesVersion };
if (o.state) opts.statePath = o.state;
if (o.property) {
  opts.clusterProperties = Object.fromEntries(
    o.property.map((p) => {
      const i = p.indexOf("=");
      return i < 0 ? [p, ""] : [p.slice(0, i), p.slice(i + 1)];
    }),
  );
}
const sim = await startSimulatedCluster(opts);
console.log(`url: ${sim.url}`);
console.log(`kubeconfig: ${sim.kubeconfigPath}`);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
