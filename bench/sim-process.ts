/**
 * The bundled simulated member cluster (`dist/agent/flotilla-sim.mjs`, `npm run build`) as a child
 * process, for the agent benchmarks (bench/agent.ts, bench/ws-client.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Starts the simulated cluster with its state in `dir`/sim.json and resolves once it printed the
 * path of its kubeconfig.
 * @throws Error when the process exits first
 */
export async function startSim(dir: string): Promise<{ child: ChildProcess; kubeconfig: string }> {
  const child = spawn(process.execPath, [path.join(root, "dist/agent/flotilla-sim.mjs"), "--state", path.join(dir, "sim.json")], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const kubeconfig = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /kubeconfig: (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`simulated cluster exited with ${code}`)));
  });
  return { child, kubeconfig };
}
