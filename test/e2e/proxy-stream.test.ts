/**
 * The proxy's WebSocket streams through the hub (docs/proxy.md "WebSocket streams"), end to end:
 * a real hub (`wrangler dev` over HTTPS), a real agent process (`flotilla-agent --simulate`, ws
 * transport) and the real kubectl 1.32 with a kubeconfig whose `server` is the proxy's prefix:
 * `exec -i` with stdin piped (stdout, stderr, the exit code), `attach`, `cp` both ways over
 * exec's tar, `port-forward` to a Pod's echo port (SPDY tunnelled over WebSocket), resize at the
 * protocol level, a user without `managedclusters/proxy` refused with the member seeing nothing,
 * kubectl's SPDY fallback refused with a Status that says what works, and cancellation (kubectl
 * killed mid-exec closes the member's stream). Hostile: oversized messages, a flood of stdin the
 * member does not read, idle streams holding every slot; the channel's works still arrive within
 * 1 s while an exec streams.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { admin, createBootstrapToken, hubFetch, startHub, type Hub } from "../../scripts/hub-process.ts";
import { adminKubeconfigYaml, cond, MC, merge, scratchDir, startAgent, stopAgent, waitFor, type AgentProcess } from "./support.ts";

const { dir, file } = scratchDir("flotilla-proxy-stream-");
const AVAILABLE = "ManagedClusterConditionAvailable";
const PREFIX = "/clusters/m1/proxy";

/**
 * kubectl 1.32: the machine's `kubectl` may be a dispatcher that picks a release by the server's
 * version (the simulated member says 1.31); the 1.32 binary beside it, when there is one.
 */
const KUBECTL = (() => {
  for (const dirOf of (process.env.PATH ?? "").split(":")) {
    const k = path.join(dirOf, "kubectl");
    if (!existsSync(k)) continue;
    const pinned = path.join(path.dirname(realpathSync(k)), "kubectl.1.32");
    return existsSync(pinned) ? pinned : k;
  }
  return "kubectl";
})();

let hub: Hub;
let hubConfig: string;
let m1: string;
const agents: AgentProcess[] = [];

/** A kubeconfig like the hub's whose server is the hub's URL + `prefix`. */
const memberConfig = (name: string, prefix: string, token?: string) => {
  let yaml = hubConfig.replace(/server: (\S+)/, (_m, url: string) => `server: ${url}${prefix}`);
  if (token) yaml = yaml.replace(/token: \S+/, `token: ${token}`);
  return file(name, yaml);
};

/** kubectl 1.32 with kubeconfig `config` (stdin from `input`): its output, and its exit code. */
function kubectl(config: string, args: string[], input?: string | Buffer): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(KUBECTL, ["--kubeconfig", config, "--cache-dir", path.join(dir, "cache"), ...args], { cwd: dir });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, out, err }));
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/** What the simulated member's streams saw (its `/sim/streams`, read through the proxy as the hub's admin). */
async function memberStreams(): Promise<{ opened: number; open: number; requests: number }> {
  const r = await hubFetch(hub, "GET", `${PREFIX}/sim/streams`, { authorization: `Bearer ${hub.adminToken}` });
  expect(r.status).toBe(200);
  return JSON.parse(r.text) as { opened: number; open: number; requests: number };
}

/** A raw WebSocket to the hub's proxy (as kubectl's client-go opens it), as the hub's admin. */
function openSocket(memberPath: string, protocols: string[]): Promise<WebSocket> {
  const ws = new WebSocket(`${hub.url.replace(/^http/, "ws")}${PREFIX}${memberPath}`, protocols, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
    ca: readFileSync(hub.caFile!),
    perMessageDeflate: false,
    maxPayload: 4 * 1024 * 1024,
  });
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

/** Resolves with the close code once `ws` closes. */
const closed = (ws: WebSocket) => new Promise<number>((r) => (ws.readyState === ws.CLOSED ? r(1006) : ws.once("close", (code) => r(code))));

const pod = (name: string) =>
  file(
    `${name}.yaml`,
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: default\nspec:\n  containers:\n  - name: app\n    image: busybox\n    stdin: true\n    ports:\n    - containerPort: 8080\n`,
  );

beforeAll(async () => {
  hub = await startHub({ https: true });
  const token = await createBootstrapToken(hub);
  hubConfig = await adminKubeconfigYaml(hub);
  const agent = startAgent(hub, ["--cluster-name", "m1", "--bootstrap-token", token, "--simulate-state", path.join(dir, "m1.json")]);
  agents.push(agent);
  await waitFor("m1 to register", async () => (await admin(hub, "GET", `${MC}/m1`)).status === 200);
  expect((await admin(hub, "PATCH", `${MC}/m1`, { spec: { hubAcceptsClient: true } }, merge)).status).toBe(200);
  await waitFor("m1 Available", async () => cond((await admin(hub, "GET", `${MC}/m1`)).body, AVAILABLE)?.status === "True");
  await waitFor("the channel to connect", async () => agent.output().includes("connected to the hub over WebSocket"));
  m1 = memberConfig("m1.yaml", PREFIX);
  const applied = await kubectl(m1, ["apply", "-f", pod("shell")]);
  expect(applied.err).toBe("");
  await waitFor("the Pod running", async () => (await kubectl(m1, ["get", "pod", "shell", "-o", "jsonpath={.status.phase}"])).out === "Running");
}, 180_000);

afterAll(async () => {
  for (const a of agents) await stopAgent(a);
  await hub?.stop();
});

describe("exec, attach, cp and port-forward through the hub (kubectl 1.32 over WebSocket)", () => {
  it("kubectl exec -i with stdin piped: stdout, stderr and the exit code", async () => {
    expect(path.basename(KUBECTL)).toBe("kubectl.1.32");
    const r = await kubectl(m1, ["exec", "-i", "shell", "--", "sh"], "echo hello\nhostname\ncat /nowhere\nexit 3\n");
    expect(r.out).toBe("hello\nshell\n");
    expect(r.err).toContain("cat: can't open '/nowhere': No such file or directory");
    expect(r.err).toContain("command terminated with exit code 3");
    expect(r.code).toBe(3);
    const once = await kubectl(m1, ["exec", "shell", "--", "echo", "one", "shot"]);
    expect(once).toMatchObject({ code: 0, out: "one shot\n" });
  });

  it("kubectl attach -i reaches the Pod's process", async () => {
    const r = await kubectl(m1, ["attach", "-i", "shell"], "echo attached\n");
    expect(r.out).toBe("attached\n");
    expect(r.code).toBe(0);
  });

  it("kubectl cp copies a file into the Pod and back (tar over exec)", async () => {
    const data = randomBytes(300_000);
    writeFileSync(path.join(dir, "up.bin"), data);
    const up = await kubectl(m1, ["cp", "up.bin", "shell:/tmp/up.bin"]);
    expect(up.code, up.err).toBe(0);
    expect((await kubectl(m1, ["exec", "shell", "--", "ls", "/tmp"])).out).toContain("up.bin");
    const down = await kubectl(m1, ["cp", "shell:/tmp/up.bin", "down.bin"]);
    expect(down.code, down.err).toBe(0);
    expect(readFileSync(path.join(dir, "down.bin")).equals(data)).toBe(true);
    // A directory, both ways.
    writeFileSync(path.join(dir, "note.txt"), "a note\n");
    expect((await kubectl(m1, ["cp", "note.txt", "default/shell:/tmp/"])).code).toBe(0);
    const tree = await kubectl(m1, ["cp", "shell:/tmp", "tree"]);
    expect(tree.code, tree.err).toBe(0);
    expect(readFileSync(path.join(dir, "tree/note.txt"), "utf8")).toBe("a note\n");
  });

  it("kubectl port-forward reaches a Pod's port (SPDY tunnelled over WebSocket)", async () => {
    const pf = spawn(KUBECTL, ["--kubeconfig", m1, "port-forward", "pod/shell", ":8080"], { cwd: dir });
    let printed = "";
    pf.stdout.on("data", (d: Buffer) => (printed += d.toString()));
    pf.stderr.on("data", (d: Buffer) => (printed += d.toString()));
    try {
      await waitFor("the local port", async () => /127\.0\.0\.1:\d+ ->/.test(printed));
      const port = Number(/127\.0\.0\.1:(\d+) ->/.exec(printed)![1]);
      for (const text of ["hello through the hub\n", "x".repeat(100_000)]) {
        const echoed = await new Promise<string>((resolve, reject) => {
          let got = "";
          const sock = connect(port, "127.0.0.1", () => sock.write(text));
          sock.on("data", (d) => {
            got += d.toString();
            if (got.length >= text.length) sock.end();
          });
          sock.on("close", () => resolve(got));
          sock.on("error", reject);
        });
        expect(echoed).toBe(text);
      }
    } finally {
      pf.kill("SIGTERM");
    }
  });

  it("resize reaches the member (the v5.channel.k8s.io resize channel, through the hub)", async () => {
    const ws = await openSocket("/api/v1/namespaces/default/pods/shell/exec?command=sh&stdin=true&stdout=true&tty=true", ["v5.channel.k8s.io"]);
    expect(ws.protocol).toBe("v5.channel.k8s.io");
    let out = "";
    ws.on("message", (d: Buffer) => {
      if (d[0] === 1) out += d.subarray(1).toString();
    });
    ws.send(Buffer.concat([Buffer.from([4]), Buffer.from(JSON.stringify({ Width: 132, Height: 43 }))]));
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("stty size\r")]));
    await waitFor("the terminal's size", async () => out.includes("43 132"));
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("exit\r")]));
    expect(await closed(ws)).toBe(1000);
  });

  it("a user without managedclusters/proxy gets 403 on exec and the member sees nothing; SPDY gets a Status saying what works", async () => {
    await admin(hub, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "ops" } });
    expect(
      (await admin(hub, "POST", "/api/v1/namespaces/ops/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "viewer" } })).status,
    ).toBe(201);
    const tr = await admin(hub, "POST", "/api/v1/namespaces/ops/serviceaccounts/viewer/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    });
    const viewer = memberConfig("viewer.yaml", PREFIX, tr.body.status.token as string);
    const before = await memberStreams();
    const refused = await kubectl(viewer, ["exec", "shell", "--", "echo", "no"]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain('resource "managedclusters/proxy" in API group "cluster.open-cluster-management.io"');
    const pf = await kubectl(viewer, ["port-forward", "pod/shell", ":8080"]);
    expect(pf.code).not.toBe(0);
    expect(pf.err).toContain("managedclusters/proxy");
    // With `get` on the proxy only (reads), the upgrade itself is refused: it needs `create`, as
    // kube-apiserver asks of pods/exec over WebSocket.
    expect(
      (
        await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "proxy-read-m1" },
          rules: [{ apiGroups: ["cluster.open-cluster-management.io"], resources: ["managedclusters/proxy"], resourceNames: ["m1"], verbs: ["get"] }],
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin(hub, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "proxy-read-m1" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "proxy-read-m1" },
          subjects: [{ kind: "ServiceAccount", name: "viewer", namespace: "ops" }],
        })
      ).status,
    ).toBe(201);
    const upgrade = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(
        `${hub.url.replace(/^http/, "ws")}${PREFIX}/api/v1/namespaces/default/pods/shell/exec?command=sh&stdout=true`,
        ["v5.channel.k8s.io"],
        {
          headers: { authorization: `Bearer ${tr.body.status.token as string}` },
          ca: readFileSync(hub.caFile!),
        },
      );
      ws.once("open", () => reject(new Error("the upgrade was accepted")));
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    expect(upgrade.status).toBe(403);
    expect(JSON.parse(upgrade.body).message).toContain('cannot create resource "managedclusters/proxy"');
    expect((await memberStreams()).requests).toBe(before.requests);

    // kubectl's SPDY (an older kubectl, or its fallback): the hub cannot serve it and says so.
    const spdy = await hubFetch(hub, "POST", `${PREFIX}/api/v1/namespaces/default/pods/shell/exec?command=sh&stdout=true`, {
      authorization: `Bearer ${hub.adminToken}`,
      connection: "Upgrade",
      upgrade: "SPDY/3.1",
      "x-stream-protocol-version": "v4.channel.k8s.io",
    });
    expect(spdy.status).toBe(400);
    const status = JSON.parse(spdy.text) as { kind: string; reason: string; message: string };
    expect(status).toMatchObject({ kind: "Status", reason: "BadRequest" });
    expect(status.message).toContain("over WebSocket only");
    expect(status.message).toContain("kubectl 1.30 or newer");
    expect((await memberStreams()).requests).toBe(before.requests);
  });

  it("kubectl killed mid-exec closes the member's stream", async () => {
    const before = await memberStreams();
    const child: ChildProcess = spawn(KUBECTL, ["--kubeconfig", m1, "exec", "-i", "shell", "--", "sh"], { cwd: dir });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stdin!.write("echo alive\n");
    await waitFor("the session", async () => out.includes("alive"));
    expect((await memberStreams()).open).toBe(before.open + 1);
    child.kill("SIGKILL");
    await waitFor("the member's stream closed", async () => (await memberStreams()).open === before.open);
  });
});

/** Creates a ManifestWork in m1's namespace and resolves how many ms it took to be Applied. */
async function workApplied(name: string): Promise<number> {
  const t0 = performance.now();
  const work = {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name },
    spec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "1" } }] } },
  };
  expect((await admin(hub, "POST", "/apis/work.open-cluster-management.io/v1/namespaces/m1/manifestworks", work)).status).toBe(201);
  await waitFor(
    `the work ${name} Applied`,
    async () =>
      cond((await admin(hub, "GET", `/apis/work.open-cluster-management.io/v1/namespaces/m1/manifestworks/${name}`)).body, "Applied")?.status === "True",
    20_000,
    20,
  );
  return performance.now() - t0;
}

const EXEC = "/api/v1/namespaces/default/pods/shell/exec";

describe("WebSocket streams under hostile use: the channel and the other streams go on", () => {
  it("a new work reaches the agent within 1 s while an exec streams 50 MiB", async () => {
    const MIB = 1024 * 1024;
    const ws = await openSocket(`${EXEC}?command=head&command=-c&command=${50 * MIB}&command=/dev/zero&stdout=true`, ["v5.channel.k8s.io"]);
    let got = 0;
    ws.on("message", (d: Buffer) => {
      if (d[0] === 1) got += d.length - 1;
    });
    const end = closed(ws);
    await waitFor("the stream to start", async () => got > MIB);
    const t1 = performance.now();
    const ms = await workApplied("during-exec");
    const streamed = got;
    console.log(
      `proxy-stream: a work reached Applied ${ms.toFixed(0)} ms after its create while an exec streamed (${(streamed / MIB).toFixed(1)} MiB by then)`,
    );
    expect(ms).toBeLessThan(1000);
    expect(streamed).toBeLessThan(50 * MIB);
    expect(await end).toBe(1000);
    expect(got).toBe(50 * MIB);
    console.log(`proxy-stream: exec carried 50 MiB in ${((performance.now() - t1) / 1000).toFixed(1)} s after the first MiB`);
  });

  it("an oversized message closes its stream with 1009; the channel goes on", async () => {
    const before = await memberStreams();
    const ws = await openSocket(`${EXEC}?command=cat&stdin=true&stdout=true`, ["v5.channel.k8s.io"]);
    let echoed = "";
    ws.on("message", (d: Buffer) => (echoed += d.subarray(1).toString()));
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("small\n")]));
    await waitFor("the echo", async () => echoed.includes("small"));
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.alloc(100 * 1024, 0x61)]));
    expect(await closed(ws)).toBe(1009);
    await waitFor("the member's stream closed", async () => (await memberStreams()).open === before.open);
    expect((await kubectl(m1, ["exec", "shell", "--", "echo", "still"])).out).toBe("still\n");
  });

  it("a flood of stdin the member does not read is closed with 1008 at the hub's bound; the channel goes on", async () => {
    const before = await memberStreams();
    // `sleep` never reads its stdin: the member stops reading the socket, as a full pipe would.
    const ws = await openSocket(`${EXEC}?command=sleep&command=3&stdin=true&stdout=true`, ["v5.channel.k8s.io"]);
    const end = closed(ws);
    const chunk = Buffer.concat([Buffer.from([0]), Buffer.alloc(64 * 1024 - 1, 0x62)]);
    let sent = 0;
    while (ws.readyState === ws.OPEN && sent < 256 * 1024 * 1024) {
      await new Promise<void>((r) => ws.send(chunk, () => r()));
      sent += chunk.length;
    }
    expect(await end).toBe(1008);
    console.log(`proxy-stream: a stdin flood was closed after the client wrote ${(sent / 1024 / 1024).toFixed(1)} MiB`);
    // The member's process ends on its own (it never read, so it never saw the socket go).
    await waitFor("the member's stream closed", async () => (await memberStreams()).open === before.open, 20_000);
    expect((await kubectl(m1, ["get", "pod", "shell", "-o", "name"])).out).toBe("pod/shell\n");
    expect(await workApplied("after-flood")).toBeLessThan(1000);
  });

  it("idle (slowloris) streams hold at most the cluster's 32 streams: beyond, 429; works still arrive; freed once closed", async () => {
    const idle: WebSocket[] = [];
    try {
      for (let i = 0; i < 31; i++) idle.push(await openSocket(`${EXEC}?command=sleep&command=600&stdin=true&stdout=true`, ["v5.channel.k8s.io"]));
      // (Reading the member's count is a proxied request too: looked at with one slot left.)
      await waitFor("31 member streams", async () => (await memberStreams()).open >= 31);
      idle.push(await openSocket(`${EXEC}?command=sleep&command=600&stdin=true&stdout=true`, ["v5.channel.k8s.io"]));
      await expect(openSocket(`${EXEC}?command=echo&command=x&stdout=true`, ["v5.channel.k8s.io"])).rejects.toThrow("HTTP 429");
      // One byte a second on one of them changes nothing.
      idle[0]!.send(Buffer.from([0, 0x61]));
      expect(await workApplied("during-idle")).toBeLessThan(1000);
    } finally {
      for (const ws of idle) ws.close();
    }
    await waitFor("the streams freed", async () => (await memberStreams()).open === 0);
    expect((await kubectl(m1, ["exec", "shell", "--", "echo", "free"])).out).toBe("free\n");
  });
});
