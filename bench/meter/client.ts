/**
 * The benchmarks' side of the metered hub (bench/meter/worker.ts, `/__meter`): its counts, read
 * or zeroed, and read once they stopped moving; and the hub's workerd CPU time. One copy for
 * every bench that starts the metered hub.
 */
import { procStat } from "../../scripts/proc.mjs";
import { workerdPids, type Hub } from "../../scripts/hub-process.ts";
import type { MeterCounts } from "./counts.ts";

/**
 * The metered hub's counts so far; with `reset`, zeroed first (a POST).
 * @throws Error when the hub is not the metered one (`/__meter` answers other than 200)
 */
export async function meter(hub: Hub, reset = false): Promise<MeterCounts> {
  const res = await fetch(`${hub.url}/__meter`, { method: reset ? "POST" : "GET" });
  if (res.status !== 200) throw new Error(`the hub is not the metered one (bench/meter/worker.ts): /__meter answered ${res.status}`);
  return (await res.json()) as MeterCounts;
}

/**
 * The meter once it stopped moving: three equal readings 150 ms apart, at most `maxReadings`
 * readings (150 ms each), so alarms, audit writes and follow-ups are counted.
 * @throws Error as {@link meter}
 */
export async function settledMeter(hub: Hub, maxReadings = 200): Promise<MeterCounts> {
  let last = JSON.stringify(await meter(hub));
  for (let i = 0, same = 0; i < maxReadings && same < 3; i++) {
    await new Promise((r) => setTimeout(r, 150));
    const now = JSON.stringify(await meter(hub));
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return JSON.parse(last) as MeterCounts;
}

/** CPU time (user + system) of the hub's workerd processes so far, in milliseconds (Linux /proc). */
export function workerdCpuMs(hub: Hub): number {
  return workerdPids(hub).reduce((ms, pid) => ms + (procStat(pid)?.cpuMs ?? 0), 0);
}
