/**
 * ManifestWork `spec.executor` admission (src/kinds/manifestwork-executor.ts) over the API, inside workerd:
 * OCM's `execute-as` check for OIDC users whose RBAC the admin grants, its update rule, the
 * replica set template, the executor's shape (422), and `system:masters` passing.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces, snapshot, WORKS, MWRS } from "./helpers.ts";
import { callAs, idToken, serveIssuer } from "./oidc-users.ts";
import worker from "../../src/index.ts";
import type { Env } from "../../src/env.ts";
import { featureEnabled } from "../../src/features.ts";

const W = "work.open-cluster-management.io";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const merge = "application/merge-patch+json";

let undo: () => void;

/** Grants `oidc:<user>` the rules of a new Role `<name>` in `ns`. */
async function grant(user: string, ns: string, name: string, rules: unknown[]) {
  expect(
    (
      await call("POST", `${RBAC}/namespaces/${ns}/roles`, {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: `${user}-${name}` },
        rules,
      })
    ).status,
  ).toBe(201);
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `${user}-${name}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `${user}-${name}` },
    subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: `oidc:${user}` }],
  };
  expect((await call("POST", `${RBAC}/namespaces/${ns}/rolebindings`, binding)).status).toBe(201);
}

const executor = (namespace: string, name: string) => ({ subject: { type: "ServiceAccount", serviceAccount: { namespace, name } } });
const work = (name: string, exec?: unknown) => ({
  apiVersion: `${W}/v1`,
  kind: "ManifestWork",
  metadata: { name },
  spec: {
    workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" } }] },
    ...(exec ? { executor: exec } : {}),
  },
});

beforeAll(async () => {
  undo = await serveIssuer();
  await createNamespaces("exec-c1", "exec-team");
  const writeWorks = { apiGroups: [W], resources: ["manifestworks", "manifestworkreplicasets"], verbs: ["get", "list", "create", "update", "patch", "delete"] };
  // Alice writes works in exec-c1 and may execute as apps/deployer only; Bob writes works, nothing more.
  await grant("alice", "exec-c1", "works", [
    writeWorks,
    { apiGroups: [W], resources: ["manifestworks"], verbs: ["execute-as"], resourceNames: ["system:serviceaccount:apps:deployer"] },
  ]);
  await grant("bob", "exec-c1", "works", [writeWorks]);
  await grant("bob", "exec-team", "works", [writeWorks]);
});

afterAll(() => undo());

describe("ManifestWork executor admission (OCM execute-as)", () => {
  it("creating a work with an executor needs execute-as on that ServiceAccount; a refusal writes nothing", async () => {
    const before = await snapshot();
    const refused = await callAs("bob", "POST", WORKS("exec-c1"), work("w1", executor("apps", "deployer")));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message: `manifestworks.${W} "w1" is forbidden: user "oidc:bob" cannot manipulate the Manifestwork with executor apps/deployer in namespace exec-c1`,
      details: { group: W, kind: "manifestworks", name: "w1" },
    });
    // A dry run is checked as the write.
    expect((await callAs("bob", "POST", `${WORKS("exec-c1")}?dryRun=All`, work("w1", executor("apps", "deployer")))).status).toBe(403);
    expect(await snapshot()).toBe(before);
    expect((await call("GET", `${WORKS("exec-c1")}/w1`)).status).toBe(404);
    // Alice holds execute-as for apps/deployer (named after it), not for another ServiceAccount.
    expect((await callAs("alice", "POST", WORKS("exec-c1"), work("w1", executor("apps", "deployer")))).status).toBe(201);
    expect((await callAs("alice", "POST", WORKS("exec-c1"), work("w2", executor("apps", "admin")))).status).toBe(403);
    // No executor: nothing to check (OCM's NilExecutorValidating gate is off by default).
    expect((await callAs("bob", "POST", WORKS("exec-c1"), work("w3"))).status).toBe(201);
    // The admin (system:masters) passes.
    expect((await call("POST", WORKS("exec-c1"), work("w4", executor("kube-system", "root")))).status).toBe(201);
  });

  it("an update is checked only when it changes the executor (OCM's rule)", async () => {
    // Bob may change other fields of a work whose executor stays as it was.
    const labelled = await callAs("bob", "PATCH", `${WORKS("exec-c1")}/w1`, { metadata: { labels: { tier: "web" } } }, merge);
    expect(labelled.status).toBe(200);
    // Adding, changing or removing... adding and changing are checked; removing is not (no executor).
    expect((await callAs("bob", "PATCH", `${WORKS("exec-c1")}/w3`, { spec: { executor: executor("apps", "deployer") } }, merge)).status).toBe(403);
    expect((await callAs("alice", "PATCH", `${WORKS("exec-c1")}/w4`, { spec: { executor: executor("apps", "other") } }, merge)).status).toBe(403);
    expect((await call("GET", `${WORKS("exec-c1")}/w4`)).body.spec.executor).toEqual(executor("kube-system", "root"));
    expect((await callAs("alice", "PATCH", `${WORKS("exec-c1")}/w4`, { spec: { executor: executor("apps", "deployer") } }, merge)).status).toBe(200);
    expect((await callAs("bob", "PATCH", `${WORKS("exec-c1")}/w4`, { spec: { executor: null } }, merge)).status).toBe(200);
  });

  it("the grant may also name resource serviceaccounts of the work group (the issue's wording)", async () => {
    await grant("bob", "exec-c1", "execute-as-sa", [
      { apiGroups: [W], resources: ["serviceaccounts"], verbs: ["execute-as"], resourceNames: ["system:serviceaccount:apps:bob"] },
    ]);
    expect((await callAs("bob", "POST", WORKS("exec-c1"), work("w5", executor("apps", "bob")))).status).toBe(201);
  });

  it("a replica set's template executor is checked in the replica set's namespace", async () => {
    const mwrs = (name: string) => ({
      apiVersion: `${W}/v1alpha1`,
      kind: "ManifestWorkReplicaSet",
      metadata: { name },
      spec: { placementRefs: [{ name: "all" }], manifestWorkTemplate: work("x", executor("apps", "deployer")).spec },
    });
    const refused = await callAs("bob", "POST", MWRS("exec-team"), mwrs("rs1"));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      `manifestworkreplicasets.${W} "rs1" is forbidden: user "oidc:bob" cannot manipulate the ManifestWorkReplicaSet with executor apps/deployer in namespace exec-team`,
    );
    expect((await call("POST", MWRS("exec-team"), mwrs("rs1"))).status).toBe(201);
  });

  it("the executor's shape is validated as OCM's CRD and webhook do (422 naming the field)", async () => {
    const cases: [unknown, string, string][] = [
      [{}, "spec.executor.subject", "FieldValueRequired"],
      [{ subject: { type: "User" } }, "spec.executor.subject.type", ""],
      [{ subject: { type: "ServiceAccount" } }, "spec.executor.subject.serviceAccount", "FieldValueRequired"],
      [
        { subject: { type: "ServiceAccount", serviceAccount: { namespace: "Apps", name: "d" } } },
        "spec.executor.subject.serviceAccount.namespace",
        "FieldValueInvalid",
      ],
      [{ subject: { type: "ServiceAccount", serviceAccount: { namespace: "apps" } } }, "spec.executor.subject.serviceAccount.name", ""],
    ];
    for (const [exec, field, reason] of cases) {
      const res = await call("POST", WORKS("exec-c1"), work("bad", exec));
      expect(res.status, JSON.stringify(exec)).toBe(422);
      const causes = res.body.details.causes as { field: string; reason: string }[];
      expect(
        causes.some((c) => c.field === field && (!reason || c.reason === reason)),
        JSON.stringify(causes),
      ).toBe(true);
    }
  });
});

/** Calls the hub as `oidc:<sub>` with `FLOTILLA_FEATURE_GATES` set to `gates` (the Worker's handler, with its bindings and that var). */
async function callWithGates(gates: string, sub: string, method: string, path: string, body: unknown) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`https://hub.test${path}`, {
      method,
      headers: { authorization: `Bearer ${await idToken(sub)}`, "content-type": method === "PATCH" ? merge : "application/json" },
      body: JSON.stringify(body),
    }),
    { ...(env as unknown as Env), FLOTILLA_FEATURE_GATES: gates },
    ctx,
  );
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: JSON.parse(text) };
}

describe("the NilExecutorValidating feature gate (OCM's, off by default)", () => {
  const ON = "NilExecutorValidating=true";
  const mwrs = (name: string, exec?: unknown) => ({
    apiVersion: `${W}/v1alpha1`,
    kind: "ManifestWorkReplicaSet",
    metadata: { name },
    spec: { placementRefs: [{ name: "all" }], manifestWorkTemplate: work("x", exec).spec },
  });

  it("parses as --feature-gates does", () => {
    expect(featureEnabled({}, "NilExecutorValidating")).toBe(false);
    expect(featureEnabled({ FLOTILLA_FEATURE_GATES: "Other=true, NilExecutorValidating=True" }, "NilExecutorValidating")).toBe(true);
    expect(featureEnabled({ FLOTILLA_FEATURE_GATES: "NilExecutorValidating=1,NilExecutorValidating=false" }, "NilExecutorValidating")).toBe(false);
    expect(featureEnabled({ FLOTILLA_FEATURE_GATES: "NilExecutorValidating=yes" }, "NilExecutorValidating")).toBe(false);
  });

  it("off: a work or replica set without executor runs as the agent, unchecked; on: it needs execute-as on the agent's default identity", async () => {
    // Off (the default): bob, who may write works but execute as no one, runs a work as the agent.
    expect((await callWithGates("", "bob", "POST", WORKS("exec-c1"), work("nil-off"))).status).toBe(201);
    expect((await callWithGates("", "bob", "POST", MWRS("exec-team"), mwrs("nil-off"))).status).toBe(201);
    // On: the same is refused, worded as OCM's webhook with its default executor, and nothing is written.
    expect((await call("POST", WORKS("exec-c1"), work("nil-drop", executor("apps", "deployer")))).status).toBe(201);
    const before = await snapshot();
    const refused = await callWithGates(ON, "bob", "POST", WORKS("exec-c1"), work("nil-on"));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      `manifestworks.${W} "nil-on" is forbidden: user "oidc:bob" cannot manipulate the Manifestwork with executor /klusterlet-work-sa in namespace exec-c1`,
    );
    const refusedSet = await callWithGates(ON, "bob", "POST", MWRS("exec-team"), mwrs("nil-on"));
    expect(refusedSet.status).toBe(403);
    expect(refusedSet.body.message).toContain("cannot manipulate the ManifestWorkReplicaSet with executor /klusterlet-work-sa in namespace exec-team");
    // Dropping a work's executor is a change of executor: checked too.
    const dropped = await callWithGates(ON, "bob", "PATCH", `${WORKS("exec-c1")}/nil-drop`, { spec: { executor: null } });
    expect(dropped.status).toBe(403);
    expect(await snapshot()).toBe(before);
    // An update that keeps the (absent) executor is not checked (OCM's rule).
    expect((await callWithGates(ON, "bob", "PATCH", `${WORKS("exec-c1")}/nil-off`, { metadata: { labels: { a: "b" } } })).status).toBe(200);
    // The grant OCM's webhook asks for lets it through.
    await grant("bob", "exec-c1", "agent", [
      { apiGroups: [W], resources: ["manifestworks"], verbs: ["execute-as"], resourceNames: ["system:serviceaccount::klusterlet-work-sa"] },
    ]);
    expect((await callWithGates(ON, "bob", "POST", WORKS("exec-c1"), work("nil-on"))).status).toBe(201);
    // A named executor is checked as before; system:masters is never checked.
    expect((await callWithGates(ON, "bob", "POST", WORKS("exec-c1"), work("nil-named", executor("apps", "deployer")))).status).toBe(403);
  });
});
