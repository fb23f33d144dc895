/**
 * `npm run walk:placement`: how many of the hub's source files a Placement create walks through
 * before its work is Applied, measured at run time (issue 41: "the walk from a Placement create to
 * an Applied work crosses N files").
 *
 * It builds the hub's Worker as `wrangler deploy` does (`--dry-run`), instruments the bundle
 * (scripts/walk-instrument.ts: at the start of every function of the hub's own files, `src/` and
 * `durable-objects/`, a call that records the function's file while a record is open), starts a hub
 * on that bundle (`wrangler dev --no-bundle`, workerd, with its inspector) and one agent on a
 * simulated cluster. The Worker and its Durable Objects run in one isolate, so one record sees
 * them all; the inspector only opens and reads the record (`Runtime.evaluate`). A first walk (a
 * placement and a ManifestWorkReplicaSet that follows it, to Applied) warms every path up; the
 * replica set of the measured walk is created before it. The record is opened afresh, then the
 * measured Placement is created; the script waits, without running hub code, until the simulated
 * cluster holds the work's ConfigMap (the agent's state file) and the hub then calls none of its
 * functions for 3 s (the agent's report and what it sets off handled, read as the record's call
 * count through the inspector), reads the record, closes it, and only then checks with a GET that
 * the work is Applied (failing the run if not): a file counts when one of its functions was called
 * in between, so the figure is the walk's alone. Files are told apart by the module markers
 * esbuild writes into the bundle (`// src/placement/plan.ts`). For comparison it also measures
 * the earlier way (until 2026-11-30): a second Placement's walk with the script's poll of the work
 * (GET, every 100 ms) inside the record until Applied, which counts the files of the poll's own
 * request path too. While the records are open, `npm start`'s supervisor (which probes
 * `/livez/ping` every 2 s, the one caller of the hub besides the walk) is paused, in both ways.
 * `WALK_LIST=1` prints the files (`*`: not run by one GET of the work).
 *
 * Why not breakpoints: V8's precise coverage is not offered (workerd answers "Profiler is not
 * enabled"), and the earlier way, a conditional breakpoint that never pauses at the start of each
 * of the ~2,500 functions (set through the inspector), broke workerd itself on old and new code
 * alike: as soon as they were set, every event the isolate was handed failed in workerd's event
 * dispatch (`rust/worker/ffi.rs`, `overloaded: Too many open files (os error 24)`, a million
 * times in five minutes) and no request completed, the first one after them (the Placement
 * create) included; neither the agent (no request of its in the log) nor the script's poll
 * (never reached) looped. The inspector is kept here for `Runtime.evaluate` only.
 *
 * Run as `node --import tsx scripts/walk.ts` in the checkout to measure (it builds and runs that
 * checkout's Worker; copy this file and scripts/walk-instrument.ts into an older checkout to
 * measure it the same way); the agent needs `npm run build` (done by `npm ci`).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { instrumentBundle } from "./walk-instrument.ts";
import { admin, createBootstrapToken, createNamespaces, freePort, startHub, type Hub } from "./hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const G = "/apis/cluster.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const SET_LABEL = "cluster.open-cluster-management.io/clusterset";
const NS = "walk";
const CLUSTER = "walk1";
const merge = "application/merge-patch+json";
/** How long the hub must call none of its functions before the walk counts as over, in milliseconds. */
const QUIET_MS = 3000;

/** A connection to the inspector of the hub's isolate (the Chrome DevTools protocol), for `Runtime.evaluate` only. */
interface Inspector {
  send<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T>;
  /** The isolate's execution contexts (ids), as the inspector announced them. */
  contexts: number[];
  close(): void;
}

async function inspect(port: number): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  // wrangler's inspector proxy accepts only connections that name a local origin.
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`inspector on port ${port}: no connection`));
  });
  let id = 0;
  const waiting = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  const contexts: number[] = [];
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: { context: { id: number } };
    };
    if (msg.method === "Runtime.executionContextCreated") contexts.push(msg.params!.context.id);
    if (msg.id === undefined) return;
    const w = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error) w?.reject(new Error(msg.error.message));
    else w?.resolve(msg.result);
  };
  return {
    send: <T>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<T>((resolve, reject) => {
        waiting.set(++id, { resolve: resolve as (r: unknown) => void, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    contexts,
    close: () => ws.close(),
  };
}

/**
 * Builds the Worker's bundle as `wrangler deploy` does (esbuild; `--dry-run`: nothing is
 * uploaded) into `dir`, instruments it ({@link instrumentBundle}) and writes it to
 * `dir/walk.js`, with a wrangler configuration that runs it as it is (`dir/wrangler.toml`).
 * Returns the configuration's path and the files by index.
 * @throws Error when the build fails or writes more than the one module
 */
function buildInstrumented(dir: string): { config: string; files: string[] } {
  const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  const out = path.join(dir, "build");
  const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  // The dashboard's files (dist/ui/files.js) are a module of the Worker: built first (npm start too).
  const ui = spawnSync(process.execPath, [path.join(root, "scripts", "build-ui.mjs"), "--if-stale"], { cwd: root, encoding: "utf8" });
  if (ui.status !== 0) throw new Error(`building the dashboard (scripts/build-ui.mjs) failed:\n${ui.stdout}${ui.stderr}`);
  const r = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", out], { cwd: root, env, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`building the Worker (wrangler deploy --dry-run) failed:\n${r.stdout}${r.stderr}`);
  const modules = readdirSync(out).filter((f) => !f.endsWith(".map") && f !== "README.md");
  if (modules.length !== 1 || modules[0] !== "index.js") throw new Error(`the Worker's build holds other modules than index.js: ${modules.join(", ")}`);
  const { source, files, functions } = instrumentBundle(readFileSync(path.join(out, "index.js"), "utf8"));
  const bundle = path.join(dir, "walk.js");
  writeFileSync(bundle, source);
  console.log(`instrumented ${functions} functions of ${files.length} hub files`);
  // The checkout's wrangler.toml (its bindings, Durable Objects, D1), its entry the instrumented
  // bundle, taken as it is (`no_bundle`); its other paths made absolute, as the file moves.
  const config = readFileSync(path.join(root, "wrangler.toml"), "utf8")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(bundle)}\nno_bundle = true`)
    .replace(/^(directory|migrations_dir) = "(?:\.\/)?([^"]+)"$/gm, (_m, key: string, rel: string) => `${key} = ${JSON.stringify(path.join(root, rel))}`);
  const configPath = path.join(dir, "wrangler.toml");
  writeFileSync(configPath, config);
  return { config: configPath, files };
}

/** The files whose functions ran since {@link startWalk}. */
async function filesCalled(inspector: Inspector, files: string[]): Promise<Set<string>> {
  const r = await inspector.send<{ result: { value: string } }>("Runtime.evaluate", {
    expression: "JSON.stringify([...(globalThis.__walk ?? [])])",
    returnByValue: true,
    contextId: inspector.contexts.at(-1),
  });
  return new Set((JSON.parse(r.result.value) as number[]).map((i) => files[i]!));
}

/**
 * Pauses (SIGSTOP) or resumes (SIGCONT) `npm start`'s supervisor, `node scripts/start.mjs`, whose
 * probe of the hub (`GET /livez/ping` every 2 s) would run the health route's files in a record;
 * only that process is paused, not wrangler nor workerd (a paused probe in flight may count as one
 * failure, of the 3 in a row that restart the hub).
 */
function supervisor(hub: Hub, paused: boolean): void {
  process.kill(hub.pid, paused ? "SIGSTOP" : "SIGCONT");
}

/** Opens a record afresh: an empty set of files and a call count of 0. */
async function startWalk(inspector: Inspector): Promise<void> {
  await inspector.send("Runtime.evaluate", { expression: "globalThis.__walk = new Set(); globalThis.__walkHits = 0; 0", contextId: inspector.contexts.at(-1) });
}

/** Closes the record: the hub's calls are no longer recorded (what it recorded is read before). */
async function stopWalk(inspector: Inspector): Promise<void> {
  await inspector.send("Runtime.evaluate", { expression: "globalThis.__walk = undefined; 0", contextId: inspector.contexts.at(-1) });
}

/** How many calls of the hub's functions the open record counted (reading it runs no hub code). */
async function hits(inspector: Inspector): Promise<number> {
  const r = await inspector.send<{ result: { value: number } }>("Runtime.evaluate", {
    expression: "globalThis.__walkHits ?? 0",
    returnByValue: true,
    contextId: inspector.contexts.at(-1),
  });
  return r.result.value;
}

/**
 * Waits until the hub has called none of its functions for `quietMs` milliseconds (its call count
 * unchanged), reading only the record through the inspector.
 */
async function hubQuiet(inspector: Inspector, quietMs: number, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = await hits(inspector);
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > end) throw new Error(`the hub did not fall quiet for ${quietMs} ms within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
    const n = await hits(inspector);
    if (n !== last) {
      last = n;
      since = Date.now();
    }
  }
}

/** Whether the simulated cluster's state file (the agent's side, read without the hub) holds the ConfigMap `name` of the walk's work. */
function simulatedHolds(statePath: string, name: string): boolean {
  try {
    const state = JSON.parse(readFileSync(statePath, "utf8")) as { objects: { plural: string; object: { metadata: { name: string; namespace?: string } } }[] };
    return state.objects.some((o) => o.plural === "configmaps" && o.object.metadata.name === name && o.object.metadata.namespace === "default");
  } catch {
    return false; // not written yet
  }
}

function ok(r: { status: number; body: unknown }, what: string): void {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 100): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Whether the work `name` in the cluster's namespace says Applied=True. */
async function applied(hub: Hub, name: string): Promise<boolean> {
  const r = await admin(hub, "GET", `${W}/v1/namespaces/${CLUSTER}/manifestworks/${name}`);
  return r.status === 200 && (r.body.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === "Applied" && c.status === "True");
}

const replicaSet = (name: string) => ({
  apiVersion: "work.open-cluster-management.io/v1alpha1",
  kind: "ManifestWorkReplicaSet",
  metadata: { name },
  spec: {
    placementRefs: [{ name, rolloutStrategy: { type: "All" } }],
    manifestWorkTemplate: {
      workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { walk: name } }] },
    },
  },
});
const placement = (name: string) => ({
  apiVersion: "cluster.open-cluster-management.io/v1beta1",
  kind: "Placement",
  metadata: { name },
  spec: { clusterSets: ["walkers"] },
});

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-walk-"));
  // A folder of its own: wrangler reloads the Worker when a file beside its entry changes (the agent's state file would).
  const { config, files } = buildInstrumented(mkdtempSync(path.join(dir, "hub-")));
  const port = await freePort();
  // A loaded machine may take minutes to start a hub (the build above included).
  const hub = await startHub({ wranglerArgs: ["--inspector-port", String(port), "--config", config], startTimeoutMs: 300_000 });
  let agent: ReturnType<typeof spawn> | undefined;
  const statePath = path.join(dir, `${CLUSTER}.json`);
  const inspector = await inspect(port);
  try {
    await inspector.send("Runtime.enable");

    ok(
      await admin(hub, "POST", `${G}/v1beta2/managedclustersets`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta2",
        kind: "ManagedClusterSet",
        metadata: { name: "walkers" },
      }),
      "set",
    );
    await createNamespaces(hub, NS);
    ok(
      await admin(hub, "POST", `${G}/v1beta2/namespaces/${NS}/managedclustersetbindings`, {
        apiVersion: "cluster.open-cluster-management.io/v1beta2",
        kind: "ManagedClusterSetBinding",
        metadata: { name: "walkers" },
        spec: { clusterSet: "walkers" },
      }),
      "binding",
    );
    const token = await createBootstrapToken(hub);
    agent = spawn(
      process.execPath,
      [
        path.join(root, "agent/bin/flotilla-agent.js"),
        "--hub-url",
        hub.url,
        "--simulate",
        "--simulate-state",
        statePath,
        "--cluster-name",
        CLUSTER,
        "--bootstrap-token",
        token,
      ],
      { cwd: root, stdio: "ignore", env: { ...process.env, FLOTILLA_BOOTSTRAP_TOKEN: "" } },
    );
    await until("the agent to register", async () => (await admin(hub, "GET", `${MC}/${CLUSTER}`)).status === 200, 60_000, 250);
    ok(await admin(hub, "PATCH", `${MC}/${CLUSTER}`, { metadata: { labels: { [SET_LABEL]: "walkers" } }, spec: { hubAcceptsClient: true } }, merge), "accept");
    await until(
      "the cluster Available",
      async () =>
        ((await admin(hub, "GET", `${MC}/${CLUSTER}`)).body.status?.conditions ?? []).some(
          (c: { type: string; status: string }) => c.type === "ManagedClusterConditionAvailable" && c.status === "True",
        ),
      60_000,
      250,
    );

    // Warm-up: the same walk once, so that what the measured one runs is warm.
    ok(await admin(hub, "POST", `${W}/v1alpha1/namespaces/${NS}/manifestworkreplicasets`, replicaSet("warm")), "warm-up replica set");
    ok(await admin(hub, "POST", `${G}/v1beta1/namespaces/${NS}/placements`, placement("warm")), "warm-up placement");
    await until("the warm-up work Applied", () => applied(hub, `${NS}.warm`));
    ok(await admin(hub, "POST", `${W}/v1alpha1/namespaces/${NS}/manifestworkreplicasets`, replicaSet("measured")), "replica set");
    ok(await admin(hub, "POST", `${W}/v1alpha1/namespaces/${NS}/manifestworkreplicasets`, replicaSet("polled")), "replica set (polled)");
    // Let the replica sets' first runs (no placement yet) and any follow-up settle.
    await new Promise((r) => setTimeout(r, 2000));

    // The records below are the walk's alone: the supervisor's probe is paused while they are open.
    supervisor(hub, true);
    // The walk, its end seen without running hub code in the record: the simulated cluster holds
    // the work's ConfigMap (its state file), then the hub falls quiet (the agent's report and what
    // it sets off handled); the work's Applied is checked once the record is closed.
    await startWalk(inspector);
    const t0 = performance.now();
    ok(await admin(hub, "POST", `${G}/v1beta1/namespaces/${NS}/placements`, placement("measured")), "placement");
    await until("the simulated cluster to hold the measured work's ConfigMap", async () => simulatedHolds(statePath, "measured"));
    await hubQuiet(inspector, QUIET_MS);
    const ms = performance.now() - t0;
    const walk = await filesCalled(inspector, files);
    await stopWalk(inspector);
    if (!(await applied(hub, `${NS}.measured`))) throw new Error(`the measured work was not Applied after the hub was quiet for ${QUIET_MS} ms: run again`);

    // The earlier way, for comparison: the same walk with the script's poll of the work (GET,
    // every 100 ms) inside the record until the work is Applied.
    await startWalk(inspector);
    const t1 = performance.now();
    ok(await admin(hub, "POST", `${G}/v1beta1/namespaces/${NS}/placements`, placement("polled")), "placement (polled)");
    await until("the polled work Applied", () => applied(hub, `${NS}.polled`));
    const polledMs = performance.now() - t1;
    const polled = await filesCalled(inspector, files);

    // For reference: what one GET of the work (the poll) runs alone.
    await startWalk(inspector);
    await applied(hub, `${NS}.polled`);
    const poll = await filesCalled(inspector, files);
    await stopWalk(inspector);
    supervisor(hub, false);

    const byFolder = new Map<string, number>();
    for (const f of walk) {
      const folder = f.split("/").slice(0, -1).join("/");
      byFolder.set(folder, (byFolder.get(folder) ?? 0) + 1);
    }
    console.log(`walk from a Placement create to its work Applied and the hub quiet: ${walk.size} hub files (src/, durable-objects/), ${Math.round(ms)} ms`);
    console.log(`  of which ${[...walk].filter((f) => poll.has(f)).length} are also run by one GET of the work (which runs ${poll.size})`);
    console.log(
      `  by folder: ${[...byFolder]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(", ")}`,
    );
    console.log(`the earlier way, the script's poll of the work inside the record: ${polled.size} hub files, ${Math.round(polledMs)} ms`);
    console.log(`  of which ${[...polled].filter((f) => !poll.has(f)).length} are not run by the poll`);
    const onlyPolled = [...polled].filter((f) => !walk.has(f)).sort();
    const onlyQuiet = [...walk].filter((f) => !polled.has(f)).sort();
    console.log(`  in the polled record only: ${onlyPolled.join(", ") || "none"}`);
    console.log(`  in the quiet record only: ${onlyQuiet.join(", ") || "none"}`);
    if (process.env.WALK_LIST) for (const f of [...walk].sort()) console.log(`  ${poll.has(f) ? " " : "*"} ${f}`);
  } catch (e) {
    console.error(`the hub failed; its output: ${hub.logFile}`);
    throw e;
  } finally {
    inspector.close();
    agent?.kill("SIGTERM");
    supervisor(hub, false);
    await hub.stop();
  }
}

await main();
