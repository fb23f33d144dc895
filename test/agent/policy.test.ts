/**
 * Tests of the agent's policy controller (agent/src/policy/), OCM's config-policy-controller
 * semantics: the comparison tables (musthave merges maps and lists, mustonlyhave replaces them),
 * namespaceSelector wildcards, and the controller against the simulated member cluster over HTTP
 * (no mocks) for each compliance type, inform and enforce, with OCM's messages.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { compareObject, equivalent, merge } from "../../agent/src/policy/compare.ts";
import { PolicyController, intervalMs, type DeliveredPolicy } from "../../agent/src/policy/controller.ts";
import { wildcardMatch } from "../../agent/src/policy/evaluate.ts";
import { RestMapper } from "../../agent/src/work/discovery.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const NS = { group: "", version: "v1", resource: "namespaces" };
const CM = { group: "", version: "v1", resource: "configmaps" };

async function sim() {
  const cluster = await startSimulatedCluster();
  cleanups.push(() => cluster.close());
  const kc: KubeConfig = kubeConfigFromYaml(cluster.kubeconfigYaml);
  const client = new DynamicClient(kc);
  return { client, mapper: new RestMapper(client) };
}

async function getOrNull(client: DynamicClient, ref: Parameters<DynamicClient["get"]>[0]): Promise<Json | null> {
  try {
    return await client.get(ref);
  } catch (e) {
    if ((e as { code?: number }).code === 404) return null;
    throw e;
  }
}

let uid = 0;
/** A replicated Policy with one ConfigurationPolicy. */
function policy(name: string, configSpec: Json, opts: { remediationAction?: string; template?: string; uid?: string } = {}): DeliveredPolicy {
  return {
    metadata: { name, uid: opts.uid ?? `uid-${++uid}` },
    spec: {
      disabled: false,
      ...(opts.remediationAction ? { remediationAction: opts.remediationAction } : {}),
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: opts.template ?? "tmpl" },
            spec: configSpec,
          },
        },
      ],
    },
  };
}

const nsTemplate = (complianceType: string, name: string, extra: Json = {}) => ({
  complianceType,
  objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name, ...extra } },
});

describe("object template comparison (OCM's mergeSpecs / deeplyEquivalent)", () => {
  it("musthave: maps merge, list items are found in any order, quantities compare by value", () => {
    const live = {
      data: { a: "1", b: "2" },
      spec: {
        ports: [
          { name: "http", port: 80 },
          { name: "https", port: 443 },
        ],
        memory: "1024Mi",
      },
    };
    expect(compareObject({ data: { a: "1" } }, live, "musthave").mismatch).toBe(false);
    expect(compareObject({ data: { a: "2" } }, live, "musthave").mismatch).toBe(true);
    expect(compareObject({ spec: { ports: [{ port: 443 }] } }, live, "musthave").mismatch).toBe(false);
    expect(compareObject({ spec: { memory: "1Gi" } }, live, "musthave").mismatch).toBe(false);
    expect(compareObject({ spec: { memory: "2Gi" } }, live, "musthave").mismatch).toBe(true);
    // A new list item is added, the live ones kept.
    const added = compareObject({ spec: { ports: [{ name: "metrics", port: 9090 }] } }, live, "musthave");
    expect(added.mismatch).toBe(true);
    expect((added.updated.spec as Json).ports).toHaveLength(3);
    // A same-named item is merged in place (a Deployment's containers).
    const renamed = compareObject({ spec: { ports: [{ name: "http", port: 8080 }] } }, live, "musthave");
    expect((renamed.updated.spec as Json).ports).toEqual([
      { name: "http", port: 8080 },
      { name: "https", port: 443 },
    ]);
  });

  it("mustonlyhave: the template's maps and lists replace the live ones at the keys it names", () => {
    const live = { data: { a: "1", b: "2" }, other: { x: 1 } };
    const cmp = compareObject({ data: { a: "1" }, other: { x: 1 } }, live, "mustonlyhave");
    expect(cmp.mismatch).toBe(true);
    expect(cmp.updated).toEqual({ data: { a: "1" }, other: { x: 1 } });
    expect(compareObject({ data: { b: "2", a: "1" }, other: { x: 1 } }, live, "mustonlyhave").mismatch).toBe(false);
    expect(merge([1, 2], [2, 3], "mustonlyhave")).toEqual([1, 2]);
    expect(merge([1], [2, 3], "musthave")).toEqual([1, 2, 3]);
  });

  it("mustonlyhave: a top-level key the template lacks is extra (OCM's handleKeys), but metadata, status and a ServiceAccount's secrets", () => {
    // config-policy-controller test/e2e/case2_role_handling: a RoleBinding template without subjects.
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "pod-reader-e2e-binding", namespace: "default", uid: "u" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-reader-e2e" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:authenticated:oauth" }],
    };
    const { subjects: _s, ...tmpl } = binding;
    const cmp = compareObject(tmpl, binding, "mustonlyhave");
    expect(cmp.mismatch).toBe(true);
    expect(cmp.updated.subjects).toBeUndefined();
    expect(cmp.updated.roleRef).toEqual(binding.roleRef);
    // musthave leaves the live object's other keys alone.
    expect(compareObject(tmpl, binding, "musthave").mismatch).toBe(false);
    // metadataComplianceType does not turn the object's comparison into mustonlyhave.
    expect(compareObject(tmpl, binding, "musthave", "mustonlyhave").mismatch).toBe(false);
    expect(compareObject(binding, { ...binding, status: { x: 1 } }, "mustonlyhave").mismatch).toBe(false);
    const sa = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "sa" }, secrets: [{ name: "t" }], imagePullSecrets: [{ name: "p" }] };
    expect(compareObject({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "sa" } }, sa, "mustonlyhave").mismatch).toBe(false);
    expect(
      compareObject({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "sa" } }, { ...sa, automountServiceAccountToken: false }, "mustonlyhave")
        .mismatch,
    ).toBe(true);
  });

  it("metadata compares labels and annotations only, with metadataComplianceType", () => {
    const live = { metadata: { name: "x", uid: "u", labels: { a: "1", b: "2" }, annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" } } };
    expect(compareObject({ metadata: { name: "x" } }, live, "mustonlyhave").mismatch).toBe(false);
    expect(compareObject({ metadata: { name: "x", labels: { a: "1" } } }, live, "musthave").mismatch).toBe(false);
    const only = compareObject({ metadata: { name: "x", labels: { a: "1" } } }, live, "musthave", "mustonlyhave");
    expect(only.mismatch).toBe(true);
    expect((only.updated.metadata as Json).labels).toEqual({ a: "1" });
    expect((only.updated.metadata as Json).uid).toBe("u");
  });

  it("scalars compare by their text; a type mismatch is reported", () => {
    expect(equivalent({ n: "1" }, { n: 1 })).toBe(true);
    expect(compareObject({ data: ["a"] }, { data: { a: 1 } }, "musthave").typeError).toMatch(/object type of template and existing do not match/);
  });

  it("namespaceSelector patterns are Go's filepath.Match", () => {
    expect(wildcardMatch("kube-*", "kube-system")).toBe(true);
    expect(wildcardMatch("kube-*", "default")).toBe(false);
    expect(wildcardMatch("app-?", "app-1")).toBe(true);
    expect(wildcardMatch("app-[ab]", "app-c")).toBe(false);
    expect(wildcardMatch("*", "anything")).toBe(true);
  });

  it("evaluationInterval: Go durations, never, watch", () => {
    expect(intervalMs("10s", 5)).toBe(10_000);
    expect(intervalMs("1h30m", 5)).toBe(5_400_000);
    expect(intervalMs("never", 5)).toBe(Infinity);
    expect(intervalMs("watch", 5)).toBe("watch");
    expect(intervalMs(undefined, 5)).toBe("watch");
    expect(intervalMs("", 5)).toBe("watch");
    expect(intervalMs("soon", 5)).toBe(5);
  });
});

describe("policy controller on a simulated cluster", () => {
  it("musthave Namespace: inform reports NonCompliant; enforce creates it and turns Compliant", async () => {
    const { client, mapper } = await sim();
    const c = new PolicyController({ client, mapper }, 60_000);
    const informed = policy("default.policy-ns", { remediationAction: "inform", severity: "low", "object-templates": [nsTemplate("musthave", "prod")] });
    c.setPolicies([informed]);
    const [first] = await c.evaluate();
    expect(first!.policy).toBe("default.policy-ns");
    expect(first!.report.templates).toEqual([
      { name: "tmpl", compliant: "NonCompliant", message: "NonCompliant; violation - namespaces [prod] not found", timestamp: expect.any(String) },
    ]);
    expect(await getOrNull(client, { ...NS, namespace: "", name: "prod" })).toBeNull();
    c.reported(first!.policy, first!.report);
    // Nothing changed: nothing to send.
    expect(await c.evaluate()).toEqual([]);

    // The Policy's remediationAction overrides the template's.
    c.setPolicies([{ ...informed, spec: { ...informed.spec, remediationAction: "enforce" } }]);
    const [created] = await c.evaluate();
    expect(created!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: "Compliant; notification - namespaces [prod] was created successfully",
    });
    expect(await getOrNull(client, { ...NS, namespace: "", name: "prod" })).not.toBeNull();
  });

  it("musthave ConfigMap in enforce updates a mismatched object by merging; inform says found but not as specified", async () => {
    const { client, mapper } = await sim();
    await client.create(
      CM,
      "default",
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "default" }, data: { a: "0", keep: "yes" } },
      "test",
    );
    const tmpl = {
      complianceType: "musthave",
      objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "default" }, data: { a: "1" } },
    };
    const c = new PolicyController({ client, mapper }, 60_000);
    c.setPolicies([policy("p.cm", { remediationAction: "inform", "object-templates": [tmpl] })]);
    const [r] = await c.evaluate();
    expect(r!.report.templates[0]!.message).toBe("NonCompliant; violation - configmaps [cfg] found but not as specified in namespace default");
    c.setPolicies([policy("p.cm", { remediationAction: "enforce", "object-templates": [tmpl] })]);
    const [e] = await c.evaluate();
    expect(e!.report.templates[0]!.message).toBe("Compliant; notification - configmaps [cfg] was updated successfully in namespace default");
    expect((await client.get({ ...CM, namespace: "default", name: "cfg" })).data).toEqual({ a: "1", keep: "yes" });
  });

  it("mustonlyhave removes extra fields; then found as specified", async () => {
    const { client, mapper } = await sim();
    await client.create(
      CM,
      "default",
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "only", namespace: "default" }, data: { a: "1", extra: "x" } },
      "test",
    );
    const tmpl = {
      complianceType: "mustonlyhave",
      objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "only", namespace: "default" }, data: { a: "1" } },
    };
    const c = new PolicyController({ client, mapper }, 0);
    c.setPolicies([policy("p.only", { remediationAction: "enforce", "object-templates": [tmpl] })]);
    const [e] = await c.evaluate();
    expect(e!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: "Compliant; notification - configmaps [only] was updated successfully in namespace default",
    });
    expect((await client.get({ ...CM, namespace: "default", name: "only" })).data).toEqual({ a: "1" });
    c.reported(e!.policy, e!.report);
    // The default interval (0 here) evaluates again: now found as specified, a new message.
    const [again] = await c.evaluate();
    expect(again!.report.templates[0]!.message).toBe("Compliant; notification - configmaps [only] found as specified in namespace default");
  });

  it("mustonlyhave RoleBinding without subjects: NonCompliant against one with subjects; enforce removes them (OCM's case2)", async () => {
    // config-policy-controller test/e2e/case2_role_handling_test.go with its resources
    // case2_rolebinding_create_enforce.yaml and case2_rolebinding_create_patch.yaml.
    const { client, mapper } = await sim();
    const RB = { group: "rbac.authorization.k8s.io", version: "v1", resource: "rolebindings" };
    const binding = (subjects: boolean) => ({
      complianceType: "mustonlyhave",
      objectDefinition: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "pod-reader-e2e-binding" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-reader-e2e" },
        ...(subjects ? { subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:authenticated:oauth" }] } : {}),
      },
    });
    const spec = (remediationAction: string, subjects: boolean) => ({
      remediationAction,
      namespaceSelector: { include: ["default"] },
      "object-templates": [binding(subjects)],
    });
    const c = new PolicyController({ client, mapper }, 0);
    c.setPolicies([policy("p.rb", spec("enforce", true))]);
    expect((await c.evaluate())[0]!.report.templates[0]!.compliant).toBe("Compliant");
    const ref = { ...RB, namespace: "default", name: "pod-reader-e2e-binding" };
    expect((await client.get(ref)).subjects).toHaveLength(1);

    c.setPolicies([policy("p.rb", spec("inform", false))]);
    expect((await c.evaluate())[0]!.report.templates[0]).toMatchObject({
      compliant: "NonCompliant",
      message: "NonCompliant; violation - rolebindings [pod-reader-e2e-binding] found but not as specified in namespace default",
    });
    expect((await client.get(ref)).subjects).toHaveLength(1);

    c.setPolicies([policy("p.rb", spec("enforce", false))]);
    expect((await c.evaluate())[0]!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: "Compliant; notification - rolebindings [pod-reader-e2e-binding] was updated successfully in namespace default",
    });
    expect((await client.get(ref)).subjects).toBeUndefined();
  });

  it("mustonlyhave asks the API server with a dry-run update: what its defaults put back is found as specified", async () => {
    // A Namespace's spec (finalizers) and a Secret's type are not in the templates; OCM's dry-run
    // update shows the server keeps them, so the objects match (config-policy-controller
    // checkAndUpdateResource, "A mismatch was detected but a dry run update didn't make any changes").
    const { client, mapper } = await sim();
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "plain" } }, "test");
    const SECRET = { group: "", version: "v1", resource: "secrets" };
    await client.create(SECRET, "default", { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" }, data: { k: "dg==" } }, "test");
    const c = new PolicyController({ client, mapper }, 0);
    c.setPolicies([
      policy("p.dry", {
        remediationAction: "inform",
        "object-templates": [
          nsTemplate("mustonlyhave", "plain"),
          {
            complianceType: "mustonlyhave",
            objectDefinition: { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" }, data: { k: "dg==" } },
          },
        ],
      }),
    ]);
    const [r] = await c.evaluate();
    expect(r!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: "Compliant; notification - namespaces [plain] found as specified; notification - secrets [s] found as specified in namespace default",
    });
  });

  it("metadataComplianceType applies to labels and annotations whatever complianceType says (OCM's case9)", async () => {
    // config-policy-controller test/e2e/case9_md_check_test.go: case9_multianno_ns_create.yaml,
    // then case9_checkns-md-mh.yaml (Compliant) and case9_checkns-md-moh.yaml (NonCompliant).
    const { client, mapper } = await sim();
    const name = "case9-test-multi-annotation";
    const tmpl = (complianceType: string, annotations: Record<string, string>, metadataComplianceType?: string) => ({
      complianceType,
      ...(metadataComplianceType ? { metadataComplianceType } : {}),
      objectDefinition: { kind: "Namespace", apiVersion: "v1", metadata: { name, annotations } },
    });
    const spec = (remediationAction: string, t: Json) => ({
      remediationAction,
      namespaceSelector: { exclude: ["kube-*"], include: ["default"] },
      "object-templates": [t],
    });
    const c = new PolicyController({ client, mapper }, 0);
    c.setPolicies([policy("p.create", spec("enforce", tmpl("musthave", { test: "e2e", missing: "notintemplate" })))]);
    expect((await c.evaluate())[0]!.report.templates[0]!.compliant).toBe("Compliant");

    c.setPolicies([policy("p.mh", spec("inform", tmpl("mustonlyhave", { test: "e2e" }, "musthave")))]);
    expect((await c.evaluate())[0]!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: `Compliant; notification - namespaces [${name}] found as specified`,
    });
    c.setPolicies([policy("p.moh", spec("inform", tmpl("musthave", { test: "e2e" }, "mustonlyhave")))]);
    expect((await c.evaluate())[0]!.report.templates[0]).toMatchObject({
      compliant: "NonCompliant",
      message: `NonCompliant; violation - namespaces [${name}] found but not as specified`,
    });
    // Enforced, mustonlyhave metadata removes the annotation the template lacks (case9_ns_create.yaml).
    c.setPolicies([policy("p.moh", spec("enforce", tmpl("musthave", { test: "e2e" }, "mustonlyhave")))]);
    expect((await c.evaluate())[0]!.report.templates[0]!.compliant).toBe("Compliant");
    expect(((await client.get({ ...NS, namespace: "", name })) as Json).metadata.annotations).toEqual({ test: "e2e" });
  });

  it("mustnothave: inform reports the object found; enforce deletes it; missing as expected after", async () => {
    const { client, mapper } = await sim();
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "legacy" } }, "test");
    const c = new PolicyController({ client, mapper }, 0);
    c.setPolicies([policy("p.gone", { remediationAction: "inform", "object-templates": [nsTemplate("mustnothave", "legacy")] })]);
    expect((await c.evaluate())[0]!.report.templates[0]!.message).toBe("NonCompliant; violation - namespaces [legacy] found");
    c.setPolicies([policy("p.gone", { remediationAction: "enforce", "object-templates": [nsTemplate("mustnothave", "legacy")] })]);
    expect((await c.evaluate())[0]!.report.templates[0]).toMatchObject({
      compliant: "Compliant",
      message: "Compliant; notification - namespaces [legacy] was deleted successfully",
    });
    const ns = await getOrNull(client, { ...NS, namespace: "", name: "legacy" });
    expect(ns === null || Boolean(ns.metadata.deletionTimestamp)).toBe(true);
  });

  it("namespaceSelector include/exclude with wildcards picks the namespaces of a namespaced template", async () => {
    const { client, mapper } = await sim();
    for (const n of ["app-1", "app-2", "app-skip", "other"])
      await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: n } }, "test");
    await client.create(CM, "app-1", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "marker", namespace: "app-1" }, data: { on: "true" } }, "test");
    const tmpl = { complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "marker" }, data: { on: "true" } } };
    const c = new PolicyController({ client, mapper }, 60_000);
    const spec = { remediationAction: "inform", namespaceSelector: { include: ["app-*"], exclude: ["*-skip"] }, "object-templates": [tmpl] };
    c.setPolicies([policy("p.sel", spec)]);
    expect((await c.evaluate())[0]!.report.templates[0]!.message).toBe("NonCompliant; violation - configmaps [marker] not found in namespace app-2");
    c.setPolicies([policy("p.sel", { ...spec, remediationAction: "enforce" })]);
    expect((await c.evaluate())[0]!.report.templates[0]!.message).toBe(
      "Compliant; notification - configmaps [marker] found as specified in namespace app-1; configmaps [marker] was created successfully in namespace app-2",
    );
    expect(await getOrNull(client, { ...CM, namespace: "app-skip", name: "marker" })).toBeNull();
    expect(await getOrNull(client, { ...CM, namespace: "other", name: "marker" })).toBeNull();
    // No namespace from the selector nor the template: OCM's violation.
    c.setPolicies([policy("p.none", { remediationAction: "inform", namespaceSelector: { include: ["nope-*"] }, "object-templates": [tmpl] })]);
    expect((await c.evaluate()).find((r) => r.policy === "p.none")!.report.templates[0]!.message).toBe(
      "NonCompliant; violation - namespaced object marker of kind ConfigMap has no namespace specified from the policy namespaceSelector nor the object metadata",
    );
  });

  it("evaluationInterval never: a compliant template is not evaluated again until the Policy changes", async () => {
    const { client, mapper } = await sim();
    await client.create(NS, "", { apiVersion: "v1", kind: "Namespace", metadata: { name: "kept" } }, "test");
    let now = 1_000_000;
    const c = new PolicyController({ client, mapper }, 1_000, () => now);
    c.setPolicies([
      policy("p.never", {
        remediationAction: "inform",
        evaluationInterval: { compliant: "never", noncompliant: "10s" },
        "object-templates": [nsTemplate("musthave", "kept")],
      }),
    ]);
    const [r] = await c.evaluate();
    expect(r!.report.templates[0]!.message).toBe(
      'Compliant; notification - namespaces [kept] found as specified. This policy will not be evaluated again due to spec.evaluationInterval.compliant being set to "never".',
    );
    c.reported(r!.policy, r!.report);
    expect(c.nextDueMs()).toBe(Infinity);
    await client.delete({ ...NS, namespace: "", name: "kept" });
    now += 3_600_000;
    expect(await c.evaluate()).toEqual([]);
  });

  it("a disabled Policy is not evaluated; an unknown kind is NonCompliant with OCM's mapping message", async () => {
    const { client, mapper } = await sim();
    const c = new PolicyController({ client, mapper }, 60_000);
    const off = policy("p.off", { remediationAction: "enforce", "object-templates": [nsTemplate("musthave", "never-made")] });
    c.setPolicies([
      { ...off, spec: { ...off.spec, disabled: true } },
      policy("p.crd", {
        remediationAction: "inform",
        "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } } }],
      }),
    ]);
    const reports = await c.evaluate();
    expect(reports.map((r) => r.policy)).toEqual(["p.crd"]);
    // Nothing of the disabled Policy is due.
    expect(c.nextDueMs()).toBeGreaterThan(Date.now() + 30_000);
    expect(reports[0]!.report.templates[0]!.message).toBe(
      "NonCompliant; violation - couldn't find mapping resource with kind Widget in API version example.com/v1, please check if you have CRD deployed",
    );
    expect(await getOrNull(client, { ...NS, namespace: "", name: "never-made" })).toBeNull();
  });
});
