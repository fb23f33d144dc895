/**
 * A CPU profile of a hub's Worker isolate, taken through the inspector `wrangler dev` opens with
 * `--inspector-port` (the Chrome DevTools protocol's Profiler domain), for the benchmarks'
 * `BENCH_CPU_PROFILE` option: open the file in Chrome DevTools (Performance panel), or print its
 * top self time by source file and function with `npm run profile:top` (scripts/profile-top.ts).
 *
 * The Worker runs as one bundle (`index.js`, esbuild's), so a profile's frames name the bundle's
 * lines, not the source files. Beside the profile, `stop` writes `<file>.modules.json`: for each
 * bundle script the profile samples, the line at which each source module starts (esbuild's
 * `// src/...` comment before a module's code), read with the Debugger domain's
 * `getScriptSource` once the profile stopped (it costs the isolate nothing while it is measured).
 */
import { writeFileSync } from "node:fs";

/** A running profile: `stop()` ends it and writes the `.cpuprofile` JSON to `file`. */
export interface Profiling {
  stop(file: string): Promise<void>;
}

/**
 * Where each source module starts in the bundle scripts of a profile (`<file>.modules.json`), by
 * the profile's `scriptId`: `[line, path]` pairs, ascending by line (0-based, as the profile's
 * `callFrame.lineNumber`), `path` as esbuild names the module (`src/store/d1/write.ts`,
 * `node_modules/hono/dist/...`).
 */
export type ModuleMap = Record<string, [number, string][]>;

/**
 * The start line of each module in a bundle's `source` (esbuild's module comments: a line that is
 * exactly `// <path>` with a file extension), ascending (0-based lines).
 */
export function modulesOf(source: string): [number, string][] {
  const out: [number, string][] = [];
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^\/\/ ((?:\.\.\/)*[\w@.-][\w@./+-]*\.(?:[cm]?[jt]sx?|json|wasm))$/.exec(lines[i]!);
    if (m) out.push([i, m[1]!]);
  }
  return out;
}

/**
 * Connects to the inspector on `port` (wrangler's proxy; its first target is the Worker) and
 * starts the profiler, sampling every `intervalUs` microseconds (`BENCH_CPU_PROFILE_INTERVAL_US`
 * when set).
 * @throws Error when the inspector does not answer
 */
export async function startProfiling(port: number, intervalUs = Number(process.env.BENCH_CPU_PROFILE_INTERVAL_US ?? 500)): Promise<Profiling> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  // wrangler's inspector proxy accepts only connections that name a local origin.
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`inspector on port ${port}: no connection`));
  });
  let id = 0;
  const waiting = new Map<number, (r: { result?: unknown; error?: unknown }) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg);
  };
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<{ result?: unknown; error?: unknown }>((resolve) => {
      waiting.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  const send = async (method: string, params: Record<string, unknown> = {}) => (await call(method, params)).result;
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: intervalUs });
  await send("Profiler.start");
  return {
    async stop(file: string) {
      const r = (await send("Profiler.stop")) as { profile: { nodes: { callFrame: { scriptId: string; url: string } }[] } };
      writeFileSync(file, JSON.stringify(r.profile));
      const scripts = new Set(r.profile.nodes.filter((n) => n.callFrame.url.endsWith(".js")).map((n) => n.callFrame.scriptId));
      const modules: ModuleMap = {};
      if (scripts.size > 0) {
        await call("Debugger.enable");
        for (const scriptId of scripts) {
          const source = (await call("Debugger.getScriptSource", { scriptId })).result as { scriptSource?: string } | undefined;
          if (source?.scriptSource) modules[scriptId] = modulesOf(source.scriptSource);
        }
        await call("Debugger.disable");
      }
      writeFileSync(`${file}.modules.json`, JSON.stringify(modules));
      ws.close();
    },
  };
}
