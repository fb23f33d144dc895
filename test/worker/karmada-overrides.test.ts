// Karmada's OverridePolicy and ClusterOverridePolicy (docs/overrides.md "Karmada"): validation as
// Karmada's webhooks (cases from karmada-io/karmada pkg/util/validation validation_test.go
// TestValidateOverrideSpec and pkg/webhook/overridepolicy validating_test.go), the overriders as
// pkg/util/overridemanager applies them (cases from its _test.go files), and the propagation policy
// controller rendering each cluster's works through them over the HTTP API: order, cluster
// matching, the applied-overrides annotations, all or nothing per cluster.
import { describe, expect, it, vi } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { compileKarmadaOverrides, type KarmadaPolicy } from "../../src/overrides/karmada.ts";
import type { KarmadaCluster } from "../../src/fleet/karmada/schedule.ts";
import type { OverrideSpec } from "../../src/kinds/karmada-override.ts";
import { call, createCluster, createNamespaces, merge } from "./helpers.ts";

const PG = "/apis/policy.karmada.io/v1alpha1";
const OP = (ns: string, name = "") => `${PG}/namespaces/${ns}/overridepolicies${name ? `/${name}` : ""}`;
const COP = (name = "") => `${PG}/clusteroverridepolicies${name ? `/${name}` : ""}`;
const PP = (ns: string, name = "") => `${PG}/namespaces/${ns}/propagationpolicies${name ? `/${name}` : ""}`;
const RB = (ns: string, name: string) => `/apis/work.karmada.io/v1alpha2/namespaces/${ns}/resourcebindings/${name}`;
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";

const op = (name: string, spec: Record<string, unknown>) => ({ apiVersion: "policy.karmada.io/v1alpha1", kind: "OverridePolicy", metadata: { name }, spec });
const cop = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "policy.karmada.io/v1alpha1",
  kind: "ClusterOverridePolicy",
  metadata: { name },
  spec,
});

// ---------------------------------------------------------------------------------------------
// Validation (Karmada's webhooks).

describe("OverridePolicy validation, as Karmada's webhooks", () => {
  it("defaults a selector's namespace to the policy's, and serves the deprecated targetCluster + overriders form", async () => {
    await createNamespaces("ov-v");
    const r = await call(
      "POST",
      OP("ov-v"),
      op("rules", {
        resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web" }],
        overrideRules: [{ targetCluster: { clusterNames: ["m1"] }, overriders: { plaintext: [{ path: "/spec/replicas", operator: "replace", value: 3 }] } }],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec.resourceSelectors[0].namespace).toBe("ov-v");
    // "overriders and targetCluster are set, overrideRules isn't set": allowed.
    const old = await call(
      "POST",
      COP(),
      cop("ov-v-old", { targetCluster: { clusterNames: ["m1"] }, overriders: { plaintext: [{ path: "/spec/image", operator: "add", value: "x" }] } }),
    );
    expect(old.status, JSON.stringify(old.body)).toBe(201);
    expect((await call("DELETE", COP("ov-v-old"))).status).toBe(200);
    const list = await call("GET", `${PG}/overridepolicies`);
    expect(list.body.items.map((i: KubeObject) => i.metadata.name)).toContain("rules");
  });

  const invalid: [string, Record<string, unknown>, string, string][] = [
    [
      "overrideRules and targetCluster can't co-exist",
      { targetCluster: { clusterNames: ["m1"] }, overrideRules: [{ targetCluster: { clusterNames: ["m1"] }, overriders: {} }] },
      "spec.targetCluster",
      "overrideRules and targetCluster can't co-exist",
    ],
    [
      "overrideRules and overriders can't co-exist",
      {
        overriders: { plaintext: [{ path: "spec/image", operator: "add", value: "x" }] },
        overrideRules: [{ targetCluster: { clusterNames: ["m1"] }, overriders: {} }],
      },
      "spec.overriders",
      "overrideRules and overriders can't co-exist",
    ],
    [
      "invalid annotation should not be allowed",
      { overrideRules: [{ overriders: { annotationsOverrider: [{ operator: "add", value: { "testannotation~projectId": "c-m-lfx9lk92p-v86cf" } }] } }] },
      "spec.overrideRules[0].overriders.annotationsOverrider[0].value",
      "name part must consist of alphanumeric characters",
    ],
    [
      "invalid label should not be allowed",
      { overrideRules: [{ overriders: { labelsOverrider: [{ operator: "add", value: { "testannotation~projectId": "c-m-lfx9lk92p-v86cf" } }] } }] },
      "spec.overrideRules[0].overriders.labelsOverrider[0].value",
      "name part must consist of alphanumeric characters",
    ],
    [
      "overrideSpec.targetCluster.fieldSelector has unsupported key",
      { targetCluster: { fieldSelector: { matchExpressions: [{ key: "foo", operator: "In", values: ["fooCloud"] }] } } },
      "spec.targetCluster.fieldSelector",
      'unsupported key "foo", must be provider, region, or zone',
    ],
    [
      "overrideSpec.targetCluster.fieldSelector has unsupported operator",
      { targetCluster: { fieldSelector: { matchExpressions: [{ key: "provider", operator: "Gt", values: ["fooCloud"] }] } } },
      "spec.targetCluster.fieldSelector",
      'unsupported operator "Gt", must be In or NotIn',
    ],
    [
      "overrideRules.[index].targetCluster.fieldSelector has unsupported key",
      { overrideRules: [{ targetCluster: { fieldSelector: { matchExpressions: [{ key: "foo", operator: "In", values: ["x"] }] } }, overriders: {} }] },
      "spec.overrideRules[0].targetCluster.fieldSelector",
      'unsupported key "foo", must be provider, region, or zone',
    ],
    [
      "overrideRules.[index].targetCluster.fieldSelector has unsupported operator",
      { overrideRules: [{ targetCluster: { fieldSelector: { matchExpressions: [{ key: "region", operator: "Gt", values: ["x"] }] } }, overriders: {} }] },
      "spec.overrideRules[0].targetCluster.fieldSelector",
      'unsupported operator "Gt", must be In or NotIn',
    ],
    [
      "fieldOverrider with neither YAML nor JSON should be rejected",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config" }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0]",
      "FieldOverrider must have either JSON or YAML set",
    ],
    [
      "fieldOverrider with both YAML and JSON set should be rejected",
      {
        overrideRules: [
          {
            overriders: {
              fieldOverrider: [{ fieldPath: "/data/config", yaml: [{ subPath: "/key", operator: "remove" }], json: [{ subPath: "/key", operator: "remove" }] }],
            },
          },
        ],
      },
      "spec.overrideRules[0].overriders.fieldOverrider[0]",
      "FieldOverrider has both YAML and JSON set. Only one is allowed",
    ],
    [
      "a fieldPath that is not a JSON pointer",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "data/config", json: [{ subPath: "/key", operator: "remove" }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath",
      'JSON pointer must be empty or start with a "/"',
    ],
    [
      "a subPath that is not a JSON pointer",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config", yaml: [{ subPath: "key", operator: "remove" }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].yaml[0].subPath",
      'JSON pointer must be empty or start with a "/"',
    ],
    [
      "an add without a value",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "/key", operator: "add" }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value",
      "value is required for add or replace operation",
    ],
    [
      "a remove with a value",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "/key", operator: "remove", value: 1 }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value",
      "value is not allowed for remove operation",
    ],
    [
      "an image predicate that is not a JSON pointer",
      {
        overrideRules: [
          { overriders: { imageOverrider: [{ predicate: { path: "spec/containers/0/image" }, component: "Tag", operator: "replace", value: "v2" }] } },
        ],
      },
      "spec.overrideRules[0].overriders.imageOverrider[0].predicate.path",
      'JSON pointer must be empty or start with a "/"',
    ],
  ];
  for (const [name, spec, field, message] of invalid) {
    it(`refuses: ${name}`, async () => {
      await createNamespaces("ov-v");
      const r = await call("POST", OP("ov-v"), op("bad", spec));
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.kind).toBe("Status");
      const causes = r.body.details.causes as { field: string; message: string }[];
      expect(
        causes.some((c) => c.field === field && c.message.includes(message)),
        JSON.stringify(causes),
      ).toBe(true);
    });
  }

  it("refuses a selector of another namespace, an unknown operator, and an unknown image component", async () => {
    await createNamespaces("ov-v");
    const other = await call("POST", OP("ov-v"), op("other", { resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "elsewhere" }] }));
    expect(other.status).toBe(422);
    expect(other.body.message).toContain("namespace of resource selector must be the same as the namespace of the policy");
    const badOp = await call("POST", OP("ov-v"), op("badop", { overrideRules: [{ overriders: { plaintext: [{ path: "/a", operator: "move", value: 1 }] } }] }));
    expect(badOp.status).toBe(422);
    const badComponent = await call(
      "POST",
      OP("ov-v"),
      op("badc", { overrideRules: [{ overriders: { imageOverrider: [{ component: "Digest", operator: "replace", value: "x" }] } }] }),
    );
    expect(badComponent.status).toBe(422);
    const badCmd = await call(
      "POST",
      OP("ov-v"),
      op("badcmd", { overrideRules: [{ overriders: { commandOverrider: [{ containerName: "c", operator: "replace", value: ["x"] }] } }] }),
    );
    expect(badCmd.status).toBe(422);
    // A ClusterOverridePolicy's selectors may name any namespace.
    const c = await call("POST", COP(), cop("ov-v-any", { resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "elsewhere", name: "x" }] }));
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect((await call("DELETE", COP("ov-v-any"))).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// The overriders (pkg/util/overridemanager), on the source directly.

const cluster = (name: string, extra: Partial<KarmadaCluster> = {}): KarmadaCluster => ({ name, labels: {}, zones: [], taints: [], leaving: false, ...extra });
const deployment = (image: string, extra: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "test", namespace: "default", labels: { testLabel: "testLabel" }, annotations: { testAnnotation: "testAnnotation" } },
    spec: { replicas: 1, template: { spec: { containers: [{ name: "nginx", image, ...extra }] } } },
  }) as unknown as KubeObject;
const policy = (name: string, spec: OverrideSpec, namespace = "default"): KarmadaPolicy => ({ kind: "OverridePolicy", namespace, name, spec });
const applyTo = (o: KubeObject, policies: KarmadaPolicy[], c = cluster("c1")) => compileKarmadaOverrides(policies).forCluster(c).apply(o);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const imageOf = (o: any, i = 0) => o.spec.template.spec.containers[i].image;

describe("Karmada's overriders", () => {
  const image = "fictional.registry.example/imagename:v1.0.0";
  const imageCases: [string, Record<string, unknown>, string][] = [
    ["Registry add", { component: "Registry", operator: "add", value: ".test" }, "fictional.registry.example.test/imagename:v1.0.0"],
    ["Registry replace", { component: "Registry", operator: "replace", value: "fictional.registry.us" }, "fictional.registry.us/imagename:v1.0.0"],
    ["Registry remove", { component: "Registry", operator: "remove", value: "fictional.registry.us" }, "imagename:v1.0.0"],
    ["Repository add", { component: "Repository", operator: "add", value: "/nginx" }, "fictional.registry.example/imagename/nginx:v1.0.0"],
    ["Repository replace", { component: "Repository", operator: "replace", value: "nginx" }, "fictional.registry.example/nginx:v1.0.0"],
    ["Repository remove", { component: "Repository", operator: "remove", value: "nginx" }, "fictional.registry.example/:v1.0.0"],
    // Only one of tag and digest is valid: the concatenation is neither, so nothing changes.
    ["Tag add", { component: "Tag", operator: "add", value: "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c" }, image],
    [
      "Tag replace with a digest",
      { component: "Tag", operator: "replace", value: "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c" },
      "fictional.registry.example/imagename@sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c",
    ],
    ["Tag remove", { component: "Tag", operator: "remove" }, "fictional.registry.example/imagename"],
  ];
  for (const [name, overrider, want] of imageCases)
    it(`imageOverrider with empty predicate, Deployment: ${name}`, () => {
      const r = applyTo(deployment(image), [policy("p", { overrideRules: [{ overriders: { imageOverrider: [overrider as never] } }] })]);
      expect(r.ok).toBe(true);
      if (r.ok) expect(imageOf(r.object)).toBe(want);
    });

  it("imageOverrider: a Job's image, with and without predicate; a Pod's; every container; a kind it does not know is left", () => {
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "pi", namespace: "default" },
      spec: { template: { spec: { containers: [{ name: "pi", image: "perl:5.34.0" }] } } },
    } as unknown as KubeObject;
    const add = { component: "Registry", operator: "add", value: "registry.k8s.io" };
    for (const o of [add, { ...add, predicate: { path: "/spec/template/spec/containers/0/image" } }]) {
      const r = applyTo(job, [policy("p", { overrideRules: [{ overriders: { imageOverrider: [o as never] } }] })]);
      expect(r.ok && imageOf(r.object)).toBe("registry.k8s.io/perl:5.34.0");
    }
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      spec: { containers: [{ name: "a", image }] },
    } as unknown as KubeObject;
    const rp = applyTo(pod, [
      policy("p", { overrideRules: [{ overriders: { imageOverrider: [{ component: "Repository", operator: "replace", value: "nginx" }] } }] }),
    ]);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    expect(rp.ok && (rp.object as any).spec.containers[0].image).toBe("fictional.registry.example/nginx:v1.0.0");
    const two = deployment(image);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (two as any).spec.template.spec.containers.push({ name: "b", image: "busybox" });
    const r2 = applyTo(two, [
      policy("p", { overrideRules: [{ overriders: { imageOverrider: [{ component: "Repository", operator: "replace", value: "nginx" }] } }] }),
    ]);
    expect(r2.ok && [imageOf(r2.object, 0), imageOf(r2.object, 1)]).toEqual(["fictional.registry.example/nginx:v1.0.0", "nginx"]);
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" }, data: { image } } as unknown as KubeObject;
    const r3 = applyTo(cm, [policy("p", { overrideRules: [{ overriders: { imageOverrider: [{ component: "Tag", operator: "replace", value: "v2" }] } }] })]);
    expect(r3.ok && r3.object).toEqual(cm);
  });

  it("imageOverrider fails on a bad image or predicate, naming the policy", () => {
    const bad = applyTo(deployment("UPPER/Case:tag"), [
      policy("p", { overrideRules: [{ overriders: { imageOverrider: [{ component: "Tag", operator: "replace", value: "v2" }] } }] }),
    ]);
    expect(bad).toMatchObject({ ok: false });
    if (!bad.ok)
      expect(bad.message).toContain(
        'OverridePolicy "default/p" failed to apply on Deployment "test" in namespace "default" for cluster c1: failed to parse image value(UPPER/Case:tag), error: repository name must be lowercase',
      );
    const pred = applyTo(deployment("nginx"), [
      policy("p", {
        overrideRules: [
          {
            overriders: {
              imageOverrider: [{ predicate: { path: "/spec/template/spec/containers/x/image" }, component: "Tag", operator: "replace", value: "v2" }],
            },
          },
        ],
      }),
    ]);
    expect(!pred.ok && pred.message).toContain(
      "failed to obtain imageValue with predicate path(/spec/template/spec/containers/x/image), error: path(x) of rawObj's is not number",
    );
  });

  it("commandOverrider and argsOverrider add to and remove from the named container, adding the list when absent", () => {
    const d = deployment("nginx", { command: ["/bin/bash", "-c"], args: ["--a", "--b"] });
    const r = applyTo(d, [
      policy("p", {
        overrideRules: [
          {
            overriders: {
              commandOverrider: [{ containerName: "nginx", operator: "add", value: ["echo 'hello world'"] }],
              argsOverrider: [
                { containerName: "nginx", operator: "remove", value: ["--a"] },
                { containerName: "other", operator: "add", value: ["--x"] },
              ],
            },
          },
        ],
      }),
    ]);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const c = r.ok && (r.object as any).spec.template.spec.containers[0];
    expect(c.command).toEqual(["/bin/bash", "-c", "echo 'hello world'"]);
    expect(c.args).toEqual(["--b"]);
    const none = applyTo(deployment("nginx"), [
      policy("p", { overrideRules: [{ overriders: { argsOverrider: [{ containerName: "nginx", operator: "add", value: ["-v"] }] } }] }),
    ]);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    expect(none.ok && (none.object as any).spec.template.spec.containers[0].args).toEqual(["-v"]);
  });

  it("labelsOverrider and annotationsOverrider: add (creating the map), replace and remove only what is there", () => {
    const d = deployment("nginx");
    const r = applyTo(d, [
      policy("p", {
        overrideRules: [
          {
            overriders: {
              labelsOverrider: [
                { operator: "add", value: { testAddLabel: "testAddLabel", "example.com/team": "a" } },
                { operator: "replace", value: { testLabel: "replaced", absent: "x" } },
              ],
              annotationsOverrider: [{ operator: "remove", value: { testAnnotation: "", absent: "" } }],
            },
          },
        ],
      }),
    ]);
    expect(r.ok && r.object.metadata.labels).toEqual({ testLabel: "replaced", testAddLabel: "testAddLabel", "example.com/team": "a" });
    expect(r.ok && r.object.metadata.annotations).toEqual({});
    const bare = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } } as unknown as KubeObject;
    const r2 = applyTo(bare, [policy("p", { overrideRules: [{ overriders: { annotationsOverrider: [{ operator: "add", value: { a: "b" } }] } }] })]);
    expect(r2.ok && r2.object.metadata.annotations).toEqual({ a: "b" });
  });

  it("fieldOverrider patches the YAML or JSON inside a string field (Test_overrideManagerImpl_ApplyFieldOverriderPolicies)", () => {
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "test1", namespace: "default" },
      data: { "test.yaml": "\nkey: \n  key1: value\n", "test.json": '{"key":{"key1":"value"}}' },
    } as unknown as KubeObject;
    const r = applyTo(cm, [
      policy("test1", {
        resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "test1" }],
        overrideRules: [
          {
            targetCluster: { clusterNames: ["c1"] },
            overriders: {
              fieldOverrider: [
                { fieldPath: "/data/test.yaml", yaml: [{ subPath: "/key/key1", operator: "replace", value: "updated_value" }] },
                { fieldPath: "/data/test.json", json: [{ subPath: "/key/key1", operator: "replace", value: "updated_value" }] },
              ],
            },
          },
        ],
      }),
    ]);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    expect(r.ok && (r.object as any).data).toEqual({ "test.yaml": "key:\n  key1: updated_value\n", "test.json": '{"key":{"key1":"updated_value"}}' });
    expect(r.ok && r.overrides.map((o) => o.policyName)).toEqual(["test1"]);
  });

  it("orders ClusterOverridePolicies first, then OverridePolicies by implicit priority then name, each rule matching the cluster (TestGetMatchingOverridePolicies)", () => {
    const ann = (v: string) => ({ plaintext: [{ path: "/metadata/annotations/order", operator: "add" as const, value: v }] });
    const d = deployment("nginx");
    const policies: KarmadaPolicy[] = [
      // High implicit priority (by name): applied last.
      policy("overridePolicy1", {
        resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", name: "test" }],
        overrideRules: [
          { targetCluster: { clusterNames: ["cluster1", "cluster2"] }, overriders: ann("op1-rule1") },
          { targetCluster: { clusterNames: ["cluster2"] }, overriders: ann("op1-rule2") },
        ],
      }),
      // Low implicit priority (no selector: all).
      policy("overridePolicy2", { overrideRules: [{ targetCluster: { clusterNames: ["cluster1", "cluster2"] }, overriders: ann("op2") }] }),
      {
        kind: "ClusterOverridePolicy",
        namespace: "",
        name: "zz-cluster",
        spec: { targetCluster: { clusterNames: ["cluster1"] }, overriders: ann("cop-old-form") },
      },
    ];
    const one = applyTo(d, policies, cluster("cluster1"));
    expect(one.ok && one.object.metadata.annotations!.order).toBe("op1-rule1");
    expect(one.ok && one.overrides.map((o) => o.policyName)).toEqual(["overridePolicy2", "overridePolicy1"]);
    expect(one.ok && one.clusterOverrides.map((o) => o.policyName)).toEqual(["zz-cluster"]);
    const two = applyTo(d, policies, cluster("cluster2"));
    expect(two.ok && two.object.metadata.annotations!.order).toBe("op1-rule2");
    expect(two.ok && two.overrides.map((o) => o.overriders)).toEqual([ann("op2"), ann("op1-rule1"), ann("op1-rule2")]);
    expect(two.ok && two.clusterOverrides).toEqual([]);
    // An OverridePolicy of another namespace does not apply; a cluster-scoped object gets only ClusterOverridePolicies.
    expect(applyTo(d, [policy("p", { overriders: ann("x") }, "other")], cluster("c"))).toMatchObject({ ok: true, overrides: [] });
  });

  it("matches target clusters by labels, provider/region/zone fields, names and exclusions", () => {
    const rules = [
      {
        targetCluster: { labelSelector: { matchLabels: { env: "prod" } } },
        overriders: { labelsOverrider: [{ operator: "add" as const, value: { a: "label" } }] },
      },
      {
        targetCluster: {
          fieldSelector: {
            matchExpressions: [
              { key: "region", operator: "In", values: ["eu"] },
              { key: "zone", operator: "NotIn", values: ["eu-2"] },
            ],
          },
        },
        overriders: { labelsOverrider: [{ operator: "add" as const, value: { b: "field" } }] },
      },
      { targetCluster: { clusterNames: ["m1", "m2"], exclude: ["m2"] }, overriders: { labelsOverrider: [{ operator: "add" as const, value: { c: "name" } }] } },
    ];
    const labels = (c: KarmadaCluster) => {
      const r = applyTo(deployment("nginx"), [policy("p", { overrideRules: rules })], c);
      return r.ok ? Object.keys(r.object.metadata.labels ?? {}).filter((k) => k.length === 1) : r.message;
    };
    expect(labels(cluster("m1", { labels: { env: "prod" }, region: "eu", zones: ["eu-1"] }))).toEqual(["a", "b", "c"]);
    expect(labels(cluster("m2", { region: "eu", zones: ["eu-2"] }))).toEqual([]);
    expect(labels(cluster("m3", { region: "eu" }))).toEqual(["b"]);
  });

  it("fails the object, not half of it: a path that does not resolve, invalid YAML, a value too big", () => {
    const d = deployment("nginx");
    const partial = applyTo(d, [
      policy("p", {
        overriders: {
          labelsOverrider: [{ operator: "add", value: { first: "applied" } }],
          plaintext: [{ path: "/spec/absent/deep", operator: "replace", value: 1 }],
        },
      }),
    ]);
    expect(partial.ok).toBe(false);
    if (!partial.ok) expect(partial.message).toContain("JSON patch operation 0 (replace /spec/absent/deep) failed");
    expect(d.metadata.labels).toEqual({ testLabel: "testLabel" });
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "default" },
      data: { "a.yaml": "key: [unclosed" },
    } as unknown as KubeObject;
    const yaml = applyTo(cm, [
      policy("p", {
        overriders: {},
        overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/a.yaml", yaml: [{ subPath: "/key", operator: "remove" }] }] } }],
      }),
    ]);
    expect(!yaml.ok && yaml.message).toContain("error converting YAML to JSON");
    const notString = applyTo(d, [
      policy("p", { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/spec/replicas", json: [{ subPath: "/a", operator: "remove" }] }] } }] }),
    ]);
    expect(!notString.ok && notString.message).toContain("Get object's value by overrider's path(/spec/replicas) is not string");
    const huge = applyTo(d, [
      policy("p", { overrideRules: [{ overriders: { plaintext: [{ path: "/metadata/annotations/big", operator: "add", value: "x".repeat(300_000) }] } }] }),
    ]);
    expect(!huge.ok && huge.message).toContain("exceed");
    const badPointer = applyTo(d, [policy("p", { overriders: { plaintext: [{ path: "spec/image", operator: "add", value: "x" }] } })]);
    expect(badPointer.ok).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// The propagation policy controller renders each cluster's works through them.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function worksOf(policy: string): Promise<Record<string, any>> {
  const r = await call("GET", WORKS);
  expect(r.status).toBe(200);
  return Object.fromEntries(
    r.body.items
      .filter((w: KubeObject) => w.metadata.name.startsWith(`${policy}-`) && !w.metadata.deletionTimestamp)
      .map((w: { metadata: { namespace: string } }) => [w.metadata.namespace, w]),
  );
}

async function waitFor(check: () => Promise<boolean>, ms = 8000) {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error("not yet");
    },
    { timeout: ms, interval: 100 },
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const manifest = (w: any, kind: string) => w.spec.workload.manifests.find((m: KubeObject) => m.kind === kind);

describe("override policies where a propagation policy renders", () => {
  it("renders each cluster's objects through its policies, records them on the works, and re-renders on a policy's change", async () => {
    await createCluster("kov-a", { env: "prod", "topology.kubernetes.io/region": "eu" });
    await createCluster("kov-b", { env: "prod", "topology.kubernetes.io/region": "us" });
    await createCluster("kov-c", { env: "prod", "topology.kubernetes.io/region": "us" });
    await createNamespaces("kov");
    const dep = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", labels: { app: "web" } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "registry.example/web:1.0", args: ["--v=1"] }] } },
      },
    };
    expect((await call("POST", "/apis/apps/v1/namespaces/kov/deployments", dep)).status).toBe(201);
    expect(
      (
        await call("POST", "/api/v1/namespaces/kov/configmaps", {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "conf" },
          data: { "app.yaml": "log:\n  level: info\n" },
        })
      ).status,
    ).toBe(201);
    // A ClusterOverridePolicy: the registry per region (fieldSelector from the region label).
    expect(
      (
        await call(
          "POST",
          COP(),
          cop("kov-registry", {
            resourceSelectors: [{ apiVersion: "apps/v1", kind: "Deployment", namespace: "kov" }],
            overrideRules: [
              {
                targetCluster: { fieldSelector: { matchExpressions: [{ key: "region", operator: "In", values: ["eu"] }] } },
                overriders: { imageOverrider: [{ component: "Registry", operator: "replace", value: "eu.registry.example" }] },
              },
            ],
          }),
        )
      ).status,
    ).toBe(201);
    // An OverridePolicy: an annotation for kov-b by name, args and the ConfigMap's YAML for every cluster.
    expect(
      (
        await call(
          "POST",
          OP("kov"),
          op("kov-team", {
            overrideRules: [
              { targetCluster: { clusterNames: ["kov-b"] }, overriders: { annotationsOverrider: [{ operator: "add", value: { team: "b-team" } }] } },
              { overriders: { argsOverrider: [{ containerName: "web", operator: "add", value: ["--cluster-aware"] }] } },
            ],
          }),
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          "POST",
          OP("kov"),
          op("kov-conf", {
            resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "conf" }],
            overrideRules: [
              { overriders: { fieldOverrider: [{ fieldPath: "/data/app.yaml", yaml: [{ subPath: "/log/level", operator: "replace", value: "debug" }] }] } },
            ],
          }),
        )
      ).status,
    ).toBe(201);
    const created = await call("POST", PP("kov"), {
      apiVersion: "policy.karmada.io/v1alpha1",
      kind: "PropagationPolicy",
      metadata: { name: "web" },
      spec: {
        resourceSelectors: [
          { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
          { apiVersion: "v1", kind: "ConfigMap", name: "conf" },
        ],
        placement: { clusterAffinity: { labelSelector: { matchLabels: { env: "prod" } } } },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const works = await worksOf("pp.kov.web");
    expect(Object.keys(works).sort()).toEqual(["kov-a", "kov-b", "kov-c"]);
    const d = (c: string) => manifest(works[c], "Deployment");
    expect(d("kov-a").spec.template.spec.containers[0].image).toBe("eu.registry.example/web:1.0");
    expect(d("kov-b").spec.template.spec.containers[0].image).toBe("registry.example/web:1.0");
    expect(d("kov-b").metadata.annotations).toMatchObject({ team: "b-team" });
    expect(d("kov-a").metadata.annotations?.team).toBeUndefined();
    expect(d("kov-c").spec.template.spec.containers[0].args).toEqual(["--v=1", "--cluster-aware"]);
    expect(manifest(works["kov-c"], "ConfigMap").data["app.yaml"]).toBe("log:\n  level: debug\n");
    // The applied overrides, as Karmada records them on a work.
    expect(JSON.parse(works["kov-a"].metadata.annotations["policy.karmada.io/applied-cluster-overrides"])).toEqual([
      { policyName: "kov-registry", overriders: { imageOverrider: [{ component: "Registry", operator: "replace", value: "eu.registry.example" }] } },
    ]);
    expect(works["kov-b"].metadata.annotations["policy.karmada.io/applied-cluster-overrides"]).toBeUndefined();
    expect(JSON.parse(works["kov-b"].metadata.annotations["policy.karmada.io/applied-overrides"]).map((i: { policyName: string }) => i.policyName)).toEqual([
      "kov-conf",
      "kov-team",
      "kov-team",
    ]);

    // A change of the policy re-renders: the annotation moves to kov-c.
    const rv = (c: string) => works[c].metadata.resourceVersion;
    const before = { a: rv("kov-a"), b: rv("kov-b"), c: rv("kov-c") };
    expect(
      (
        await call(
          "PATCH",
          OP("kov", "kov-team"),
          {
            spec: {
              overrideRules: [
                { targetCluster: { clusterNames: ["kov-c"] }, overriders: { annotationsOverrider: [{ operator: "add", value: { team: "c-team" } }] } },
              ],
            },
          },
          merge,
        )
      ).status,
    ).toBe(200);
    await waitFor(async () => manifest((await worksOf("pp.kov.web"))["kov-c"], "Deployment").metadata.annotations?.team === "c-team");
    const after = await worksOf("pp.kov.web");
    expect(manifest(after["kov-b"], "Deployment").metadata.annotations?.team).toBeUndefined();
    expect(manifest(after["kov-a"], "Deployment").spec.template.spec.containers[0].args).toEqual(["--v=1"]);
    expect(before.a).not.toBe(after["kov-a"].metadata.resourceVersion);

    // Deleting the ClusterOverridePolicy: its annotation goes from the work.
    expect((await call("DELETE", COP("kov-registry"))).status).toBe(200);
    await waitFor(
      async () => manifest((await worksOf("pp.kov.web"))["kov-a"], "Deployment").spec.template.spec.containers[0].image === "registry.example/web:1.0",
    );
    expect((await worksOf("pp.kov.web"))["kov-a"].metadata.annotations["policy.karmada.io/applied-cluster-overrides"]).toBeUndefined();
  });

  it("a failed override leaves that cluster's works as they were and says why in the binding; the other clusters are rendered", async () => {
    await createCluster("kof-a", { grp: "kof" });
    await createCluster("kof-b", { grp: "kof" });
    await createNamespaces("kof");
    expect(
      (
        await call("POST", "/api/v1/namespaces/kof/configmaps", {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "conf" },
          data: { "a.yaml": "a: 1\n" },
        })
      ).status,
    ).toBe(201);
    const pp = await call("POST", PP("kof"), {
      apiVersion: "policy.karmada.io/v1alpha1",
      kind: "PropagationPolicy",
      metadata: { name: "conf" },
      spec: {
        resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "conf" }],
        placement: { clusterAffinity: { labelSelector: { matchLabels: { grp: "kof" } } } },
      },
    });
    expect(pp.status, JSON.stringify(pp.body)).toBe(201);
    const first = await worksOf("pp.kof.conf");
    expect(Object.keys(first).sort()).toEqual(["kof-a", "kof-b"]);
    // For kof-b: a label (fine), then a field whose YAML cannot be patched (/b does not exist).
    expect(
      (
        await call(
          "POST",
          OP("kof"),
          op("broken", {
            overrideRules: [
              {
                targetCluster: { clusterNames: ["kof-b"] },
                overriders: {
                  labelsOverrider: [{ operator: "add", value: { half: "applied" } }],
                  fieldOverrider: [{ fieldPath: "/data/a.yaml", yaml: [{ subPath: "/b/c", operator: "replace", value: 2 }] }],
                },
              },
              { overriders: { annotationsOverrider: [{ operator: "add", value: { everywhere: "yes" } }] } },
            ],
          }),
        )
      ).status,
    ).toBe(201);
    await waitFor(async () => manifest((await worksOf("pp.kof.conf"))["kof-a"], "ConfigMap").metadata.annotations?.everywhere === "yes");
    const ws = await worksOf("pp.kof.conf");
    expect(ws["kof-b"].metadata.resourceVersion).toBe(first["kof-b"].metadata.resourceVersion);
    expect(manifest(ws["kof-b"], "ConfigMap").metadata.labels?.half).toBeUndefined();
    await waitFor(async () => {
      const rb = (await call("GET", RB("kof", "conf-configmap"))).body;
      const item = (rb.status?.aggregatedStatus ?? []).find((i: { clusterName: string }) => i.clusterName === "kof-b");
      return (
        item?.applied === false &&
        String(item.appliedMessage).includes('OverridePolicy "kof/broken" failed to apply on ConfigMap "conf" in namespace "kof" for cluster kof-b')
      );
    });
    // Fixing the policy renders kof-b.
    expect(
      (
        await call(
          "PATCH",
          OP("kof", "broken"),
          {
            spec: {
              overrideRules: [
                {
                  targetCluster: { clusterNames: ["kof-b"] },
                  overriders: { fieldOverrider: [{ fieldPath: "/data/a.yaml", yaml: [{ subPath: "/b", operator: "add", value: 2 }] }] },
                },
              ],
            },
          },
          merge,
        )
      ).status,
    ).toBe(200);
    await waitFor(async () => manifest((await worksOf("pp.kof.conf"))["kof-b"], "ConfigMap").data["a.yaml"] === "a: 1\nb: 2\n");
  });
});
