/**
 * Teams on one hub, end to end: a hub under `npm start` over HTTPS trusting a local OpenID Connect
 * issuer this file serves on loopback (keys made with jose), driven with the real kubectl. Each
 * user is an ID token passed with `kubectl --token`. Checks `kubectl auth whoami`, an
 * `auth can-i` matrix whose expected answers are what kube-apiserver's RBAC answers for the same
 * objects (users, groups; namespaced and cluster-scoped; subresources; resourceNames; paths), and
 * enforcement: a user with `edit` in team-a writes there and is refused in team-b with nothing
 * written, a watch streams one namespace (across namespaces: Forbidden), and escalation is refused.
 */
import { execFile, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import {} from "node:fs";
import type { AddressInfo } from "node:net";
import {} from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHub, type Hub } from "../../scripts/hub-process.ts";
import { waitFor, scratchDir, writeAdminKubeconfig } from "./support.ts";

const run = promisify(execFile);
const { dir, file } = scratchDir("flotilla-authz-");

let hub: Hub;
let issuer: Server;
let issuerUrl: string;
let privateKey: CryptoKey;
let kubeconfig: string;

/**
 * Runs kubectl (as the admin, or as `token`'s user); resolves its exit code, its stdout (`stdout`)
 * and both streams (`out`).
 */
async function kubectl(args: string[], token?: string): Promise<{ code: number; stdout: string; out: string }> {
  const all = ["--kubeconfig", kubeconfig, "--cache-dir", path.join(dir, "cache"), ...(token ? ["--token", token] : []), ...args];
  try {
    const { stdout, stderr } = await run("kubectl", all, { cwd: dir });
    return { code: 0, stdout, out: `${stdout}${stderr}` };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === "number" ? err.code : -1, stdout: err.stdout ?? "", out: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}

async function ok(args: string[], token?: string): Promise<string> {
  const r = await kubectl(args, token);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.out}`);
  return r.stdout;
}

/** An ID token of the local issuer for `sub` (user `oidc:<sub>`) in `groups`, valid for an hour. */
function idToken(sub: string, groups: string[] = []): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ groups })
    .setProtectedHeader({ alg: "RS256", kid: "e2e" })
    .setIssuer(issuerUrl)
    .setSubject(sub)
    .setAudience("flotilla")
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(privateKey);
}

const OCM = "cluster.open-cluster-management.io";

/** The RBAC objects of the matrix, applied by the admin. */
const POLICY = `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:alice"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-view, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:bob"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: placement-reader, namespace: team-a}
rules:
- {verbs: [get, list], apiGroups: [${OCM}], resources: [placements]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: devs-read, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: placement-reader}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: devs}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: web-only, namespace: team-b}
rules:
- {verbs: [get], apiGroups: [${OCM}], resources: [placements], resourceNames: [web]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-web, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web-only}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:carol"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-reader}
rules:
- {verbs: [get, list, watch], apiGroups: [${OCM}], resources: [managedclusters, managedclustersets, managedclusters/status]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carol-cluster-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-reader}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:carol"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dan-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:dan"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: placement-operator}
rules:
- {verbs: ["*"], apiGroups: [${OCM}], resources: [placements]}
- {verbs: [get, patch], apiGroups: ["*"], resources: ["*/status"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: platform-operators}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: placement-operator}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: platform}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: erin-admin, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:erin"}]
`;

/** Users by name: their token's subject and groups. */
const USERS: Record<string, { sub: string; groups: string[] }> = {
  alice: { sub: "alice", groups: [] },
  bob: { sub: "bob", groups: ["devs"] },
  carol: { sub: "carol", groups: [] },
  dan: { sub: "dan", groups: [] },
  eve: { sub: "eve", groups: [] },
  frank: { sub: "frank", groups: ["platform"] },
  grace: { sub: "grace", groups: [] },
};
const tokens: Record<string, string> = {};

/**
 * `kubectl auth can-i` cases: user ("admin" is the admin token), arguments, and the answer
 * kube-apiserver's RBAC gives for POLICY (and its bootstrap roles: edit, view, admin,
 * system:discovery, system:basic-user).
 */
const MATRIX: [string, string[], boolean][] = [
  // alice: edit in team-a (a RoleBinding to the edit ClusterRole).
  ["alice", ["create", "placements", "-n", "team-a"], true],
  ["alice", ["create", "placements", "-n", "team-b"], false],
  ["alice", ["delete", "manifestworks", "-n", "team-a"], true],
  ["alice", ["get", "secrets", "-n", "team-a"], true],
  ["alice", ["update", "placements", "--subresource=status", "-n", "team-a"], false],
  ["alice", ["get", "placements", "--subresource=status", "-n", "team-a"], true],
  ["alice", ["get", "managedclusters"], false],
  ["alice", ["create", "rolebindings", "-n", "team-a"], false],
  ["alice", ["list", "placements", "-A"], false],
  ["alice", ["patch", "manifestworkreplicasets", "-n", "team-a"], true],
  // bob: view in team-b, and in group devs (placement-reader in team-a).
  ["bob", ["list", "placements", "-n", "team-b"], true],
  ["bob", ["watch", "placements", "-n", "team-b"], true],
  ["bob", ["create", "placements", "-n", "team-b"], false],
  ["bob", ["get", "secrets", "-n", "team-b"], false],
  ["bob", ["list", "placements", "-n", "team-a"], true],
  ["bob", ["watch", "placements", "-n", "team-a"], false],
  ["bob", ["delete", "placements", "-n", "team-a"], false],
  ["bob", ["get", "manifestworks", "-n", "team-a"], false],
  ["bob", ["get", "manifestworks", "-n", "team-b"], true],
  ["bob", ["update", "placements", "--subresource=status", "-n", "team-b"], false],
  // carol: one Placement by name in team-b; cluster-reader cluster-wide.
  ["carol", ["get", "placements/web", "-n", "team-b"], true],
  ["carol", ["get", "placements/other", "-n", "team-b"], false],
  ["carol", ["get", "placements", "-n", "team-b"], false],
  ["carol", ["list", "placements", "-n", "team-b"], false],
  ["carol", ["get", "managedclusters"], true],
  ["carol", ["list", "managedclusters"], true],
  ["carol", ["delete", "managedclusters"], false],
  ["carol", ["get", "managedclusters", "--subresource=status"], true],
  ["carol", ["update", "managedclusters", "--subresource=status"], false],
  ["carol", ["get", `managedclustersets.${OCM}/dev`], true],
  ["carol", ["create", "managedclustersets", "--subresource=bind"], false],
  // dan: admin everywhere (a ClusterRoleBinding to admin).
  ["dan", ["create", "rolebindings", "-n", "team-b"], true],
  ["dan", ["create", "roles", "-n", "default"], true],
  ["dan", ["list", "secrets", "-A"], true],
  ["dan", ["create", "managedclusters"], false],
  ["dan", ["escalate", "roles", "-n", "team-b"], false],
  ["dan", ["create", "clusterroles"], false],
  // eve: authenticated only.
  ["eve", ["get", "placements", "-n", "team-a"], false],
  ["eve", ["create", "selfsubjectaccessreviews"], true],
  ["eve", ["create", "selfsubjectrulesreviews"], true],
  ["eve", ["create", "subjectaccessreviews"], false],
  ["eve", ["get", "/apis"], true],
  ["eve", ["get", "/healthz"], true],
  ["eve", ["get", "/metrics"], false],
  ["eve", ["post", "/apis"], false],
  // frank: in group platform (placement-operator cluster-wide, with "*" verbs and "*/status").
  ["frank", ["deletecollection", "placements", "-n", "team-a"], true],
  ["frank", ["patch", "placements", "--subresource=status", "-n", "team-b"], true],
  ["frank", ["patch", "manifestworks", "--subresource=status", "-n", "team-a"], true],
  ["frank", ["patch", "manifestworks", "-n", "team-a"], false],
  ["frank", ["list", "placements", "-A"], true],
  // grace: not in platform.
  ["grace", ["patch", "placements", "-n", "team-a"], false],
  // the admin token: system:masters.
  ["admin", ["*", "*"], true],
  ["admin", ["delete", "managedclusters"], true],
];

beforeAll(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true });
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: "e2e", alg: "RS256", use: "sig" };
  issuer = createServer((req, res) => {
    const body =
      req.url === "/.well-known/openid-configuration" ? { issuer: issuerUrl, jwks_uri: `${issuerUrl}/keys` } : req.url === "/keys" ? { keys: [jwk] } : null;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => issuer.listen(0, "127.0.0.1", resolve));
  issuerUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}`;
  hub = await startHub({
    https: true,
    env: { FLOTILLA_OIDC_ISSUER_URL: issuerUrl, FLOTILLA_OIDC_AUDIENCE: "flotilla", FLOTILLA_OIDC_USERNAME_PREFIX: "oidc:" },
  });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  for (const [name, u] of Object.entries(USERS)) tokens[name] = await idToken(u.sub, u.groups);
  await ok(["apply", "-f", file("policy.yaml", POLICY)]);
});

afterAll(async () => {
  await hub?.stop();
  await new Promise<void>((resolve) => (issuer ? issuer.close(() => resolve()) : resolve()));
});

describe("OIDC users and RBAC with kubectl", () => {
  it("kubectl auth whoami names the OIDC user and their groups, and the admin", async () => {
    const me = await ok(["auth", "whoami"], tokens.bob);
    expect(me).toMatch(/Username\s+oidc:bob/);
    expect(me).toMatch(/Groups\s+\[devs system:authenticated\]/);
    const admin = await ok(["auth", "whoami"]);
    expect(admin).toMatch(/Username\s+flotilla:admin/);
    expect(admin).toMatch(/Groups\s+\[system:masters system:authenticated\]/);
    // A token of another key, or for another audience, is nobody.
    const forged = await kubectl(["auth", "whoami"], `${tokens.bob!.slice(0, -6)}AAAAAA`);
    expect(forged.code).not.toBe(0);
    expect(forged.out).toContain("Unauthorized");
  });

  it("kubectl --as: whoami, can-i and get answer as the impersonated user; impersonating needs the grant", async () => {
    // The admin (system:masters) may impersonate anyone; the request is then the impersonated user's only.
    const asBob = await ok(["auth", "whoami", "--as", "oidc:bob"]);
    expect(asBob).toMatch(/Username\s+oidc:bob/);
    expect(asBob).toMatch(/Groups\s+\[system:authenticated\]/);
    expect(await ok(["auth", "whoami", "--as", "oidc:bob", "--as-group", "devs", "--as-uid", "u-1"])).toMatch(
      /Username\s+oidc:bob\s+UID\s+u-1\s+Groups\s+\[devs system:authenticated\]/,
    );
    // bob views team-b: the attack run's SelfSubjectAccessReview answered "yes" here (as the admin).
    const canI = await kubectl(["auth", "can-i", "create", "placements", "-n", "team-b", "--as", "oidc:bob"]);
    expect([canI.code, canI.stdout.trim()]).toEqual([1, "no"]);
    expect((await ok(["auth", "can-i", "list", "placements", "-n", "team-b", "--as", "oidc:bob"])).trim()).toBe("yes");
    // team-a's placements are the group devs' to read: bob alone is refused, bob in devs reads them.
    const alone = await kubectl(["get", "placements", "-n", "team-a", "--as", "oidc:bob"]);
    expect(alone.code).toBe(1);
    expect(alone.out).toContain(`User "oidc:bob" cannot list resource "placements" in API group "${OCM}" in the namespace "team-a"`);
    expect((await kubectl(["get", "placements", "-n", "team-a", "--as", "oidc:bob", "--as-group", "devs"])).code).toBe(0);
    // A user without the grant is refused with kube-apiserver's message (kubectl's whoami words a 403 its own way).
    for (const args of [
      ["auth", "can-i", "delete", "managedclusters", "--as", "flotilla:admin"],
      ["get", "managedclusters", "--as", "flotilla:admin", "--as-group", "system:masters"],
    ]) {
      const r = await kubectl(args, tokens.bob);
      expect(r.code, args.join(" ")).not.toBe(0);
      expect(r.out).toContain(`users "flotilla:admin" is forbidden: User "oidc:bob" cannot impersonate resource "users" in API group "" at the cluster scope`);
    }
    const whoamiRefused = await kubectl(["auth", "whoami", "--as", "flotilla:admin"], tokens.bob);
    expect(whoamiRefused.code).not.toBe(0);
    expect(whoamiRefused.out).toContain("you do not have permission to call it");
    // edit in team-a holds `impersonate` on team-a's ServiceAccounts (as Kubernetes' edit role).
    const sa = await ok(["auth", "whoami", "--as", "system:serviceaccount:team-a:ci"], tokens.alice);
    expect(sa).toMatch(/Username\s+system:serviceaccount:team-a:ci/);
    expect(sa).toMatch(/Groups\s+\[system:serviceaccounts system:serviceaccounts:team-a system:authenticated\]/);
    const otherNs = await kubectl(["get", "placements", "-n", "team-b", "--as", "system:serviceaccount:team-b:ci"], tokens.alice);
    expect(otherNs.code).toBe(1);
    expect(otherNs.out).toContain(
      `serviceaccounts "ci" is forbidden: User "oidc:alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-b"`,
    );
  });

  it(`kubectl auth can-i answers as kube-apiserver in ${MATRIX.length} cases`, async () => {
    expect(MATRIX.length).toBeGreaterThanOrEqual(40);
    const wrong: string[] = [];
    for (const [user, args, expected] of MATRIX) {
      const r = await kubectl(["auth", "can-i", ...args], user === "admin" ? undefined : tokens[user]);
      // stdout is the answer; stderr may warn (a cluster-scoped resource asked with a namespace).
      const answer = r.stdout.trim();
      const got = r.code === 0 && answer === "yes" ? true : r.code === 1 && answer.startsWith("no") ? false : null;
      if (got !== expected) wrong.push(`${user} can-i ${args.join(" ")}: expected ${expected ? "yes" : "no"}, got exit ${r.code}: ${r.out.trim()}`);
    }
    expect(wrong).toEqual([]);
  });

  it("kubectl auth can-i --list shows the user's rules in a namespace", async () => {
    const list = await ok(["auth", "can-i", "--list", "-n", "team-a"], tokens.alice);
    expect(list).toMatch(/^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs/);
    expect(list).toMatch(/\nplacements\.cluster\.open-cluster-management\.io\s+\[\]\s+\[\]\s+\[create update patch delete deletecollection get list watch\]/);
    expect(list).toMatch(/\nplacements\.cluster\.open-cluster-management\.io\/status\s+\[\]\s+\[\]\s+\[get list watch\]/);
    expect(list).not.toContain("managedclusters.cluster.open-cluster-management.io");
    expect(list).toMatch(/selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]/);
    expect(list).toMatch(/\[\/apis\/\*\]\s+\[\]\s+\[get\]/);
  });

  it("a user with edit in team-a creates a Placement there; in team-b the answer is 403 and nothing is written", async () => {
    const placement = (ns: string) =>
      file(`placement-${ns}.yaml`, `apiVersion: ${OCM}/v1beta1\nkind: Placement\nmetadata:\n  name: web\n  namespace: ${ns}\nspec: {}\n`);
    expect(await ok(["create", "-f", placement("team-a")], tokens.alice)).toContain(`placement.${OCM}/web created`);
    const denied = await kubectl(["create", "-f", placement("team-b")], tokens.alice);
    expect(denied.code).toBe(1);
    expect(denied.out).toContain(
      `Error from server (Forbidden): error when creating "${path.join(dir, "placement-team-b.yaml")}": placements.${OCM} is forbidden: User "oidc:alice" cannot create resource "placements" in API group "${OCM}" in the namespace "team-b"`,
    );
    const none = await kubectl(["get", "placement", "web", "-n", "team-b"]);
    expect(none.code).toBe(1);
    expect(none.out).toContain("NotFound");
    // Reading across namespaces needs cluster-wide list.
    expect((await kubectl(["get", "placements", "-A"], tokens.alice)).out).toContain(
      `cannot list resource "placements" in API group "${OCM}" at the cluster scope`,
    );
  });

  it("a watch streams only what the user may read: one namespace's, and across namespaces Forbidden", async () => {
    // kubectl get -w lists first; a bare watch is refused as a watch.
    const all = await kubectl(["get", "placements", "-A", "--watch", "--request-timeout=10s"], tokens.bob);
    expect(all.code).toBe(1);
    expect(all.out).toContain(`User "oidc:bob" cannot list resource "placements" in API group "${OCM}" at the cluster scope`);
    const raw = await kubectl(["get", "--raw", `/apis/${OCM}/v1beta1/placements?watch=1&timeoutSeconds=5`], tokens.bob);
    expect(raw.code).toBe(1);
    expect(raw.out).toContain(`User "oidc:bob" cannot watch resource "placements" in API group "${OCM}" at the cluster scope`);
    const watcher = spawn(
      "kubectl",
      [
        "--kubeconfig",
        kubeconfig,
        "--cache-dir",
        path.join(dir, "cache"),
        "--token",
        tokens.bob!,
        "get",
        "placements",
        "-n",
        "team-b",
        "--watch",
        "--output-watch-events",
        "-o",
        "custom-columns=EVENT:.type,NS:.object.metadata.namespace,NAME:.object.metadata.name",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let seen = "";
    watcher.stdout.on("data", (d: Buffer) => (seen += d.toString()));
    try {
      const placement = (ns: string, name: string) =>
        file(`w-${ns}-${name}.yaml`, `apiVersion: ${OCM}/v1beta1\nkind: Placement\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec: {}\n`);
      await ok(["create", "-f", placement("team-b", "first-b")]);
      await waitFor("bob's watch to run (team-b's first Placement)", async () => /ADDED\s+team-b\s+first-b/.test(seen), 20_000);
      // Written in this order, team-a's Placement would come before team-b's second in the stream.
      await ok(["create", "-f", placement("team-a", "seen-by-none")]);
      await ok(["create", "-f", placement("team-b", "seen-by-bob")]);
      await waitFor("bob's watch to show team-b's second Placement", async () => /ADDED\s+team-b\s+seen-by-bob/.test(seen), 20_000);
      expect(seen).not.toContain("team-a");
      expect(seen).not.toContain("seen-by-none");
    } finally {
      watcher.kill();
    }
  });

  it("refuses escalation: an admin of team-a may not grant what they do not hold", async () => {
    const role = file(
      "role.yaml",
      `apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cluster-peek, namespace: team-a}\nrules:\n- {verbs: [get], apiGroups: [${OCM}], resources: [managedclusters]}\n`,
    );
    const refused = await kubectl(["create", "-f", role], await idToken("erin"));
    expect(refused.code).toBe(1);
    expect(refused.out).toContain(
      `roles.rbac.authorization.k8s.io "cluster-peek" is forbidden: user "oidc:erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`,
    );
    const bind = await kubectl(
      ["create", "rolebinding", "erin-root", "--clusterrole=cluster-admin", "--user=oidc:erin", "-n", "team-a"],
      await idToken("erin"),
    );
    expect(bind.code).toBe(1);
    expect(bind.out).toContain("is attempting to grant RBAC permissions not currently held");
    // Within what admin holds, the same user may delegate.
    expect(await ok(["create", "rolebinding", "zoe-view", "--clusterrole=view", "--user=oidc:zoe", "-n", "team-a"], await idToken("erin"))).toContain(
      "rolebinding.rbac.authorization.k8s.io/zoe-view created",
    );
  });
  it("clusterset join, bind and accept: refused without the permission, allowed with it (OCM's checks)", async () => {
    const token = await idToken("olga");
    const yaml = (name: string, text: string) => file(name, text);
    // Olga may manage clusters and bindings, and nothing of OCM's guarded permissions yet.
    await ok([
      "apply",
      "-f",
      yaml(
        "olga.yaml",
        `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: olga-clusters}
rules:
- {verbs: [get, list, create, update, patch], apiGroups: [${OCM}], resources: [managedclusters, managedclustersetbindings]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: olga-clusters}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: olga-clusters}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:olga"}]
`,
      ),
    ]);
    const cluster = yaml(
      "olga-cluster.yaml",
      `apiVersion: ${OCM}/v1\nkind: ManagedCluster\nmetadata:\n  name: olga-1\n  labels: {${OCM}/clusterset: team-a}\nspec: {hubAcceptsClient: false}\n`,
    );
    const joinRefused = await kubectl(["create", "-f", cluster], token);
    expect(joinRefused.code).toBe(1);
    expect(joinRefused.out).toContain(
      `managedclustersets/join.${OCM} "team-a" is forbidden: user "oidc:olga" cannot add/remove a ManagedCluster to/from ManagedClusterSet "team-a"`,
    );
    expect((await kubectl(["get", "managedcluster", "olga-1"])).out).toContain("NotFound");
    const binding = yaml(
      "olga-binding.yaml",
      `apiVersion: ${OCM}/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: team-a, namespace: team-a}\nspec: {clusterSet: team-a}\n`,
    );
    const bindRefused = await kubectl(["create", "-f", binding], token);
    expect(bindRefused.code).toBe(1);
    expect(bindRefused.out).toContain(`managedclustersets/bind.${OCM} "team-a" is forbidden: user "oidc:olga" is not allowed to bind cluster set "team-a"`);
    // Granted join and bind for team-a, and accept for olga-1.
    await ok([
      "apply",
      "-f",
      yaml(
        "olga-grants.yaml",
        `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: olga-team-a}
rules:
- {verbs: [create], apiGroups: [${OCM}], resources: [managedclustersets/join, managedclustersets/bind], resourceNames: [team-a]}
- {verbs: [update], apiGroups: [register.open-cluster-management.io], resources: [managedclusters/accept], resourceNames: [olga-1]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: olga-team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: olga-team-a}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:olga"}]
`,
      ),
    ]);
    expect(await ok(["create", "-f", cluster], token)).toContain(`managedcluster.${OCM}/olga-1 created`);
    expect(await ok(["create", "-f", binding], token)).toContain("created");
    const accept = await kubectl(["patch", "managedcluster", "olga-1", "--type=merge", "-p", '{"spec":{"hubAcceptsClient":true}}'], token);
    expect(accept.out).toContain("patched");
    expect(await ok(["get", "managedcluster", "olga-1", "-o", "jsonpath={.spec.hubAcceptsClient}"])).toBe("true");
    // Moving it to a set Olga may not join is refused, and leaves it where it was.
    const move = await kubectl(["label", "managedcluster", "olga-1", `${OCM}/clusterset=team-b`, "--overwrite"], token);
    expect(move.code).toBe(1);
    expect(move.out).toContain(`ManagedClusterSet "team-b"`);
    expect(await ok(["get", "managedcluster", "olga-1", "-o", `jsonpath={.metadata.labels.cluster\\.open-cluster-management\\.io/clusterset}`])).toBe("team-a");
  });
  it("the cluster view lists exactly the clusters of the sets a user may get", async () => {
    await ok([
      "apply",
      "-f",
      file(
        "vera.yaml",
        `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: vera-team-a}
rules:
- {verbs: [list, watch], apiGroups: [clusterview.open-cluster-management.io], resources: [managedclusters, managedclustersets]}
- {verbs: [get], apiGroups: [${OCM}], resources: [managedclustersets], resourceNames: [team-a]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: vera-team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: vera-team-a}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: "oidc:vera"}]
`,
      ),
    ]);
    await ok([
      "apply",
      "-f",
      file(
        "team-a-set.yaml",
        `apiVersion: ${OCM}/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: team-a}\nspec: {}\n---\napiVersion: ${OCM}/v1\nkind: ManagedCluster\nmetadata:\n  name: vera-b\n  labels: {${OCM}/clusterset: team-b}\nspec: {hubAcceptsClient: false}\n`,
      ),
    ]);
    const token = await idToken("vera");
    const expected = (await ok(["get", "managedclusters", "-l", `${OCM}/clusterset=team-a`, "-o", "jsonpath={.items[*].metadata.name}"]))
      .split(" ")
      .filter(Boolean)
      .sort();
    expect(expected.length).toBeGreaterThan(0);
    const seen = (await ok(["get", "managedclusters.clusterview.open-cluster-management.io", "-o", "jsonpath={.items[*].metadata.name}"], token))
      .split(" ")
      .filter(Boolean)
      .sort();
    expect(seen).toEqual(expected);
    expect(seen).not.toContain("vera-b");
    expect((await ok(["get", "managedclustersets.clusterview.open-cluster-management.io", "-o", "name"], token)).trim()).toBe(
      `managedclusterset.${OCM}/team-a`,
    );
    expect((await kubectl(["get", "managedclusters"], token)).out).toContain("Forbidden");
  });
});
