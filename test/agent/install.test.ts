/**
 * The agent's install manifests (agent/src/install.ts, `flotilla-agent install`):
 * 1. their shapes, as data (security context, RBAC rules, env wiring, option checks, the CLI);
 * 2. the real kubectl applies them cleanly to the simulated member cluster;
 * 3. an agent process started with exactly the configuration the applied Deployment carries
 *    (env resolved from the Secret and the downward API, the container's args) joins a real hub,
 *    and every request it makes to the member cluster, including a key rotation, is allowed by
 *    the rendered RBAC (checked by a small RBAC evaluator over a recording proxy);
 * 4. the image as a user builds it: agent/Containerfile built without a container runtime from
 *    exactly the context .dockerignore admits (scripts/image-build.ts), whose agent joins the hub
 *    (`--simulate`); the shared hub modules in that context are the declared set
 *    agent/shared-modules.json;
 * 5. the package as a user installs it (`npm run pack`): bundles and launchers, no tests, no
 *    dependencies; installed into an empty folder, `flotilla --version` answers and
 *    `flotilla-agent --simulate` joins the hub.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { agentImage } from "../../scripts/agent-image.ts";
import { agentDockerignore, buildImage, containerfiles, sharedModules, type ImageBuild } from "../../scripts/image-build.ts";
import { admin, createBootstrapToken, startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubeconfigFor, startSimulatedCluster, type SimulatedCluster } from "../../agent/sim/index.ts";
import { runCli } from "../../agent/src/cli.ts";
import { CREDENTIALS_SECRET_NAME } from "../../agent/src/credentials.ts";
import {
  BOOTSTRAP_SECRET_NAME,
  InstallOptionsError,
  defaultAgentImage,
  renderInstallManifests,
  toMultiDocumentYaml,
  type InstallOptions,
  type ManifestObject,
  type PolicyRule,
} from "../../agent/src/install.ts";
import { MC, cond, merge, waitFor } from "../e2e/support.ts";
import { RbacAuthorizer } from "../../src/auth/rbac.ts";
import {
  serviceAccountGroups,
  serviceAccountUsername,
  type ClusterRole,
  type ClusterRoleBinding,
  type RequestAttributes,
  type Role,
  type RoleBinding,
} from "../../src/auth/rbac-types.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkgVersion = (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;
const TOKEN = "abcdef.0123456789abcdef";
const base: InstallOptions = {
  hubUrl: "https://hub.example.com",
  clusterName: "east-1",
  bootstrapToken: TOKEN,
  image: "registry.example.com/flotilla-agent:test",
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Whether `o` is the work agent's ClusterRole or ClusterRoleBinding (`flotilla-agent-work-<ns>`). */
const isWorkRbac = (o: ManifestObject): boolean => o.metadata.name.startsWith("flotilla-agent-work-");

/** The one object of `kind`, leaving out the work agent's ClusterRole and binding. */
function byKind(objs: readonly ManifestObject[], kind: string): Json {
  const found = objs.filter((o) => o.kind === kind && !isWorkRbac(o));
  expect(found, kind).toHaveLength(1);
  return found[0];
}

/** The work agent's ClusterRole or ClusterRoleBinding. */
function workRbac(objs: readonly ManifestObject[], kind: "ClusterRole" | "ClusterRoleBinding"): Json {
  const found = objs.filter((o) => o.kind === kind && isWorkRbac(o));
  expect(found, kind).toHaveLength(1);
  return found[0];
}

// ---------------------------------------------------------------------------------------------
// kubectl and the simulated cluster

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real kubectl binary with `input` on stdin. */
function kubectl(kubeconfig: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", ["--kubeconfig", kubeconfig, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

async function kubectlJson(kubeconfig: string, args: string[]): Promise<Json> {
  const r = await kubectl(kubeconfig, [...args, "-o", "json"]);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-install-"));
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  while (closers.length) await closers.pop()?.();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function sim(name: string): Promise<SimulatedCluster> {
  const s = await startSimulatedCluster({ statePath: path.join(tmp, `${name}.json`) });
  closers.push(() => s.close());
  return s;
}

// ---------------------------------------------------------------------------------------------
// The agent's real traffic checked against the rendered rules: kube-apiserver's RequestInfo for
// each request, and the hub's RBAC evaluator (src/auth/rbac.ts, the one the simulated cluster
// uses too) over the rendered Roles and bindings.

/** What kube-apiserver's RequestInfoFactory derives from a method and URL. */
function requestAttributes(method: string, rawUrl: string): RequestAttributes {
  const url = new URL(rawUrl, "http://x");
  const parts = url.pathname.split("/").filter(Boolean);
  const nonResource = (): RequestAttributes => ({ verb: method.toLowerCase(), path: url.pathname });
  let rest: string[];
  let group: string;
  if (parts[0] === "api" && parts.length >= 3) [group, rest] = ["", parts.slice(2)];
  else if (parts[0] === "apis" && parts.length >= 4) [group, rest] = [parts[1]!, parts.slice(3)];
  else return nonResource();
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 2) {
    namespace = rest[1];
    // GET /api/v1/namespaces/foo is the Namespace foo, in namespace foo; deeper paths are namespaced resources.
    if (rest.length > 2 && !["status", "finalize"].includes(rest[2]!)) rest = rest.slice(2);
  }
  const [resource, name, sub] = rest;
  const watch = url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
  const verb =
    method === "GET"
      ? name
        ? "get"
        : watch
          ? "watch"
          : "list"
      : method === "POST"
        ? "create"
        : method === "PUT"
          ? "update"
          : method === "PATCH"
            ? "patch"
            : method === "DELETE"
              ? name
                ? "delete"
                : "deletecollection"
              : method.toLowerCase();
  return { verb, apiGroup: group, resource: resource ?? "", subresource: sub ?? "", namespace: namespace ?? "", name: name ?? "" };
}

/** An authorizer for the ServiceAccount `namespace/name` from rendered objects (RBAC as kube-apiserver's). */
function authorizerFor(objs: readonly ManifestObject[], sa: { namespace: string; name: string }): (a: RequestAttributes) => boolean {
  const of = <T>(kind: string): T[] => objs.filter((o) => o.kind === kind) as unknown as T[];
  const rbac = new RbacAuthorizer({
    roles: of<Role>("Role"),
    clusterRoles: of<ClusterRole>("ClusterRole"),
    roleBindings: of<RoleBinding>("RoleBinding"),
    clusterRoleBindings: of<ClusterRoleBinding>("ClusterRoleBinding"),
  });
  const user = { name: serviceAccountUsername(sa.namespace, sa.name), groups: [...serviceAccountGroups(sa.namespace), "system:authenticated"] };
  return (a) => rbac.authorize(user, a).allowed;
}

/** An HTTP proxy in front of `target` that records each request's method and URL. */
async function recordingProxy(target: string): Promise<{ url: string; requests: Array<{ method: string; url: string }>; close(): Promise<void> }> {
  const requests: Array<{ method: string; url: string }> = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? "GET", url: req.url ?? "/" });
    const upstream = http.request(new URL(req.url ?? "/", target), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// 1. shapes

describe("install manifests: shapes", () => {
  it("renders Namespace, ServiceAccount, bootstrap Secret, RBAC and Deployment, in apply order", () => {
    const objs = renderInstallManifests(base);
    expect(objs.map((o) => `${o.apiVersion}/${o.kind}/${o.metadata.name}`)).toEqual([
      "v1/Namespace/flotilla-agent",
      "v1/ServiceAccount/flotilla-agent",
      "v1/Secret/flotilla-bootstrap",
      "rbac.authorization.k8s.io/v1/ClusterRole/flotilla-agent-flotilla-agent",
      "rbac.authorization.k8s.io/v1/ClusterRoleBinding/flotilla-agent-flotilla-agent",
      "rbac.authorization.k8s.io/v1/Role/flotilla-agent",
      "rbac.authorization.k8s.io/v1/RoleBinding/flotilla-agent",
      "rbac.authorization.k8s.io/v1/ClusterRole/flotilla-agent-work-flotilla-agent",
      "rbac.authorization.k8s.io/v1/ClusterRoleBinding/flotilla-agent-work-flotilla-agent",
      "apps/v1/Deployment/flotilla-agent",
    ]);
    for (const o of objs) {
      const clusterScoped = ["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(o.kind);
      expect(o.metadata.namespace, o.kind).toBe(clusterScoped ? undefined : "flotilla-agent");
    }
    expect(byKind(objs, "Secret")).toMatchObject({
      type: "Opaque",
      stringData: { "hub-url": "https://hub.example.com", "cluster-name": "east-1", "bootstrap-token": TOKEN },
    });
  });

  it("grants the agent the least RBAC (read-only cluster rules, its Secret and records) and works a separate cluster-admin-level role", () => {
    const objs = renderInstallManifests({ ...base, namespace: "fleet" });
    expect(byKind(objs, "ClusterRole").rules).toEqual([
      { apiGroups: [""], resources: ["namespaces"], resourceNames: ["kube-system", "fleet"], verbs: ["get"] },
      { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
      { apiGroups: ["about.k8s.io"], resources: ["clusterproperties"], verbs: ["get", "list"] },
      { apiGroups: ["cluster.open-cluster-management.io"], resources: ["clusterclaims"], verbs: ["list"] },
      { nonResourceURLs: ["/version", "/livez", "/healthz"], verbs: ["get"] },
      // Executor works: ServiceAccounts only, never users or groups (system:masters).
      { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
      // Add-ons: their Leases (health), in their install namespaces.
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get"] },
    ]);
    expect(byKind(objs, "Role")).toMatchObject({
      metadata: { name: "flotilla-agent", namespace: "fleet" },
      rules: [
        { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: [CREDENTIALS_SECRET_NAME], verbs: ["get", "update", "delete"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: ["flotilla-bootstrap"], verbs: ["get"] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "create", "update", "delete"] },
      ],
    });
    expect(byKind(objs, "Role").rules[0].resourceNames).toBeUndefined();
    const sa = [{ kind: "ServiceAccount", name: "flotilla-agent", namespace: "fleet" }];
    expect(byKind(objs, "ClusterRoleBinding")).toMatchObject({
      metadata: { name: "flotilla-agent-fleet" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "flotilla-agent-fleet" },
      subjects: sa,
    });
    expect(byKind(objs, "RoleBinding")).toMatchObject({ roleRef: { kind: "Role", name: "flotilla-agent" }, subjects: sa });
    // The agent's own roles: no write verb cluster-wide, and no wildcard at all.
    const all: PolicyRule[] = [...byKind(objs, "ClusterRole").rules, ...byKind(objs, "Role").rules];
    expect(JSON.stringify(all)).not.toContain("*");
    expect(byKind(objs, "ClusterRole").rules.flatMap((r: PolicyRule) => r.verbs)).not.toEqual(expect.arrayContaining(["create"]));
    // Works may carry any kind: their role is everything (OCM's work agent is cluster-admin-level), bound to the same ServiceAccount.
    expect(workRbac(objs, "ClusterRole")).toMatchObject({
      metadata: { name: "flotilla-agent-work-fleet" },
      rules: [
        { apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
        { nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*"], verbs: ["get"] },
      ],
    });
    expect(workRbac(objs, "ClusterRoleBinding")).toMatchObject({ roleRef: { kind: "ClusterRole", name: "flotilla-agent-work-fleet" }, subjects: sa });
    const canWork = authorizerFor(objs, { namespace: "fleet", name: "flotilla-agent" });
    expect(canWork(requestAttributes("DELETE", "/apis/apps/v1/namespaces/default/deployments/web"))).toBe(true);
    expect(canWork(requestAttributes("GET", "/apis/apps/v1"))).toBe(true);

    // Without the work role, the authorizer agrees: what the agent needs is allowed, its neighbours are not.
    const can = authorizerFor(
      objs.filter((o) => !isWorkRbac(o)),
      { namespace: "fleet", name: "flotilla-agent" },
    );
    expect(can(requestAttributes("GET", "/api/v1/namespaces/kube-system"))).toBe(true);
    expect(can(requestAttributes("POST", "/api/v1/namespaces/fleet/secrets"))).toBe(true);
    expect(can(requestAttributes("PUT", `/api/v1/namespaces/fleet/secrets/${CREDENTIALS_SECRET_NAME}`))).toBe(true);
    expect(can(requestAttributes("GET", "/livez"))).toBe(true);
    expect(can(requestAttributes("GET", "/api/v1/namespaces/default"))).toBe(false);
    expect(can(requestAttributes("GET", "/api/v1/namespaces/fleet/secrets"))).toBe(false);
    // The bootstrap Secret is read only when the hub refuses the credentials (recovery); never written.
    expect(can(requestAttributes("GET", `/api/v1/namespaces/fleet/secrets/${BOOTSTRAP_SECRET_NAME}`))).toBe(true);
    expect(can(requestAttributes("PUT", `/api/v1/namespaces/fleet/secrets/${BOOTSTRAP_SECRET_NAME}`))).toBe(false);
    expect(can(requestAttributes("POST", "/api/v1/namespaces/default/secrets"))).toBe(false);
    expect(can(requestAttributes("GET", "/api/v1/nodes/sim-node-1"))).toBe(false);
    expect(can(requestAttributes("GET", "/readyz"))).toBe(false);
    expect(authorizerFor(objs, { namespace: "fleet", name: "other" })(requestAttributes("GET", "/livez"))).toBe(false);
  });

  it("runs the Deployment non-root with a read-only root filesystem, no capabilities and seccomp RuntimeDefault", () => {
    const deploy = byKind(renderInstallManifests(base), "Deployment");
    expect(deploy.spec).toMatchObject({
      replicas: 1,
      strategy: { type: "Recreate" },
      selector: { matchLabels: { "app.kubernetes.io/name": "flotilla-agent" } },
    });
    const pod = deploy.spec.template.spec;
    expect(deploy.spec.template.metadata.labels).toMatchObject(deploy.spec.selector.matchLabels);
    expect(pod.serviceAccountName).toBe("flotilla-agent");
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0];
    expect(c.image).toBe("registry.example.com/flotilla-agent:test");
    expect(c.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    // The only writable place is the emptyDir at /tmp, where TMPDIR points.
    expect(c.volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }]);
    expect(c.env).toContainEqual({ name: "TMPDIR", value: "/tmp" });
    expect(c.resources.requests).toEqual({ cpu: "50m", memory: "64Mi" });
    expect(c.resources.limits).toEqual({ cpu: "500m", memory: "128Mi" });
    expect(c.livenessProbe).toBeUndefined();
  });

  it("wires the configuration from the bootstrap Secret and the namespace from the downward API; claims become args", () => {
    const objs = renderInstallManifests({
      ...base,
      claims: [
        { name: "region.example.com", value: "eu=west" },
        { name: "tier", value: "gold" },
      ],
    });
    const c = byKind(objs, "Deployment").spec.template.spec.containers[0];
    const ref = (key: string, optional?: boolean): Json => ({ secretKeyRef: { name: BOOTSTRAP_SECRET_NAME, key, ...(optional ? { optional } : {}) } });
    expect(c.env).toEqual([
      { name: "FLOTILLA_HUB_URL", valueFrom: ref("hub-url") },
      { name: "FLOTILLA_CLUSTER_NAME", valueFrom: ref("cluster-name") },
      { name: "FLOTILLA_BOOTSTRAP_TOKEN", valueFrom: ref("bootstrap-token", true) },
      { name: "FLOTILLA_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "TMPDIR", value: "/tmp" },
    ]);
    // Every key the Deployment reads exists in the Secret it renders.
    const secret = byKind(objs, "Secret");
    for (const e of c.env) if (e.valueFrom?.secretKeyRef) expect(Object.keys(secret.stringData)).toContain(e.valueFrom.secretKeyRef.key);
    expect(c.args).toEqual(["--log-format", "json", "--claim", "region.example.com=eu=west", "--claim", "tier=gold"]);
    // The bootstrap token is never in the Deployment itself.
    expect(JSON.stringify(byKind(objs, "Deployment"))).not.toContain(TOKEN);
  });

  it("refuses bad options with InstallOptionsError", () => {
    const bad: Array<[Partial<InstallOptions>, RegExp]> = [
      [{ hubUrl: "not a url" }, /--hub-url/],
      [{ hubUrl: "ftp://hub.example.com" }, /http or https/],
      [{ clusterName: "East_1" }, /--cluster-name/],
      [{ clusterName: "a".repeat(64) }, /--cluster-name/],
      [{ namespace: "Flotilla" }, /--namespace/],
      [{ bootstrapToken: "abcdef0123456789abcdef" }, /--bootstrap-token/],
      [{ image: "" }, /--image/],
      [{ claims: [{ name: "Bad Name", value: "x" }] }, /--claim/],
    ];
    for (const [patch, message] of bad) {
      expect(() => renderInstallManifests({ ...base, ...patch }), JSON.stringify(patch)).toThrow(InstallOptionsError);
      expect(() => renderInstallManifests({ ...base, ...patch })).toThrow(message);
    }
  });

  it("`flotilla-agent install` prints the manifests as multi-document YAML, with the versioned image by default", async () => {
    let out = "";
    const code = await runCli(
      [
        "node",
        "flotilla-agent",
        "install",
        "--hub-url",
        base.hubUrl,
        "--cluster-name",
        "east-1",
        "--bootstrap-token",
        TOKEN,
        "--namespace",
        "fleet",
        "--claim",
        "tier=gold",
      ],
      { writeOut: (s) => (out += s), writeErr: () => undefined, writeLog: () => undefined },
    );
    expect(code).toBe(0);
    const docs = parseAllDocuments(out).map((d) => d.toJS() as ManifestObject);
    const expected = renderInstallManifests({ ...base, namespace: "fleet", image: defaultAgentImage(pkgVersion), claims: [{ name: "tier", value: "gold" }] });
    expect(docs).toEqual(expected);
    expect(out).toBe(toMultiDocumentYaml(expected));
    expect(byKind(docs, "Deployment").spec.template.spec.containers[0].image).toBe(`flotilla-agent:${pkgVersion}`);

    let err = "";
    const run = (args: string[]): Promise<number> =>
      runCli(["node", "flotilla-agent", "install", ...args], { writeOut: () => undefined, writeErr: (s) => (err += s) });
    expect(await run(["--hub-url", base.hubUrl, "--cluster-name", "east-1"])).toBe(2);
    expect(err).toContain("--bootstrap-token");
    expect(await run(["--hub-url", base.hubUrl, "--cluster-name", "east-1", "--bootstrap-token", "nope"])).toBe(2);
    expect(err).toContain("must look like <id>.<secret>");
    expect(await run(["--hub-url", base.hubUrl, "--cluster-name", "east-1", "--bootstrap-token", TOKEN, "--claim", "novalue"])).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
// 2. kubectl apply

describe("install manifests: kubectl apply to the simulated member cluster", () => {
  it("applies cleanly, creates every object, and re-applies unchanged", async () => {
    const s = await sim("apply");
    const objs = renderInstallManifests({ ...base, claims: [{ name: "tier", value: "gold" }] });
    const yaml = toMultiDocumentYaml(objs);
    const first = await kubectl(s.kubeconfigPath, ["apply", "-f", "-"], yaml);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout.trim().split("\n")).toEqual([
      "namespace/flotilla-agent created",
      "serviceaccount/flotilla-agent created",
      "secret/flotilla-bootstrap created",
      "clusterrole.rbac.authorization.k8s.io/flotilla-agent-flotilla-agent created",
      "clusterrolebinding.rbac.authorization.k8s.io/flotilla-agent-flotilla-agent created",
      "role.rbac.authorization.k8s.io/flotilla-agent created",
      "rolebinding.rbac.authorization.k8s.io/flotilla-agent created",
      "clusterrole.rbac.authorization.k8s.io/flotilla-agent-work-flotilla-agent created",
      "clusterrolebinding.rbac.authorization.k8s.io/flotilla-agent-work-flotilla-agent created",
      "deployment.apps/flotilla-agent created",
    ]);

    const kc = s.kubeconfigPath;
    expect((await kubectlJson(kc, ["get", "namespace", "flotilla-agent"])).status.phase).toBe("Active");
    expect((await kubectlJson(kc, ["-n", "flotilla-agent", "get", "serviceaccount", "flotilla-agent"])).metadata.name).toBe("flotilla-agent");
    const secret = await kubectlJson(kc, ["-n", "flotilla-agent", "get", "secret", BOOTSTRAP_SECRET_NAME]);
    expect(Buffer.from(secret.data["bootstrap-token"], "base64").toString()).toBe(TOKEN);
    expect(Buffer.from(secret.data["hub-url"], "base64").toString()).toBe(base.hubUrl);
    expect((await kubectlJson(kc, ["get", "clusterrole", "flotilla-agent-flotilla-agent"])).rules).toEqual(byKind(objs, "ClusterRole").rules);
    expect((await kubectlJson(kc, ["get", "clusterrolebinding", "flotilla-agent-flotilla-agent"])).subjects).toEqual(
      byKind(objs, "ClusterRoleBinding").subjects,
    );
    expect((await kubectlJson(kc, ["-n", "flotilla-agent", "get", "role", "flotilla-agent"])).rules).toEqual(byKind(objs, "Role").rules);
    expect((await kubectlJson(kc, ["-n", "flotilla-agent", "get", "rolebinding", "flotilla-agent"])).roleRef.name).toBe("flotilla-agent");
    const deploy = await kubectlJson(kc, ["-n", "flotilla-agent", "get", "deployment", "flotilla-agent"]);
    expect(deploy.spec.strategy).toEqual({ type: "Recreate" });
    const c = deploy.spec.template.spec.containers[0];
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.env).toEqual(byKind(objs, "Deployment").spec.template.spec.containers[0].env);
    expect(c.args).toEqual(["--log-format", "json", "--claim", "tier=gold"]);

    // Re-applying changes nothing, except that the Secret reports "configured": stringData is
    // write-only (folded into data), so client-side apply always re-sends it, as on any cluster.
    const again = await kubectl(kc, ["apply", "-f", "-"], yaml);
    expect(again.code).toBe(0);
    const lines = again.stdout.trim().split("\n");
    expect(lines).toHaveLength(objs.length);
    expect(lines.filter((l) => !l.endsWith(" unchanged"))).toEqual(["secret/flotilla-bootstrap configured"]);

    // `flotilla-agent install | kubectl apply -f -` as a user types it, into another namespace.
    let out = "";
    expect(
      await runCli(
        ["node", "flotilla-agent", "install", "--hub-url", base.hubUrl, "--cluster-name", "east-1", "--bootstrap-token", TOKEN, "--namespace", "fleet"],
        {
          writeOut: (t) => (out += t),
        },
      ),
    ).toBe(0);
    const piped = await kubectl(kc, ["apply", "-f", "-"], out);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain("deployment.apps/flotilla-agent created");
    expect((await kubectlJson(kc, ["-n", "fleet", "get", "deployment", "flotilla-agent"])).metadata.namespace).toBe("fleet");

    // Server-side apply works too (and twice).
    const ssaYaml = toMultiDocumentYaml(renderInstallManifests({ ...base, namespace: "fleet-ssa" }));
    for (let i = 0; i < 2; i++) {
      const ssa = await kubectl(kc, ["apply", "--server-side", "-f", "-"], ssaYaml);
      expect(ssa.code, ssa.stderr).toBe(0);
      expect(
        ssa.stdout
          .trim()
          .split("\n")
          .every((l) => l.endsWith(" serverside-applied")),
      ).toBe(true);
    }
    expect((await kubectlJson(kc, ["get", "clusterrole", "flotilla-agent-fleet-ssa"])).rules[0].resourceNames).toEqual(["kube-system", "fleet-ssa"]);
  });
});

// ---------------------------------------------------------------------------------------------
// 3. the agent joins with the configuration the manifests carry

/**
 * Resolves a container's env the way the kubelet does: literal values, `secretKeyRef` read
 * from the member cluster (kubectl), `fieldRef: metadata.namespace` from the Deployment.
 */
async function resolveEnv(kubeconfig: string, deploy: Json, container: Json): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const secrets = new Map<string, Json>();
  for (const e of container.env ?? []) {
    if (typeof e.value === "string") env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      if (!secrets.has(ref.name)) secrets.set(ref.name, await kubectlJson(kubeconfig, ["-n", deploy.metadata.namespace, "get", "secret", ref.name]));
      const data = secrets.get(ref.name).data?.[ref.key];
      if (data === undefined && !ref.optional) throw new Error(`Secret ${ref.name} has no key ${ref.key}`);
      if (data !== undefined) env[e.name] = Buffer.from(data, "base64").toString("utf8");
    } else if (e.valueFrom?.fieldRef?.fieldPath === "metadata.namespace") env[e.name] = deploy.metadata.namespace;
    else throw new Error(`cannot resolve env ${JSON.stringify(e)}`);
  }
  return env;
}

/**
 * The container image's file system, without a container builder: the files the runtime stage of
 * agent/Containerfile copies from the build stage (whose `/src` is this repository after
 * `npm run build`), put in a temporary `/app`, and its ENTRYPOINT's command line.
 */
function imageFiles(): { app: string; entrypoint: string[]; env: Record<string, string> } {
  const image = agentImage();
  const app = fs.mkdtempSync(path.join(os.tmpdir(), "flotilla-image-"));
  closers.push(async () => fs.rmSync(app, { recursive: true, force: true }));
  for (const c of image.copies) {
    const from = path.join(root, c.from);
    const to = path.join(app, c.to.endsWith("/") ? path.join(c.to, path.basename(from)) : c.to);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.cpSync(from, to, { recursive: true });
  }
  return { app, entrypoint: image.entrypoint, env: image.env };
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)));
}

/**
 * Runs the agent as the image does (its files alone, its ENTRYPOINT and ENV) with `args` and
 * exactly `env`; resolves with the exit code and output.
 */
function agentProcess(args: string[], env: Record<string, string>): { exited: Promise<number | null>; output(): string; stop(): Promise<void> } {
  const image = imageFiles();
  const [node, ...rest] = image.entrypoint;
  expect(node).toBe("node");
  const child = spawn(process.execPath, [...rest, ...args], { cwd: image.app, env: { ...image.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    exited,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Runs a program to its end; resolves with its exit code and output. */
function runProgram(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, out }));
  });
}

/** Starts a long-running program (an agent); `stop()` sends SIGTERM and waits for its exit. */
function startProgram(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): { output(): string; stop(): Promise<void> } {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  closers.push(stop);
  return { output: () => out, stop };
}

/** Waits until ManagedCluster `name` is Joined and Available. */
async function joined(hub: Hub, name: string, output: () => string): Promise<void> {
  await waitFor(
    `${name} Joined and Available (agent output: ${output().slice(-2000)})`,
    async () => {
      const r = await admin(hub, "GET", `${MC}/${name}`);
      return r.status === 200 && cond(r.body, "ManagedClusterJoined")?.status === "True" && cond(r.body, "ManagedClusterConditionAvailable")?.status === "True";
    },
    60_000,
  );
}

describe("the container image", () => {
  it("the agent's shared hub modules are the declared set: the bundle reads exactly those from src/, and .dockerignore is written from them", () => {
    const record = JSON.parse(fs.readFileSync(path.join(root, "dist", "agent-inputs.json"), "utf8")) as { files: Record<string, string> };
    expect(Object.keys(record.files).filter((f) => f.startsWith("src/"))).toEqual(sharedModules());
    expect(fs.readFileSync(path.join(root, ".dockerignore"), "utf8")).toBe(agentDockerignore());
  });

  it("holds only the agent bundle: no TypeScript, no node_modules, no package.json; it runs from those files alone", async () => {
    const image = imageFiles();
    const files = filesUnder(image.app);
    expect(files).toContain(path.join("dist", "agent", "flotilla-agent.mjs"));
    expect(files.filter((f) => /\.(ts|tsx|mts|cts)$/.test(f) || f.includes("node_modules") || f.endsWith("package.json"))).toEqual([]);
    expect(image.entrypoint.at(-1)).toBe("dist/agent/flotilla-agent.mjs");
    const run = agentProcess(["install", "--hub-url", "https://hub.example.com", "--cluster-name", "c1", "--bootstrap-token", "abcdef.0123456789abcdef"], {
      PATH: process.env.PATH ?? "",
    });
    expect(await run.exited).toBe(0);
    const deploy = parseAllDocuments(run.output())
      .map((d) => d.toJS() as Json)
      .find((o) => o.kind === "Deployment");
    expect(deploy?.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "500m", memory: "128Mi" } });
  });
});

describe("joining a real hub: an agent with the install manifests' configuration, the built image's, the installed package's", () => {
  let hub: Hub;
  beforeAll(async () => {
    hub = await startHub();
    closers.push(() => hub.stop());
  });

  it("registers, is accepted, joins, rotates its key, and stays within the rendered RBAC", async () => {
    const namespace = "flotilla-system";
    const clusterName = "installed-1";
    const token = await createBootstrapToken(hub);
    const objs = renderInstallManifests({
      hubUrl: hub.url,
      clusterName,
      bootstrapToken: token,
      namespace,
      image: defaultAgentImage(pkgVersion),
      claims: [{ name: "tier.example.com", value: "gold" }],
    });
    const s = await sim("join");
    const applied = await kubectl(s.kubeconfigPath, ["apply", "-f", "-"], toMultiDocumentYaml(objs));
    expect(applied.code, applied.stderr).toBe(0);

    // What a pod of this Deployment would get: its container's args and resolved env.
    const deploy = await kubectlJson(s.kubeconfigPath, ["-n", namespace, "get", "deployment", "flotilla-agent"]);
    const container = deploy.spec.template.spec.containers[0];
    const env = await resolveEnv(s.kubeconfigPath, deploy, container);
    expect(env).toEqual({
      FLOTILLA_HUB_URL: hub.url,
      FLOTILLA_CLUSTER_NAME: clusterName,
      FLOTILLA_BOOTSTRAP_TOKEN: token,
      FLOTILLA_NAMESPACE: namespace,
      TMPDIR: "/tmp",
    });

    // The sim is not in-cluster: the kubeconfig stands in for the ServiceAccount's token. It
    // points at a recording proxy so the agent's requests can be checked against the RBAC.
    const proxy = await recordingProxy(s.url);
    closers.push(() => proxy.close());
    const kubeconfig = path.join(tmp, "proxy-kubeconfig.yaml");
    fs.writeFileSync(kubeconfig, kubeconfigFor(proxy.url));

    const agent = agentProcess([...container.args, "--kubeconfig", kubeconfig], env);
    closers.push(() => agent.stop());
    const mcPath = `${MC}/${clusterName}`;
    await waitFor("the ManagedCluster", async () => (await admin(hub, "GET", mcPath)).status === 200, 60_000).catch((e: unknown) => {
      throw new Error(`${String(e)}\nagent output:\n${agent.output()}`);
    });
    // The credentials Secret went to the namespace the downward API named.
    const creds = await kubectlJson(s.kubeconfigPath, ["-n", namespace, "get", "secret", CREDENTIALS_SECRET_NAME]);
    expect(Buffer.from(creds.data["cluster-name"], "base64").toString()).toBe(clusterName);

    const accept = await admin(hub, "PATCH", mcPath, { spec: { hubAcceptsClient: true } }, merge);
    expect(accept.status).toBe(200);
    const joined = await waitFor(
      "ManagedClusterJoined=True",
      async () => {
        const mc = (await admin(hub, "GET", mcPath)).body;
        return cond(mc, "ManagedClusterJoined")?.status === "True" && (mc.status?.clusterClaims ?? []).length > 0 ? mc : undefined;
      },
      60_000,
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}\nagent output:\n${agent.output()}`);
    });
    // The args carried the claim, and the agent logs JSON as the args asked.
    expect(joined.status.clusterClaims).toContainEqual({ name: "tier.example.com", value: "gold" });
    expect(
      agent
        .output()
        .split("\n")
        .find((l) => l.trim() !== ""),
    ).toMatch(/^\{.*\}$/);
    await agent.stop();
    expect(await agent.exited).toBe(0);

    // Key rotation with the same configuration reads and replaces the credentials Secret.
    const before = creds.data["private-key"];
    const rotate = agentProcess(["rotate-key", "--kubeconfig", kubeconfig], env);
    expect(await rotate.exited, rotate.output()).toBe(0);
    const after = (await kubectlJson(s.kubeconfigPath, ["-n", namespace, "get", "secret", CREDENTIALS_SECRET_NAME])).data["private-key"];
    expect(after).not.toBe(before);

    // Every request the agent made is allowed by the rendered RBAC, even without the work role
    // (no works were applied here), and the traffic covered the interesting rules (so this
    // check is not vacuous).
    const can = authorizerFor(
      objs.filter((o) => !isWorkRbac(o)),
      { namespace, name: "flotilla-agent" },
    );
    const seen = proxy.requests.map((r) => ({ ...r, attrs: requestAttributes(r.method, r.url) }));
    const denied = seen.filter((r) => !can(r.attrs));
    expect(denied.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    const has = (verb: string, what: Record<string, string>): boolean =>
      seen.some((r) => r.attrs.verb === verb && Object.entries(what).every(([k, v]) => (r.attrs as unknown as Record<string, unknown>)[k] === v));
    expect(has("get", { resource: "namespaces", name: "kube-system" })).toBe(true);
    expect(has("create", { resource: "secrets", namespace })).toBe(true);
    expect(has("get", { resource: "secrets", name: CREDENTIALS_SECRET_NAME })).toBe(true);
    expect(has("update", { resource: "secrets", name: CREDENTIALS_SECRET_NAME })).toBe(true);
    expect(has("list", { resource: "nodes" })).toBe(true);
    expect(has("list", { resource: "configmaps", namespace })).toBe(true);
    expect(has("list", { apiGroup: "about.k8s.io", resource: "clusterproperties" })).toBe(true);
    expect(has("list", { apiGroup: "cluster.open-cluster-management.io", resource: "clusterclaims" })).toBe(true);
    expect(has("get", { path: "/version" })).toBe(true);
    expect(has("get", { path: "/livez" })).toBe(true);
  });

  it("each Containerfile builds from the context its ignore file admits, and the agent image's agent joins a hub (--simulate)", async () => {
    expect(containerfiles()).toEqual(["agent/Containerfile"]);
    let built: ImageBuild | undefined;
    try {
      built = await buildImage("agent/Containerfile", { tmpDir: tmp, runEnv: { npm_config_prefer_offline: "true" } });
    } finally {
      if (built) closers.push(async () => fs.rmSync(built!.dir, { recursive: true, force: true }));
    }
    // The context: the lock file, the agent, the bundler and the declared hub modules, nothing else.
    expect(built.context.filter((f) => f.startsWith("src/"))).toEqual(sharedModules());
    expect(built.context.filter((f) => !f.startsWith("src/") && !f.startsWith("agent/"))).toEqual([
      "package-lock.json",
      "package.json",
      "scripts/build-agent.mjs",
    ]);
    expect(filesUnder(built.contextDir).sort()).toEqual(built.context);

    // The image holds the bundle alone, and it is the bundle the repository builds (which the
    // install tests and `npm run bench:agent` run as the image's, scripts/agent-image.ts).
    const image = built.image;
    const app = path.join(image.root, image.workdir);
    const files = filesUnder(app);
    expect(files).toContain("dist/agent/flotilla-agent.mjs");
    expect(files.filter((f) => /\.(ts|tsx|mts|cts)$/.test(f) || f.includes("node_modules") || f.endsWith("package.json"))).toEqual([]);
    for (const f of files.filter((f) => f.endsWith(".mjs"))) {
      expect(fs.readFileSync(path.join(app, f)).equals(fs.readFileSync(path.join(root, f))), `${f} differs from the repository's build`).toBe(true);
    }

    // Its ENTRYPOINT and ENV, from its WORKDIR, with no more environment than PATH.
    const token = await createBootstrapToken(hub, { autoApprove: true });
    const [node, ...flags] = image.entrypoint!;
    expect(node).toBe("node");
    const agent = startProgram(
      process.execPath,
      [
        ...flags,
        "--simulate",
        "--simulate-state",
        path.join(tmp, "image-1.json"),
        "--hub-url",
        hub.url,
        "--cluster-name",
        "image-1",
        "--bootstrap-token",
        token,
      ],
      { cwd: app, env: { PATH: process.env.PATH ?? "", ...image.env } },
    );
    await joined(hub, "image-1", agent.output);
    await agent.stop();
  });

  it("npm run pack: the bundles and launchers, no tests and no dependencies; installed into an empty folder, both programs run against a hub", async () => {
    const packed = await runProgram("npm", ["run", "--silent", "pack"], { cwd: root });
    expect(packed.code, packed.out).toBe(0);
    const tarball = path.join(root, /dist\/flotilla-[^:\s]+\.tgz/.exec(packed.out)![0]);
    const listing = spawnSync("tar", ["tzf", tarball], { encoding: "utf8" }).stdout.trim().split("\n").sort();
    expect(listing).toContain("package/dist/agent/flotilla-agent.mjs");
    expect(listing).toContain("package/dist/agent/flotilla.mjs");
    expect(listing).toContain("package/agent/bin/flotilla.js");
    expect(
      listing.filter((f) => !/^package\/(dist\/agent\/.+\.mjs|agent\/bin\/flotilla(-agent)?\.js|package\.json|README\.md|THIRD_PARTY_LICENSES\.txt)$/.test(f)),
    ).toEqual([]);
    // The repository's own `npm pack` holds no tests either.
    const rootPack = await runProgram("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root });
    expect(rootPack.code, rootPack.out).toBe(0);
    const rootFiles = (JSON.parse(rootPack.out.slice(rootPack.out.indexOf("["))) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(rootFiles.filter((f) => /^(test|bench|src|\.ci|scripts)\//.test(f) || f.endsWith(".ts"))).toEqual([]);

    // Into an empty folder, from the tarball alone.
    const dir = path.join(tmp, "installed");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ private: true }));
    const install = await runProgram("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: dir });
    expect(install.code, install.out).toBe(0);
    expect(fs.readdirSync(path.join(dir, "node_modules")).filter((n) => !n.startsWith("."))).toEqual(["flotilla"]);
    const bin = (name: string) => path.join(dir, "node_modules", ".bin", name);
    const env = { PATH: process.env.PATH ?? "", HOME: dir };

    const version = await runProgram(bin("flotilla"), ["--version"], { cwd: dir, env });
    expect(version).toEqual({ code: 0, out: `${pkgVersion}\n` });
    const created = await runProgram(
      bin("flotilla"),
      ["token", "create", "--auto-approve", "--cluster-name", "package-1", "--hub-url", hub.url, "--token", hub.adminToken],
      {
        cwd: dir,
        env,
      },
    );
    expect(created.code, created.out).toBe(0);
    expect(created.out).toContain(`--image flotilla-agent:${pkgVersion} | kubectl apply -f -`);
    const token = /[a-z0-9]{6}\.[a-z0-9]{16}/.exec(created.out)![0];
    const agent = startProgram(
      bin("flotilla-agent"),
      ["--simulate", "--simulate-state", path.join(tmp, "package-1.json"), "--hub-url", hub.url, "--cluster-name", "package-1", "--bootstrap-token", token],
      { cwd: dir, env },
    );
    await joined(hub, "package-1", agent.output);
    const get = await runProgram(bin("flotilla"), ["get", "clusters", "package-1", "--hub-url", hub.url, "--token", hub.adminToken], { cwd: dir, env });
    expect(get.code, get.out).toBe(0);
    expect(get.out).toMatch(/package-1\s+true/);
    await agent.stop();
  });
});
