/**
 * `npm run walk:placement`: how many of the hub's source files a Placement create walks through
 * before its work is Applied, measured at run time (issue 41: "the walk from a Placement create to
 * an Applied work crosses N files").
 *
 * It starts a hub (`wrangler dev`, workerd, with its inspector) and one agent on a simulated
 * cluster, and sets a conditional breakpoint that never pauses at the start of every hub function
 * of the Worker's bundle in the hub's isolate, where the Worker and its Durable Objects run (V8's
 * precise coverage is not offered: workerd answers "Profiler is not enabled"); each condition
 * records its function's file. A first walk (a placement and a ManifestWorkReplicaSet that follows it, to Applied) warms
 * every path up; the replica set of the measured walk is created before it. The record is started
 * afresh, then the measured Placement is created and the script polls the work (GET, every
 * 100 ms) until the agent's report made it Applied, and reads what was recorded: a file counts when
 * one of its functions was called in between. Files are told apart by the module markers esbuild
 * writes into wrangler's bundle (`// src/placement/plan.ts`); only the hub's own (`src/`,
 * `durable-objects/`) count. The figure includes the files the poll itself runs (the request path
 * of a GET); `WALK_LIST=1` prints the files.
 *
 * Run as `node --import tsx scripts/walk.ts`; the agent needs `npm run build` (done by `npm ci`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { admin, createBootstrapToken, createNamespaces, freePort, startHub, type Hub } from "./hub-process.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MC = "/apis/cluster.open-cluster-management.io/v1/managedclusters";
const G = "/apis/cluster.open-cluster-management.io";
const W = "/apis/work.open-cluster-management.io";
const SET_LABEL = "cluster.open-cluster-management.io/clusterset";
const NS = "walk";
const CLUSTER = "walk1";
const merge = "application/merge-patch+json";

/** A connection to the inspector of the hub's isolate (the Chrome DevTools protocol). */
interface Inspector {
  send<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T>;
  scripts: Map<string, string>;
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
  const scripts = new Map<string, string>();
  const contexts: number[] = [];
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: { scriptId: string; url: string; context: { id: number } };
    };
    if (msg.method === "Debugger.scriptParsed") scripts.set(msg.params!.scriptId, msg.params!.url);
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
    scripts,
    contexts,
    close: () => ws.close(),
  };
}

/** The module of each offset of a bundle: esbuild's `// <path>` markers, in order. */
function modulesOf(source: string): { start: number; file: string }[] {
  const out: { start: number; file: string }[] = [];
  for (const m of source.matchAll(/^\/\/ ((?:\.\.\/)*[\w@.\-/]+\.(?:ts|tsx|js|mjs|json))$/gm)) out.push({ start: m.index, file: m[1]! });
  return out;
}

function fileAt(modules: { start: number; file: string }[], offset: number): string | null {
  let lo = 0;
  let hi = modules.length - 1;
  let found: string | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (modules[mid]!.start <= offset) {
      found = modules[mid]!.file;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Where each function of the hub's files (src/, durable-objects/) starts in `source` (its body's first position), and its file. */
function hubFunctions(source: string): { line: number; column: number; file: string }[] {
  const modules = modulesOf(source);
  const sf = ts.createSourceFile("bundle.js", source, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const out: { line: number; column: number; file: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const body = node.body as ts.Node;
      const first = ts.isBlock(body) ? (body.statements[0] ?? body) : body;
      const pos = first === body && ts.isBlock(body) ? body.getStart(sf) + 1 : first.getStart(sf);
      const file = fileAt(modules, pos);
      if (file && /^(src|durable-objects)\//.test(file)) {
        const { line, character } = sf.getLineAndCharacterOfPosition(pos);
        out.push({ line, column: character, file });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/**
 * Sets a breakpoint that never pauses at the start of every hub function of the Worker's bundle:
 * its condition adds the function's file to `globalThis.__walk` (while that set exists) and is
 * false. Returns the files by index.
 */
async function instrument(inspector: Inspector): Promise<string[]> {
  let best: { id: string; source: string } | null = null;
  for (const id of inspector.scripts.keys()) {
    const { scriptSource } = await inspector.send<{ scriptSource: string }>("Debugger.getScriptSource", { scriptId: id });
    if (scriptSource.includes("// src/index.ts") && (!best || scriptSource.length > best.source.length)) best = { id, source: scriptSource };
  }
  if (!best) throw new Error("the Worker's bundle is not among the isolate's scripts");
  const fns = hubFunctions(best.source);
  const files = [...new Set(fns.map((f) => f.file))];
  const index = new Map(files.map((f, i) => [f, i]));
  await Promise.all(
    fns.map((f) =>
      inspector
        .send("Debugger.setBreakpoint", {
          location: { scriptId: best.id, lineNumber: f.line, columnNumber: f.column },
          condition: `(globalThis.__walk && globalThis.__walk.add(${index.get(f.file)}), false)`,
        })
        .catch(() => undefined),
    ),
  );
  console.log(`instrumented ${fns.length} functions of ${files.length} hub files`);
  return files;
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

async function startWalk(inspector: Inspector): Promise<void> {
  await inspector.send("Runtime.evaluate", { expression: "globalThis.__walk = new Set(); 0", contextId: inspector.contexts.at(-1) });
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
  const port = await freePort();
  const hub = await startHub({ wranglerArgs: ["--inspector-port", String(port)] });
  const dir = mkdtempSync(path.join(tmpdir(), "flotilla-walk-"));
  let agent: ReturnType<typeof spawn> | undefined;
  const inspector = await inspect(port);
  try {
    await inspector.send("Runtime.enable");
    await inspector.send("Debugger.enable");

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
        path.join(dir, `${CLUSTER}.json`),
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
    // Let the replica set's first run (no placement yet) and any follow-up settle.
    await new Promise((r) => setTimeout(r, 2000));

    const files = await instrument(inspector);
    await startWalk(inspector);
    const t0 = performance.now();
    ok(await admin(hub, "POST", `${G}/v1beta1/namespaces/${NS}/placements`, placement("measured")), "placement");
    await until("the measured work Applied", () => applied(hub, `${NS}.measured`));
    const ms = performance.now() - t0;
    const walk = await filesCalled(inspector, files);

    // For reference: what one GET of the work (the poll) runs alone.
    await startWalk(inspector);
    await applied(hub, `${NS}.measured`);
    const poll = await filesCalled(inspector, files);

    const byFolder = new Map<string, number>();
    for (const f of walk) {
      const folder = f.split("/").slice(0, -1).join("/");
      byFolder.set(folder, (byFolder.get(folder) ?? 0) + 1);
    }
    console.log(`walk from a Placement create to its work Applied: ${walk.size} hub files (src/, durable-objects/), ${Math.round(ms)} ms`);
    console.log(`  of which ${[...walk].filter((f) => !poll.has(f)).length} are not run by the poll (one GET of the work runs ${poll.size})`);
    console.log(
      `  by folder: ${[...byFolder]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(", ")}`,
    );
    if (process.env.WALK_LIST) for (const f of [...walk].sort()) console.log(`  ${poll.has(f) ? " " : "*"} ${f}`);
  } catch (e) {
    console.error(`the hub failed; its output: ${hub.logFile}`);
    throw e;
  } finally {
    inspector.close();
    agent?.kill("SIGTERM");
    await hub.stop();
  }
}

await main();
