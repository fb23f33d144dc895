/**
 * The benchmarks' channel fleet (bench:propagation and bench:heartbeat over the ws transport): N
 * simulated agents, each registered with its own key and holding its own WebSocket to the hub's
 * channel (docs/agent-protocol.md "Channel"), split across child processes
 * (bench/channel-fleet-process.ts, which says what each agent does on the wire). One process here
 * may hold 20,000 file descriptors (`ulimit -Hn`), one per socket, so 10,000 agents go into
 * several processes of at most {@link MAX_AGENTS_PER_PROCESS}.
 *
 * Also: where the local hub's processes are and what they hold ({@link hubProcesses},
 * {@link descriptors}), and the Worker's own address behind `wrangler dev`'s proxy
 * ({@link entryUrl}).
 *
 * @example
 * const fleet = await ChannelFleet.start(names);
 * await fleet.register(hub.url, bootstrapToken);
 * await fleet.connect(hub.url);           // every agent welcomed and its status acknowledged
 * const times = await fleet.reported(2);  // when each agent's report of generation 2 was acknowledged
 * await fleet.stop();
 */
import { fork, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { HeartbeatRequest } from "../src/agent-api/protocol.ts";
import { descendants } from "../scripts/proc.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Most agents (sockets) one fleet process holds: a quarter of its 20,000 descriptors left for the rest. */
export const MAX_AGENTS_PER_PROCESS = 5_000;

/** A command to a fleet process (bench/channel-fleet-process.ts); every one is answered with a {@link FleetReply}. */
export type FleetCommand =
  /** Generates a key for each agent; `status` is the heartbeat body its status messages carry. */
  | { cmd: "init"; names: string[]; status?: HeartbeatRequest }
  /** Registers every agent with the bootstrap token, `concurrency` at a time. */
  | { cmd: "register"; url: string; token: string; concurrency: number }
  /** Connects every agent to `url` (http: base), `concurrency` at a time; answers once each was welcomed and its status acknowledged. */
  | { cmd: "connect"; url: string; concurrency: number; timeoutMs: number }
  /** Dials `url` from now on (a restarted Worker's new address). */
  | { cmd: "target"; url: string }
  /** Answers once every agent had its report of `generation` acknowledged (of work `work` only, when given): the times. */
  | { cmd: "reported"; generation: number; timeoutMs: number; work?: string }
  /** Answers once every agent is connected on a connection welcomed at or after `since` (epoch ms): the welcome times. */
  | { cmd: "connected"; since: number; timeoutMs: number }
  /** The counts of this process (see {@link FleetStats}). */
  | { cmd: "stats" }
  /** Closes every connection and stops reconnecting. */
  | { cmd: "close" };

/** A fleet process's answer to the command with the same `id`. */
export type FleetReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** When one agent got a work generation and when the hub acknowledged its report of it (epoch ms). */
export interface AgentTimes {
  woken: number;
  done: number;
}

/** What the fleet's processes counted since they started. */
export interface FleetStats {
  /** Agents with a welcomed connection now. */
  connected: number;
  /** Failed dials, by HTTP status or by error message (digits as N). */
  dialFailures: Record<string, number>;
  /** Closed connections, by close code. */
  closes: Record<string, number>;
  /** Requests (status, report) answered with an `error`, by the Status code. */
  refusals: Record<string, number>;
  /** Connections dropped because a ping went without its pong for a lease interval. */
  deadConnections: number;
  /** Hub frames the agent's decoder refused. */
  malformed: number;
  /** Work status reports the hub acknowledged (an `ack`, stale ones included; refusals are counted apart). */
  reportsAcked: number;
}

/** Splits `names` into `processes` shares of nearly equal size. */
function shares(names: string[], processes: number): string[][] {
  const out: string[][] = Array.from({ length: processes }, () => []);
  names.forEach((n, i) => out[i % processes]!.push(n));
  return out;
}

/** One fleet process and its pending commands. */
class FleetProcess {
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited: string | undefined;

  constructor(readonly child: ChildProcess) {
    child.on("message", (reply: FleetReply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if (reply.ok) w.resolve(reply.result);
      else w.reject(new Error(reply.error));
    });
    child.on("exit", (code, signal) => {
      this.exited = `a fleet process exited (${code ?? signal})`;
      for (const w of this.waiting.values()) w.reject(new Error(this.exited));
      this.waiting.clear();
    });
  }

  send<T>(cmd: FleetCommand): Promise<T> {
    if (this.exited) return Promise.reject(new Error(this.exited));
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, ...cmd });
    });
  }
}

/** N simulated channel agents across child processes; see the module comment. */
export class ChannelFleet {
  private constructor(
    private readonly procs: FleetProcess[],
    /** The agents' names, in the order of {@link reported}'s and {@link connected}'s times per process. */
    readonly size: number,
  ) {}

  /**
   * Forks `processes` fleet processes (default: enough for {@link MAX_AGENTS_PER_PROCESS} each,
   * at least 2 from 2,000 agents on) and generates each agent's key.
   * @param status the heartbeat body the agents' status messages carry (default `{healthy: true}`).
   */
  static async start(names: string[], opts: { processes?: number; status?: HeartbeatRequest } = {}): Promise<ChannelFleet> {
    const n = opts.processes ?? Math.max(names.length >= 2_000 ? 2 : 1, Math.ceil(names.length / MAX_AGENTS_PER_PROCESS));
    const split = shares(names, n);
    const procs = split.map(
      () =>
        new FleetProcess(
          fork(path.join(here, "channel-fleet-process.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] }),
        ),
    );
    const fleet = new ChannelFleet(procs, names.length);
    await Promise.all(procs.map((p, i) => p.send({ cmd: "init", names: split[i]!, status: opts.status })));
    return fleet;
  }

  /** How many processes hold the agents. */
  get processes(): number {
    return this.procs.length;
  }

  private all<T>(cmd: FleetCommand | ((i: number) => FleetCommand)): Promise<T[]> {
    return Promise.all(this.procs.map((p, i) => p.send<T>(typeof cmd === "function" ? cmd(i) : cmd)));
  }

  /** Registers every agent at `url` with `token` (a bootstrap token with autoApprove), `concurrency` at a time in all. */
  async register(url: string, token: string, concurrency = 16): Promise<void> {
    await this.all({ cmd: "register", url, token, concurrency: Math.max(1, Math.round(concurrency / this.procs.length)) });
  }

  /**
   * Connects every agent to `url` (the Worker's http: base), `concurrency` dials at a time in all,
   * and waits until each was welcomed and its first status acknowledged (the cluster joined).
   * @throws Error when one did not within `timeoutMs` milliseconds
   */
  async connect(url: string, concurrency = 32, timeoutMs = 600_000): Promise<void> {
    await this.all({ cmd: "connect", url, concurrency: Math.max(1, Math.round(concurrency / this.procs.length)), timeoutMs });
  }

  /** Points every agent's next dial at `url`. */
  async retarget(url: string): Promise<void> {
    await this.all({ cmd: "target", url });
  }

  /**
   * Waits until every agent's report of work generation `generation` was acknowledged: of any
   * work, or with `work` of the work of that name only (an agent holding several works, whose
   * generations count apart: a placement's work at generation 2 beside a replica set's at 1).
   * @returns per agent, when the works arrived and when the report was acknowledged (epoch ms)
   * @throws Error naming how many had not after `timeoutMs` milliseconds
   */
  async reported(generation: number, timeoutMs = 600_000, work?: string): Promise<AgentTimes[]> {
    return (await this.all<{ times: AgentTimes[] }>({ cmd: "reported", generation, timeoutMs, ...(work === undefined ? {} : { work }) })).flatMap(
      (r) => r.times,
    );
  }

  /**
   * Waits until every agent is connected on a connection welcomed at or after `since` (epoch ms).
   * @returns each agent's welcome time (epoch ms)
   */
  async connected(since: number, timeoutMs = 600_000): Promise<number[]> {
    return (await this.all<{ times: number[] }>({ cmd: "connected", since, timeoutMs })).flatMap((r) => r.times);
  }

  /** The processes' counts, added up. */
  async stats(): Promise<FleetStats> {
    const parts = await this.all<FleetStats>({ cmd: "stats" });
    const add = (key: "dialFailures" | "closes" | "refusals") => {
      const out: Record<string, number> = {};
      for (const p of parts) for (const [k, v] of Object.entries(p[key])) out[k] = (out[k] ?? 0) + v;
      return out;
    };
    return {
      connected: parts.reduce((s, p) => s + p.connected, 0),
      dialFailures: add("dialFailures"),
      closes: add("closes"),
      refusals: add("refusals"),
      deadConnections: parts.reduce((s, p) => s + p.deadConnections, 0),
      malformed: parts.reduce((s, p) => s + p.malformed, 0),
      reportsAcked: parts.reduce((s, p) => s + p.reportsAcked, 0),
    };
  }

  /** Closes every agent's connection; the agents stay (keys, key tags) for another {@link connect}. */
  async disconnect(): Promise<void> {
    await this.all({ cmd: "close" });
  }

  /** Ends the fleet's processes. */
  async stop(): Promise<void> {
    await this.disconnect().catch(() => undefined);
    await Promise.all(
      this.procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
            p.child.once("exit", () => resolve());
            p.child.disconnect();
            setTimeout(() => p.child.kill("SIGKILL"), 5000).unref();
          }),
      ),
    );
  }
}

/** Percentile `p` (0–100) of ascending `sorted` (nearest rank); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** A human summary of a {@link FleetStats}' non-zero counts. */
export function describeStats(s: FleetStats): string {
  const parts: string[] = [];
  const map = (label: string, m: Record<string, number>) => {
    const e = Object.entries(m);
    if (e.length > 0) parts.push(`${label} ${e.map(([k, v]) => `${k}: ${v}`).join(", ")}`);
  };
  map("failed dials", s.dialFailures);
  map("closes", s.closes);
  map("refused requests", s.refusals);
  if (s.deadConnections) parts.push(`dead connections ${s.deadConnections}`);
  if (s.malformed) parts.push(`malformed frames ${s.malformed}`);
  return parts.length ? parts.join("; ") : "no failed dial, close or refusal";
}

/** The workerd processes of a local Worker started with `wrangler dev`: the Worker's own, and wrangler's proxy in front of it. */
export interface WorkerdProcesses {
  /** The workerd running the Worker and its Durable Objects (and the local D1). */
  worker: number;
  /** The workerd of wrangler's dev proxy, which listens on the address wrangler prints and relays to {@link worker}. */
  proxy: number | undefined;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * Finds the workerd processes below `rootPid` (`npm start`'s or wrangler's process) serving
 * `url`: the proxy is the one whose entry socket is the printed port.
 * @throws Error when there is no workerd below it
 */
export function hubProcesses(rootPid: number, url: string): WorkerdProcesses {
  const port = new URL(url).port;
  const workerds = descendants(rootPid).filter((pid) => /(^|\/)workerd /.test(cmdline(pid)));
  const proxy = workerds.find((pid) => cmdline(pid).includes(`entry=127.0.0.1:${port} `));
  const worker = workerds.find((pid) => pid !== proxy);
  if (worker === undefined) throw new Error(`no workerd process below ${rootPid}`);
  return { worker, proxy };
}

/**
 * What process `pid` holds open: descriptors in all, those on sockets, the distinct sockets they
 * name (workerd holds two descriptors on each accepted WebSocket's connection), and those on
 * SQLite files (database, WAL, shared memory: 3 per loaded SQLite-backed Durable Object).
 */
export interface Descriptors {
  all: number;
  sockets: number;
  distinctSockets: number;
  sqlite: number;
}

/** Counts what `pid` holds open ({@link Descriptors}); NaN when it cannot be read. */
export function descriptors(pid: number | undefined): Descriptors {
  let all = 0;
  let sockets = 0;
  let sqlite = 0;
  const inodes = new Set<string>();
  const none = { all: NaN, sockets: NaN, distinctSockets: NaN, sqlite: NaN };
  if (pid === undefined) return none;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return none;
  }
  for (const fd of fds) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    all++;
    if (link.startsWith("socket:")) {
      sockets++;
      inodes.add(link);
    } else if (/\.sqlite(-wal|-shm)?$/.test(link)) sqlite++;
  }
  return { all, sockets, distinctSockets: inodes.size, sqlite };
}

/** The soft limit of open files of process `pid` (`Max open files` in /proc/<pid>/limits); NaN when unreadable. */
export function descriptorLimit(pid: number | undefined): number {
  try {
    return Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/**
 * Rejects as soon as `output()` (a Worker's log) shows that it ran out of descriptors
 * (`EMFILE`, "Too many open files", `SQLITE_CANTOPEN`), naming the line; never resolves. Ends
 * when `watch.done` is set. A size this machine cannot hold then fails at once, not at a timeout.
 */
export function outOfDescriptors(output: () => string, watch: { done: boolean }): Promise<never> {
  return new Promise<never>((_, reject) => {
    const check = () => {
      if (watch.done) return;
      // eslint-disable-next-line no-control-regex
      const m = /^.*(EMFILE|Too many open files|SQLITE_CANTOPEN).*$/m.exec(output().replace(/\x1b\[[0-9;]*m/g, ""));
      if (m) reject(new Error(`the Worker ran out of file descriptors: ${m[0].trim().slice(0, 300)}`));
      else setTimeout(check, 1000);
    };
    check();
  });
}

/** The largest {@link descriptors} counts seen while sampling, every `periodMs` milliseconds. */
export function sampleDescriptors(pid: number | undefined, periodMs = 500): { stop(): Descriptors } {
  const peak: Descriptors = { all: 0, sockets: 0, distinctSockets: 0, sqlite: 0 };
  const take = () => {
    const d = descriptors(pid);
    if (d.all > peak.all) Object.assign(peak, d);
  };
  take();
  const timer = setInterval(take, periodMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { ...peak };
    },
  };
}

/**
 * The Worker's own address (http:) behind wrangler's dev proxy: the listening socket of the
 * Worker's workerd that answers `GET /healthz` (or `probePath`) with 200. Dialling it skips the
 * proxy, which holds two descriptors per WebSocket (its client's and its own to the Worker) and
 * so cannot relay more than about 9,990 of them here; production has no such proxy. wrangler
 * picks the port anew at each start.
 *
 * The process listens on three sockets: the Worker's (`--socket-addr=entry=...`), the DevTools
 * inspector's (`--inspector-addr`) and, since wrangler enables its dev registry, workerd's debug
 * port (`--debug-port`), a Cap'n Proto RPC server. An HTTP request sent to the debug port is read
 * as a Cap'n Proto frame whose segment table claims some 63 billion words, and workerd logs
 * "RPC connection broken ...; incoming RPC message exceeds size limit" (capnp's 8 Mi-word
 * traversal limit) and closes that connection: harmless to the hub, but it reads like a failure
 * of the hub's own RPC. So the sockets are probed in the order workerd opened them (ascending
 * descriptor: the Worker's socket first, the debug port last, opened once every configured
 * socket listens), and the probe stops at the first socket that answers HTTP at all: the debug
 * port is dialled only when neither the Worker's socket nor the inspector's answers.
 * @throws Error when no listening socket of the process answers
 */
export async function entryUrl(workerPid: number, probePath = "/healthz", timeoutMs = 60_000): Promise<string> {
  // A Worker just (re)started may not answer on its own socket yet: try again until the deadline.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await findEntry(workerPid, probePath);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * The ports process `pid` listens on (TCP over IPv4, from /proc/<pid>/net/tcp and its
 * descriptors), in the order of their descriptors (ascending: the order it opened them, as Linux
 * hands out the lowest free descriptor).
 */
export function listeningPorts(pid: number): number[] {
  const fdOf = new Map<string, number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) fdOf.set(m[1]!, Number(fd));
    } catch {
      // closed meanwhile
    }
  }
  const ports: { port: number; fd: number }[] = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // local address, state 0A (LISTEN), inode
    const fd = fdOf.get(f[9] ?? "");
    if (f[3] === "0A" && fd !== undefined) ports.push({ port: parseInt(f[1]!.split(":")[1]!, 16), fd });
  }
  return ports.sort((a, b) => a.fd - b.fd).map((p) => p.port);
}

async function findEntry(workerPid: number, probePath: string): Promise<string> {
  const ports = listeningPorts(workerPid);
  for (const port of ports) {
    let status: number;
    try {
      const res = await fetch(`http://127.0.0.1:${port}${probePath}`, { signal: AbortSignal.timeout(3000) });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      continue; // not listening yet, or not answering in time
    }
    if (status === 200) return `http://127.0.0.1:${port}`;
    // An HTTP answer but not the Worker's (the inspector's, or the Worker not ready): the sockets
    // after it are not the Worker's; try again later rather than dial the debug port.
    throw new Error(
      `the first socket of workerd ${workerPid} that answered HTTP (port ${port}) answered ${probePath} with ${status} (ports ${ports.join(", ")})`,
    );
  }
  throw new Error(`no listening socket of workerd ${workerPid} answered ${probePath} (ports ${ports.join(", ")})`);
}
