/**
 * A CPU profile of a hub's Worker isolate, taken through the inspector `wrangler dev` opens with
 * `--inspector-port` (the Chrome DevTools protocol's Profiler domain), for the benchmarks'
 * `BENCH_CPU_PROFILE` option: open the file in Chrome DevTools (Performance panel).
 */
import { writeFileSync } from "node:fs";

/** A running profile: `stop()` ends it and writes the `.cpuprofile` JSON to `file`. */
export interface Profiling {
  stop(file: string): Promise<void>;
}

/**
 * Connects to the inspector on `port` (wrangler's proxy; its first target is the Worker) and
 * starts the profiler, sampling every `intervalUs` microseconds.
 * @throws Error when the inspector does not answer
 */
export async function startProfiling(port: number, intervalUs = 500): Promise<Profiling> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  // wrangler's inspector proxy accepts only connections that name a local origin.
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`inspector on port ${port}: no connection`));
  });
  let id = 0;
  const waiting = new Map<number, (r: unknown) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
  };
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve) => {
      waiting.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: intervalUs });
  await send("Profiler.start");
  return {
    async stop(file: string) {
      const r = (await send("Profiler.stop")) as { profile: unknown };
      writeFileSync(file, JSON.stringify(r.profile));
      ws.close();
    },
  };
}
