// The one patch engine of per-cluster overrides (src/overrides/engine.ts, docs/overrides.md), with
// the cases of KubeFleet's workgenerator tests (TestApplyJSONPatchOverride,
// TestReplaceClusterLabelKeyVariables): RFC 6902 operations on fast-json-patch, the variables,
// all or nothing, the limits against huge patches and copy loops, the object's identity kept.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { applyOverrideSteps, compileOperations, substituteVariables, type OverrideCluster, type OverrideOperation } from "../../src/overrides/engine.ts";

// ---------------------------------------------------------------------------------------------
// The engine, after KubeFleet's TestApplyJSONPatchOverride and TestReplaceClusterLabelKeyVariables.

const deployment = (labels?: Record<string, string>, spec: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "deployment-name", namespace: "deployment-namespace", ...(labels ? { labels } : {}) },
    spec,
  }) as unknown as KubeObject;
const cluster1 = { name: "cluster-1", labels: { region: "us-west", "fleet-kubernetes.io/env": "production", zone: "west-1a" } };
const patch = (object: KubeObject, ops: OverrideOperation[], cluster: OverrideCluster = cluster1) =>
  applyOverrideSteps(object, [{ source: "test", ops: compileOperations(ops) }], cluster);

describe("the patch engine (KubeFleet's applyJSONPatchOverride cases)", () => {
  const cases: [string, KubeObject, OverrideOperation[], Record<string, unknown> | null][] = [
    ["empty override", deployment({ app: "nginx" }), [], { labels: { app: "nginx" } }],
    [
      "reset the labels using add",
      deployment({ app: "nginx-1", key: "value" }),
      [{ op: "add", path: "/metadata/labels", value: { app: "nginx" } }],
      { labels: { app: "nginx" } },
    ],
    [
      "reset the labels using replace",
      deployment({ app: "nginx-1", key: "value" }),
      [{ op: "replace", path: "/metadata/labels", value: { app: "nginx" } }],
      { labels: { app: "nginx" } },
    ],
    ["add the first label key value", deployment(), [{ op: "add", path: "/metadata/labels", value: { app: "nginx" } }], { labels: { app: "nginx" } }],
    [
      "add a label in the existing labels",
      deployment({ app: "nginx" }),
      [{ op: "add", path: "/metadata/labels/new-label", value: "new-value" }],
      { labels: { app: "nginx", "new-label": "new-value" } },
    ],
    ["remove a label", deployment({ app: "nginx" }), [{ op: "remove", path: "/metadata/labels/app" }], { labels: {} }],
    ["replace a label", deployment({ app: "nginx" }), [{ op: "replace", path: "/metadata/labels/app", value: "new-value" }], { labels: { app: "new-value" } }],
    ["invalid JSON patch path", deployment({ app: "nginx" }), [{ op: "replace", path: "/metadata/invalid", value: "new-value" }], null],
    [
      "typo in template variable should just be rendered as is",
      deployment({ app: "nginx" }),
      [
        { op: "replace", path: "/metadata/labels/app", value: "$CLUSTER_NAME" },
        { op: "add", path: "/metadata/labels/${Member-Cluster-Name}", value: "${CLUSTER-NAME}" },
      ],
      { labels: { app: "$CLUSTER_NAME", "${Member-Cluster-Name}": "${CLUSTER-NAME}" } },
    ],
    [
      "multiple rules with cluster name template",
      deployment({ app: "nginx" }),
      [
        { op: "replace", path: "/metadata/labels/app", value: "${MEMBER-CLUSTER-NAME}" },
        { op: "add", path: "/metadata/annotations", value: { app: "workload-${MEMBER-CLUSTER-NAME}", test: "nginx" } },
      ],
      { labels: { app: "cluster-1" }, annotations: { app: "workload-cluster-1", test: "nginx" } },
    ],
    [
      "replace using cluster label key variables",
      deployment({ app: "nginx" }),
      [
        { op: "replace", path: "/metadata/labels/app", value: "${MEMBER-CLUSTER-LABEL-KEY-region}-app" },
        {
          op: "add",
          path: "/metadata/annotations",
          value: { environment: "${MEMBER-CLUSTER-LABEL-KEY-fleet-kubernetes.io/env}", zone: "${MEMBER-CLUSTER-LABEL-KEY-zone}" },
        },
      ],
      { labels: { app: "us-west-app" }, annotations: { environment: "production", zone: "west-1a" } },
    ],
    [
      "replace with non-existent label key",
      deployment({ app: "nginx" }),
      [{ op: "replace", path: "/metadata/labels/app", value: "${MEMBER-CLUSTER-LABEL-KEY-non-existent}-app" }],
      null,
    ],
  ];
  for (const [name, object, ops, want] of cases) {
    it(name, () => {
      const before = structuredClone(object);
      const out = patch(object, ops);
      expect(object).toEqual(before);
      if (want === null) {
        expect(out.ok).toBe(false);
        return;
      }
      expect(out.ok).toBe(true);
      const meta = (out as { object: KubeObject }).object.metadata;
      expect({ labels: meta.labels, ...(meta.annotations ? { annotations: meta.annotations } : {}) }).toEqual(want);
    });
  }

  it("multiple operations on the spec (minReadySeconds), and replicas typed from a label", () => {
    const out = patch(
      deployment({ app: "nginx" }, { minReadySeconds: 10, replicas: 1 }),
      [
        { op: "replace", path: "/metadata/labels/app", value: "new-value" },
        { op: "add", path: "/spec/minReadySeconds", value: 1 },
        { op: "replace", path: "/spec/replicas", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" },
      ],
      { name: "c", labels: { size: "3" } },
    );
    expect(out).toMatchObject({ ok: true, object: { metadata: { labels: { app: "new-value" } }, spec: { minReadySeconds: 1, replicas: 3 } } });
  });

  it("substitutes label variables as KubeFleet's replaceClusterLabelKeyVariables", () => {
    const c = { name: "cluster-1", labels: { region: "us-west", "fleet.azure.com/location-region_public": "eastus", "fleet.azure.com/env": "prod" } };
    expect(substituteVariables("The cluster is in ${MEMBER-CLUSTER-LABEL-KEY-region}", c)).toEqual({ ok: true, text: "The cluster is in us-west" });
    expect(substituteVariables("The cluster is in $MEMBER-CLUSTER-LABEL-KEY-region", c)).toEqual({
      ok: true,
      text: "The cluster is in $MEMBER-CLUSTER-LABEL-KEY-region",
    });
    expect(
      substituteVariables(
        "The cluster is in ${MEMBER-CLUSTER-LABEL-KEY-fleet.azure.com/location-region_public} and environment is ${MEMBER-CLUSTER-LABEL-KEY-fleet.azure.com/env}",
        c,
      ),
    ).toEqual({ ok: true, text: "The cluster is in eastus and environment is prod" });
    expect(substituteVariables("The cluster is in ${MEMBER-CLUSTER-LABEL-KEY-REGION}", c)).toEqual({
      ok: false,
      message: "label key REGION not found on cluster cluster-1",
    });
    expect(substituteVariables("The cluster is in ${MEMBER-CLUSTER-LABEL-KEY-region", c).ok).toBe(false);
    expect(substituteVariables("The cluster is in ${MEMBER-CLUSTER-LABEL-KEY-}", c)).toEqual({
      ok: false,
      message: "label key  not found on cluster cluster-1",
    });
    // Flotilla's reserved prefix: an unknown variable there is an error, never a literal on the cluster.
    expect(substituteVariables("${MEMBER-CLUSTER-REGION}", c)).toMatchObject({
      ok: false,
      message: expect.stringContaining("unknown variable ${MEMBER-CLUSTER-REGION}"),
    });
  });

  it("is all or nothing, bounded, and keeps the object's identity", () => {
    const d = deployment({ app: "nginx" }, { replicas: 1 });
    const half = patch(d, [
      { op: "replace", path: "/spec/replicas", value: 5 },
      { op: "remove", path: "/spec/missing" },
    ]);
    expect(half).toMatchObject({ ok: false, source: "test", message: expect.stringContaining("operation 1 (remove /spec/missing)") });
    expect(d.spec).toEqual({ replicas: 1 });
    // A bad JSON pointer fails the cluster, never the hub.
    expect(patch(d, [{ op: "add", path: "spec/replicas", value: 2 }]).ok).toBe(false);
    expect(patch(d, [{ op: "add", path: "/__proto__/polluted", value: 1 }]).ok).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // A copy that doubles the object is stopped before the object grows past the limit.
    const loop = Array.from({ length: 60 }, (_, i): OverrideOperation => ({ op: "copy", from: "/spec", path: `/spec/c${i}` }));
    const grown = applyOverrideSteps(d, [{ source: "loop", ops: compileOperations(loop) }], cluster1);
    expect(grown).toMatchObject({ ok: false, message: expect.stringContaining("would grow the object by more than") });
    const many = Array.from({ length: 1001 }, (): OverrideOperation => ({ op: "replace", path: "/spec/replicas", value: 2 }));
    expect(patch(d, many)).toMatchObject({ ok: false, message: expect.stringContaining("too many JSON patch operations") });
    expect(patch(d, [{ op: "add", path: "/spec/big", value: "x".repeat(300 * 1024) }])).toMatchObject({
      ok: false,
      message: expect.stringContaining("exceed"),
    });
    expect(patch(d, [{ op: "replace", path: "/metadata/name", value: "other" }])).toMatchObject({
      ok: false,
      message: expect.stringContaining("may not change"),
    });
    expect(applyOverrideSteps(d, [{ source: "x", delete: true }], cluster1)).toEqual({ ok: true, object: null });
  });
});
