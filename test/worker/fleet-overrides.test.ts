// KubeFleet's overrides on the hub (docs/overrides.md; the engine's own cases are
// override-engine.test.ts): the KubeFleet source (cluster selectors, order, ResourceOverride wins, Delete), validation over HTTP as
// KubeFleet's webhooks (pkg/utils/validator/*override*_test.go's cases, with their messages),
// snapshots, and the placement controller in workerd: works per cluster, applicable overrides and
// Overridden in the status, a failed override as a per-cluster condition with nothing
// half-applied, and an override change re-rendering only the clusters it touches.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { KubeObject } from "../../src/k8s/meta.ts";
import type { OverrideOperation } from "../../src/overrides/engine.ts";
import { compileKubeFleetOverrides, overridesForPlacement, type CroSnapshot, type RoSnapshot } from "../../src/overrides/kubefleet.ts";
import { call, condition, createCluster, createNamespaces, merge, reportApplied as report, fleetWorksOf as worksOf } from "./helpers.ts";

// ---------------------------------------------------------------------------------------------
// The KubeFleet source, after KubeFleet's TestApplyOverrides_* cases.

const deployment = (labels?: Record<string, string>): KubeObject =>
  ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "deployment-name", namespace: "deployment-namespace", ...(labels ? { labels } : {}) },
    spec: {},
  }) as unknown as KubeObject;

const rule = (terms: Record<string, unknown>[] | null, ops?: OverrideOperation[], type: "JSONPatch" | "Delete" = "JSONPatch") => ({
  ...(terms === null ? {} : { clusterSelector: { clusterSelectorTerms: terms } }),
  overrideType: type,
  ...(ops ? { jsonPatchOverrides: ops } : {}),
});
const key1 = [{ labelSelector: { matchLabels: { key1: "value1" } } }];
const cro = (name: string, selector: Record<string, unknown>, rules: unknown[], placement?: string): CroSnapshot =>
  ({
    name,
    spec: {
      ...(placement ? { placement: { name: placement, scope: "Cluster" } } : {}),
      clusterResourceSelectors: [selector],
      policy: { overrideRules: rules },
    },
  }) as CroSnapshot;
const ro = (name: string, namespace: string, selector: Record<string, unknown>, rules: unknown[]): RoSnapshot =>
  ({ name, namespace, spec: { resourceSelectors: [selector], policy: { overrideRules: rules } } }) as RoSnapshot;
const NS_SEL = { group: "", version: "v1", kind: "Namespace", name: "deployment-namespace" };
const DEP_SEL = { group: "apps", version: "v1", kind: "Deployment", name: "deployment-name" };
const clusterRole = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: "clusterrole-name", labels: { app: "app1" } },
  rules: [{ verbs: ["get"] }],
} as unknown as KubeObject;
const member = { name: "cluster-1", labels: { key1: "value1", key2: "value2" } };

describe("KubeFleet's overrides on the engine (applyOverrides cases)", () => {
  it("applies only the rules matching the cluster; no selector matches none, no terms every cluster", () => {
    const overrides = compileKubeFleetOverrides(
      [
        cro("cro-1", { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "clusterrole-name" }, [
          rule(key1, [{ op: "add", path: "/metadata/labels/new-label", value: "new-value" }]),
          rule([{ labelSelector: { matchLabels: { key1: "other" } } }], [{ op: "remove", path: "/metadata/labels/app" }]),
          rule(null, [{ op: "remove", path: "/rules" }]),
          rule([], [{ op: "add", path: "/metadata/labels/all", value: "${MEMBER-CLUSTER-NAME}" }]),
        ]),
      ],
      [],
    );
    const co = overrides.forCluster(member);
    expect(co.clusterResourceOverrides).toEqual(["cro-1"]);
    expect(co.apply(clusterRole)).toMatchObject({
      ok: true,
      object: { metadata: { labels: { app: "app1", "new-label": "new-value", all: "cluster-1" } }, rules: [{}] },
    });
    // No rule of it matches another cluster (the empty-terms rule matches every one).
    expect(overrides.forCluster({ name: "c2", labels: {} }).apply(clusterRole)).toMatchObject({ ok: true, object: { metadata: { labels: { all: "c2" } } } });
  });

  it("fails with KubeFleet's user error naming the snapshot and the object, the object untouched", () => {
    const overrides = compileKubeFleetOverrides(
      [
        cro("conflicting-rules-cro-snapshot", { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "clusterrole-name" }, [
          rule(key1, [{ op: "remove", path: "/rules/0/verbs" }]),
          rule(key1, [{ op: "add", path: "/rules/0/verbs/1", value: "read" }]),
        ]),
      ],
      [],
    );
    const out = overrides.forCluster(member).apply(clusterRole);
    expect(out.ok).toBe(false);
    const message = (out as { message: string }).message;
    expect(message).toContain('ClusterResourceOverrideSnapshot "conflicting-rules-cro-snapshot"');
    expect(message).toContain('ClusterRole "clusterrole-name"');
    expect(clusterRole.rules).toEqual([{ verbs: ["get"] }]);
  });

  it("reports an invalid cluster label selector", () => {
    const overrides = compileKubeFleetOverrides(
      [
        cro("bad-selector-cro-snapshot", { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "clusterrole-name" }, [
          rule(
            [{ labelSelector: { matchExpressions: [{ key: "key1", operator: "InvalidOperator", values: ["value1"] }] } }],
            [{ op: "add", path: "/metadata/labels/x", value: "y" }],
          ),
        ]),
      ],
      [],
    );
    const out = overrides.forCluster(member).apply(clusterRole);
    expect((out as { message: string }).message).toMatch(/bad-selector-cro-snapshot.*ClusterRole "clusterrole-name".*invalid cluster label selector/);
  });

  it("deletes during and after patching; later patches do nothing to a deleted object", () => {
    const sel = { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "clusterrole-name" };
    const during = compileKubeFleetOverrides(
      [cro("c", sel, [rule(key1, undefined, "Delete"), rule(key1, [{ op: "replace", path: "/metadata/labels/key1", value: "v" }])])],
      [],
    );
    expect(during.forCluster(member).apply(clusterRole)).toEqual({ ok: true, object: null });
    const after = compileKubeFleetOverrides(
      [cro("c", sel, [rule(key1, [{ op: "replace", path: "/metadata/labels/app", value: "v" }]), rule(key1, undefined, "Delete")])],
      [],
    );
    expect(after.forCluster(member).apply(clusterRole)).toEqual({ ok: true, object: null });
  });

  it("applies the namespace's ClusterResourceOverride, then the ResourceOverride, which wins", () => {
    const d = deployment({ app: "app1" });
    const overrides = compileKubeFleetOverrides(
      [
        cro("cro", NS_SEL, [
          rule(
            [],
            [
              { op: "add", path: "/metadata/labels/app", value: "by-cro" },
              { op: "add", path: "/metadata/labels/cro", value: "yes" },
            ],
          ),
        ]),
      ],
      [ro("ro", "deployment-namespace", DEP_SEL, [rule([], [{ op: "replace", path: "/metadata/labels/app", value: "by-ro" }])])],
    );
    const co = overrides.forCluster(member);
    expect(co.resourceOverrides).toEqual([{ name: "ro", namespace: "deployment-namespace" }]);
    expect(co.apply(d)).toMatchObject({ ok: true, object: { metadata: { labels: { app: "by-ro", cro: "yes" } } } });
    // A ResourceOverride deleting the object wins too; a CRO deleting makes the RO a no-op.
    const deleting = compileKubeFleetOverrides(
      [cro("cro", NS_SEL, [rule([], undefined, "Delete")])],
      [ro("ro", "deployment-namespace", DEP_SEL, [rule([], [{ op: "add", path: "/metadata/labels/new-label", value: "new-value" }])])],
    );
    expect(deleting.forCluster(member).apply(d)).toEqual({ ok: true, object: null });
  });

  it("names the failing ResourceOverride snapshot and the namespaced object", () => {
    const overrides = compileKubeFleetOverrides(
      [],
      [
        ro("test-ro-snapshot", "deployment-namespace", DEP_SEL, [
          rule([], [{ op: "replace", path: "/metadata/labels/app", value: "${MEMBER-CLUSTER-LABEL-KEY-non-existent}-app" }]),
        ]),
      ],
    );
    const message = (overrides.forCluster({ name: "cluster-1", labels: { region: "us-west" } }).apply(deployment({ app: "nginx" })) as { message: string })
      .message;
    expect(message).toContain('ResourceOverrideSnapshot "test-ro-snapshot"');
    expect(message).toContain('Deployment "deployment-name"');
    expect(message).toContain('namespace "deployment-namespace"');
  });

  it("picks the overrides of a placement: its placement reference and its selected objects", () => {
    const objects = [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "deployment-namespace" } }, deployment(), clusterRole] as KubeObject[];
    const picked = overridesForPlacement(
      { namespace: "", name: "crp" },
      objects,
      [
        cro("for-ns", NS_SEL, [rule([], [])]),
        cro("for-other-crp", NS_SEL, [rule([], [])], "other"),
        cro("for-this-crp", NS_SEL, [rule([], [])], "crp"),
        cro("wrong-version", { ...NS_SEL, version: "v2" }, [rule([], [])]),
      ],
      [ro("ro", "deployment-namespace", DEP_SEL, [rule([], [])]), ro("elsewhere", "other", DEP_SEL, [rule([], [])])],
    );
    expect(picked.cros.map((c) => c.name)).toEqual(["for-ns", "for-this-crp"]);
    expect(picked.ros.map((r) => r.name)).toEqual(["ro"]);
    // A ResourceOverride for a ResourcePlacement of its namespace (scope Namespaced); a ClusterResourceOverride names only a ClusterResourcePlacement.
    const forRp = {
      ...ro("for-rp", "deployment-namespace", DEP_SEL, [rule([], [])]),
      spec: { ...ro("x", "x", DEP_SEL, []).spec, placement: { name: "rp", scope: "Namespaced" as const } },
    };
    const rp = overridesForPlacement({ namespace: "deployment-namespace", name: "rp" }, objects, [cro("for-rp-crp", NS_SEL, [rule([], [])], "rp")], [forRp]);
    expect(rp.cros).toEqual([]);
    expect(rp.ros.map((r) => r.name)).toEqual(["for-rp"]);
    expect(overridesForPlacement({ namespace: "", name: "rp" }, objects, [], [forRp]).ros).toEqual([]);
  });

  it("gives clusters that render the same the same key", () => {
    const overrides = compileKubeFleetOverrides(
      [],
      [
        ro("ro", "deployment-namespace", DEP_SEL, [
          rule(
            [{ labelSelector: { matchLabels: { region: "eu" } } }],
            [{ op: "add", path: "/metadata/labels/size", value: "${MEMBER-CLUSTER-LABEL-KEY-size}" }],
          ),
        ]),
      ],
    );
    const k = (labels: Record<string, string>, name = "x") => overrides.forCluster({ name, labels }).key;
    expect(k({ region: "eu", size: "1" }, "a")).toBe(k({ region: "eu", size: "1", other: "z" }, "b"));
    expect(k({ region: "eu", size: "1" })).not.toBe(k({ region: "eu", size: "2" }));
    expect(k({ region: "us", size: "1" })).toBe("");
  });
});

// ---------------------------------------------------------------------------------------------
// Over the HTTP API.

const G = "/apis/placement.kubernetes-fleet.io";
const CROS = (name = "", v = "v1") => `${G}/${v}/clusterresourceoverrides${name ? `/${name}` : ""}`;
const ROS = (ns: string, name = "") => `${G}/v1/namespaces/${ns}/resourceoverrides${name ? `/${name}` : ""}`;
const CRP = (name = "") => `${G}/v1/clusterresourceplacements${name ? `/${name}` : ""}`;
const patchOp = (op: string, path: string, value?: unknown) => ({ op, path, ...(value !== undefined ? { value } : {}) });
const allClusters = { clusterSelector: { clusterSelectorTerms: [] } };
const validRules = [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "/metadata/labels/new-label", "new-value")] }];

const croBody = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ClusterResourceOverride",
  metadata: { name },
  spec: {
    clusterResourceSelectors: [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: `${name}-role` }],
    policy: { overrideRules: validRules },
    ...spec,
  },
});
const roBody = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ResourceOverride",
  metadata: { name },
  spec: { resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: `${name}-app` }], policy: { overrideRules: validRules }, ...spec },
});

describe("validation as KubeFleet's webhooks and CRDs", () => {
  // [case, spec, expected message fragment (null: created)], after KubeFleet's validator tests.
  const CRO_CASES: [string, Record<string, unknown>, string | null][] = [
    ["valid", {}, null],
    [
      "label selector",
      { clusterResourceSelectors: [{ group: "group", version: "v1", kind: "Kind", labelSelector: { matchLabels: { key: "value" } } }] },
      "label selector is not supported for resource selection {Group:group Version:v1 Kind:Kind Name: LabelSelector:&LabelSelector{MatchLabels:map[string]string{key: value,}",
    ],
    ["no name", { clusterResourceSelectors: [{ group: "group", version: "v1", kind: "Kind" }] }, "resource name is required for resource selection"],
    [
      "duplicate selectors",
      {
        clusterResourceSelectors: [
          { group: "group", version: "v1", kind: "Kind", name: "example" },
          { group: "group", version: "v1", kind: "Kind", name: "example" },
        ],
      },
      "resource selector {Group:group Version:v1 Kind:Kind Name:example LabelSelector:nil SelectionScope:NamespaceWithResources} already exists, and must be unique",
    ],
    [
      "property selector",
      {
        policy: {
          overrideRules: [
            { clusterSelector: { clusterSelectorTerms: [{ propertySelector: { matchExpressions: [] } }] }, jsonPatchOverrides: [patchOp("add", "/a", 1)] },
          ],
        },
      },
      "only labelSelector is supported",
    ],
    [
      "no label selector",
      { policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [{}] }, jsonPatchOverrides: [patchOp("add", "/a", 1)] }] } },
      "labelSelector is required",
    ],
    [
      "invalid label selector",
      {
        policy: {
          overrideRules: [
            {
              clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { "in valid": "x" } } }] },
              jsonPatchOverrides: [patchOp("add", "/a", 1)],
            },
          ],
        },
      },
      "the labelSelector in cluster selector",
    ],
    [
      "delete with patches",
      { policy: { overrideRules: [{ ...allClusters, overrideType: "Delete", jsonPatchOverrides: [patchOp("add", "/a", 1)] }] } },
      "JSONPatchOverrides cannot be set when the override type is Delete",
    ],
    ["JSONPatch without patches", { policy: { overrideRules: [{ ...allClusters }] } }, "JSONPatchOverrides cannot be empty"],
    ["kind", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("replace", "/kind", "x")] }] } }, "cannot override typeMeta fields"],
    [
      "apiVersion",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("replace", "/apiVersion", "x")] }] } },
      "cannot override typeMeta fields",
    ],
    [
      "metadata",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("replace", "/metadata", {})] }] } },
      "cannot override field metadata",
    ],
    [
      "metadata.name",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("replace", "/metadata/name", "x")] }] } },
      "cannot override metadata fields except annotations and labels",
    ],
    ["status", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("remove", "/status")] }] } }, "cannot override status fields"],
    [
      "relative path",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "spec.resourceSelectors/matchExpressions", "x")] }] } },
      'invalid JSONPatchOverride {add spec.resourceSelectors/matchExpressions {"x"}}: path must start with /',
    ],
    ["empty path", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("replace", "", "x")] }] } }, "path cannot be empty"],
    [
      "empty segment",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "/spec//x", "x")] }] } },
      "path cannot contain empty string",
    ],
    [
      "remove with value",
      { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("remove", "/spec", "x")] }] } },
      "remove operation cannot have value",
    ],
    ["a capital Kind path is a field", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("remove", "/Kind")] }] } }, null],
    ["empty cluster selector", { policy: { overrideRules: [{ clusterSelector: {}, jsonPatchOverrides: [patchOp("add", "/a", 1)] }] } }, null],
    ["namespaced placement", { placement: { name: "rp", scope: "Namespaced" } }, "clusterResourceOverride placement reference cannot be Namespaced scope"],
    ["bad op", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("move", "/a", 1)] }] } }, "op"],
    ["21 rules", { policy: { overrideRules: Array.from({ length: 21 }, () => validRules[0]) } }, "overrideRules"],
  ];
  let seq = 0;
  for (const [name, spec, want] of CRO_CASES) {
    it(`ClusterResourceOverride: ${name}`, async () => {
      const r = await call("POST", CROS(), croBody(`cro-v-${++seq}`, spec));
      if (want === null) expect(r.status, JSON.stringify(r.body)).toBe(201);
      else {
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(r.body.message).toContain(want);
      }
    });
  }

  it("ClusterResourceOverride: one override per selected resource, its own update allowed", async () => {
    const sel = [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "shared-role" }];
    expect((await call("POST", CROS(), croBody("shared-1", { clusterResourceSelectors: sel }))).status).toBe(201);
    const second = await call("POST", CROS(), croBody("shared-2", { clusterResourceSelectors: sel }));
    expect(second.status).toBe(422);
    expect(second.body.message).toContain(
      "invalid resource selector {Group:rbac.authorization.k8s.io Version:v1 Kind:ClusterRole Name:shared-role LabelSelector:nil SelectionScope:NamespaceWithResources}: the resource has been selected by both shared-2 and shared-1, which is not supported",
    );
    const own = await call(
      "PATCH",
      CROS("shared-1"),
      { spec: { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "/metadata/labels/x", "y")] }] } } },
      merge,
    );
    expect(own.status, JSON.stringify(own.body)).toBe(200);
  });

  it("ClusterResourceOverride: the placement reference is immutable", async () => {
    expect((await call("POST", CROS(), croBody("pinned", { placement: { name: "crp-a" } }))).status).toBe(201);
    const moved = await call("PATCH", CROS("pinned"), { spec: { placement: { name: "crp-b" } } }, merge);
    expect(moved.status).toBe(422);
    expect(moved.body.message).toContain("The placement field is immutable");
    const dropped = await call("PATCH", CROS("pinned"), { spec: { placement: null } }, merge);
    expect(dropped.status).toBe(422);
  });

  it("ResourceOverride: duplicates, one per resource in a namespace, the policy's rules, v1beta1 and v1 alike", async () => {
    await createNamespaces("ro-valid", "ro-valid-2");
    const dep = { group: "apps", version: "v1", kind: "Deployment", name: "web" };
    const dup = await call("POST", ROS("ro-valid"), roBody("dup", { resourceSelectors: [dep, dep] }));
    expect(dup.status).toBe(422);
    expect(dup.body.message).toContain("resource selector {Group:apps Version:v1 Kind:Deployment Name:web} already exists, and must be unique");
    expect((await call("POST", ROS("ro-valid"), roBody("first", { resourceSelectors: [dep] }))).status).toBe(201);
    const again = await call("POST", ROS("ro-valid"), roBody("second", { resourceSelectors: [dep] }));
    expect(again.status).toBe(422);
    expect(again.body.message).toContain("the resource has been selected by both second and first, which is not supported");
    // Another namespace's ResourceOverride may select its own "web".
    expect((await call("POST", ROS("ro-valid-2"), roBody("second", { resourceSelectors: [dep] }))).status).toBe(201);
    const status = await call(
      "POST",
      ROS("ro-valid"),
      roBody("status", { policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "/status/x", 1)] }] } }),
    );
    expect(status.status).toBe(422);
    expect(status.body.message).toContain("cannot override status fields");
    const beta = await call("GET", `${G}/v1beta1/namespaces/ro-valid/resourceoverrides/first`);
    expect(beta.status).toBe(200);
    expect(beta.body.apiVersion).toBe("placement.kubernetes-fleet.io/v1beta1");
    expect(beta.body.spec.policy.overrideRules[0].overrideType).toBe("JSONPatch");
  });

  it("refuses bad YAML and unknown fields with 400, and snapshots are read-only", async () => {
    const yaml = await call("POST", CROS(), "apiVersion: placement.kubernetes-fleet.io/v1\nkind: ClusterResourceOverride\nmetadata: {name: [unclosed\n", {
      contentType: "application/yaml",
    });
    expect(yaml.status).toBe(400);
    const unknown = await call("POST", CROS(), { ...croBody("unknown-field", {}), spec: { ...croBody("x", {}).spec, surprise: true } });
    expect(unknown.status).toBe(400);
    const snap = await call("POST", `${G}/v1/clusterresourceoverridesnapshots`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverrideSnapshot",
      metadata: { name: "forged" },
      spec: { overrideSpec: croBody("x", {}).spec, overrideHash: "x" },
    });
    expect(snap.status).toBe(405);
  });
});

// ---------------------------------------------------------------------------------------------
// The controllers.

/** Runs a placement's controller now (its object's run; what its alarm does shortly after a notification). */
async function run(name: string) {
  await env.REPLICASETS.getByName(`placement:/${name}`).reconcile("placement:", name);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const manifest = (work: any, kind: string) => work.spec.workload.manifests.find((m: KubeObject) => m.kind === kind);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const statusOf = (crp: any, cluster: string) => crp.status.placementStatuses.find((s: { clusterName: string }) => s.clusterName === cluster);
/** The condition of `type` in a placement's status for `cluster`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const clusterCondition = (crp: any, cluster: string, type: string) => (statusOf(crp, cluster)?.conditions ?? []).find((c: { type: string }) => c.type === type);

async function deploy(ns: string, name: string, image: string) {
  const r = await call("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "app", image }] } },
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

describe("overrides in the placement controller", () => {
  it("snapshots an override, pins it per binding, reports it per cluster, and re-renders only the clusters a change touches", async () => {
    await createCluster("ov-a", { region: "eu", size: "2" });
    await createCluster("ov-b", { region: "us", size: "3" });
    await createCluster("ov-c", { region: "us", size: "1" });
    await createNamespaces("ov-app");
    await deploy("ov-app", "web", "nginx:1.27");
    const roRules = [
      {
        clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { region: "eu" } } }] },
        jsonPatchOverrides: [patchOp("replace", "/spec/template/spec/containers/0/image", "eu.registry.example/nginx:1.27")],
      },
      {
        clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { region: "us" } } }] },
        jsonPatchOverrides: [patchOp("replace", "/spec/template/spec/containers/0/image", "us.registry.example/nginx:1.27")],
      },
      { ...allClusters, jsonPatchOverrides: [patchOp("replace", "/spec/replicas", "${MEMBER-CLUSTER-LABEL-KEY-size}")] },
    ];
    const created = await call("POST", ROS("ov-app"), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "web" },
      spec: {
        placement: { name: "ov" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
        policy: { overrideRules: roRules },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // A namespace-wide label from a ClusterResourceOverride, for the team of each region.
    expect(
      (
        await call("POST", CROS(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterResourceOverride",
          metadata: { name: "ov-ns" },
          spec: {
            placement: { name: "ov" },
            clusterResourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ov-app" }],
            policy: {
              overrideRules: [{ ...allClusters, jsonPatchOverrides: [patchOp("add", "/metadata/labels/fleet-region", "${MEMBER-CLUSTER-LABEL-KEY-region}")] }],
            },
          },
        })
      ).status,
    ).toBe(201);

    // The snapshots, the finalizers.
    const snaps = (await call("GET", `${G}/v1/namespaces/ov-app/resourceoverridesnapshots`)).body.items;
    expect(snaps.map((s: KubeObject) => s.metadata.name)).toEqual(["web-0"]);
    expect(snaps[0].metadata.labels).toMatchObject({
      "kubernetes-fleet.io/parent-resource-override": "web",
      "kubernetes-fleet.io/is-latest-snapshot": "true",
      "kubernetes-fleet.io/override-index": "0",
    });
    expect((await call("GET", ROS("ov-app", "web"))).body.metadata.finalizers).toEqual(["kubernetes-fleet.io/override-cleanup"]);

    const placed = await call("POST", CRP(), {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "ov" },
      spec: {
        resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ov-app" }],
        policy: {
          placementType: "PickAll",
          affinity: {
            clusterAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                clusterSelectorTerms: [{ labelSelector: { matchExpressions: [{ key: "region", operator: "Exists" }] } }],
              },
            },
          },
        },
        strategy: { rollingUpdate: { maxUnavailable: 1 } },
      },
    });
    expect(placed.status, JSON.stringify(placed.body)).toBe(201);
    let works = await worksOf("ov");
    expect(Object.keys(works).sort()).toEqual(["ov-a", "ov-b", "ov-c"]);
    const image = (c: string) => manifest(works[c], "Deployment").spec.template.spec.containers[0].image;
    expect([image("ov-a"), image("ov-b"), image("ov-c")]).toEqual([
      "eu.registry.example/nginx:1.27",
      "us.registry.example/nginx:1.27",
      "us.registry.example/nginx:1.27",
    ]);
    expect(["ov-a", "ov-b", "ov-c"].map((c) => manifest(works[c], "Deployment").spec.replicas)).toEqual([2, 3, 1]);
    expect(manifest(works["ov-a"], "Namespace").metadata.labels["fleet-region"]).toBe("eu");
    expect(manifest(works["ov-a"], "Deployment").metadata.labels["fleet-region"]).toBe("eu");
    // The hub's own object is untouched.
    expect((await call("GET", "/apis/apps/v1/namespaces/ov-app/deployments/web")).body.spec.replicas).toBe(1);

    let crp = (await call("GET", CRP("ov"))).body;
    expect(statusOf(crp, "ov-a")).toMatchObject({
      applicableClusterResourceOverrides: ["ov-ns-0"],
      applicableResourceOverrides: [{ name: "web-0", namespace: "ov-app" }],
    });
    expect(clusterCondition(crp, "ov-a", "Overridden")).toMatchObject({
      status: "True",
      reason: "OverriddenSucceeded",
      message: "Successfully applied the override rules on the resources",
    });
    expect(condition(crp, "ClusterResourcePlacementOverridden")).toMatchObject({
      status: "True",
      reason: "OverriddenSucceeded",
      message: "The selected resources are successfully overridden in 3 cluster(s)",
    });
    const binding = (await call("GET", `${G}/v1/clusterresourcebindings/ov-ov-a`)).body;
    expect(binding.spec).toMatchObject({ clusterResourceOverrideSnapshots: ["ov-ns-0"], resourceOverrideSnapshots: [{ name: "web-0", namespace: "ov-app" }] });

    for (const c of ["ov-a", "ov-b", "ov-c"]) await report(c, "ov-work");
    await run("ov");
    const before = Object.fromEntries(Object.entries(await worksOf("ov")).map(([c, w]) => [c, w.metadata.resourceVersion]));

    // Change the us rule: a new snapshot; only the us clusters' works change, one at a time (maxUnavailable 1).
    roRules[1]!.jsonPatchOverrides = [patchOp("replace", "/spec/template/spec/containers/0/image", "us-mirror.example/nginx:1.27")];
    expect((await call("PATCH", ROS("ov-app", "web"), { spec: { policy: { overrideRules: roRules } } }, merge)).status).toBe(200);
    expect(
      (await call("GET", `${G}/v1/namespaces/ov-app/resourceoverridesnapshots`)).body.items.map(
        (s: KubeObject) => `${s.metadata.name}:${s.metadata.labels?.["kubernetes-fleet.io/is-latest-snapshot"]}`,
      ),
    ).toEqual(["web-0:false", "web-1:true"]);
    await run("ov");
    works = await worksOf("ov");
    expect(works["ov-a"].metadata.resourceVersion).toBe(before["ov-a"]);
    const moved = ["ov-b", "ov-c"].filter((c) => works[c].metadata.resourceVersion !== before[c]);
    expect(moved).toHaveLength(1);
    expect(image(moved[0]!)).toBe("us-mirror.example/nginx:1.27");
    const held = moved[0] === "ov-b" ? "ov-c" : "ov-b";
    expect(image(held)).toBe("us.registry.example/nginx:1.27");
    crp = (await call("GET", CRP("ov"))).body;
    expect(clusterCondition(crp, held, "RolloutStarted")).toMatchObject({ status: "False" });
    expect(statusOf(crp, held).applicableResourceOverrides).toEqual([{ name: "web-0", namespace: "ov-app" }]);
    expect(statusOf(crp, moved[0]!).applicableResourceOverrides).toEqual([{ name: "web-1", namespace: "ov-app" }]);
    expect(statusOf(crp, "ov-a").applicableResourceOverrides).toEqual([{ name: "web-1", namespace: "ov-app" }]);
    await report(moved[0]!, "ov-work");
    await run("ov");
    works = await worksOf("ov");
    expect(image(held)).toBe("us-mirror.example/nginx:1.27");
    expect(works["ov-a"].metadata.resourceVersion).toBe(before["ov-a"]);

    // A cluster relabeled: re-rendered without another change.
    expect(
      (await call("PATCH", `/apis/cluster.open-cluster-management.io/v1/managedclusters/ov-a`, { metadata: { labels: { size: "5" } } }, merge)).status,
    ).toBe(200);
    await report(held, "ov-work");
    await run("ov");
    works = await worksOf("ov");
    expect(manifest(works["ov-a"], "Deployment").spec.replicas).toBe(5);

    // Deleting the override: its snapshots go, then it; the clusters get the objects as they are.
    expect((await call("DELETE", ROS("ov-app", "web"))).status).toBe(200);
    await vi.waitFor(async () => expect((await call("GET", ROS("ov-app", "web"))).status).toBe(404), { timeout: 5000, interval: 100 });
    expect((await call("GET", `${G}/v1/namespaces/ov-app/resourceoverridesnapshots`)).body.items).toEqual([]);
  });

  it("a failed override is a condition on its cluster, with nothing half-applied; Delete keeps an object off a cluster", async () => {
    await createCluster("ovf-a", { tier: "gold", size: "2" });
    await createCluster("ovf-b", { tier: "gold" });
    await createNamespaces("ovf-app");
    await deploy("ovf-app", "api", "api:1");
    expect(
      (await call("POST", `/api/v1/namespaces/ovf-app/configmaps`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "extra" }, data: { a: "1" } }))
        .status,
    ).toBe(201);
    // ovf-b has no `size` label: the override fails there.
    expect(
      (
        await call("POST", ROS("ovf-app"), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ResourceOverride",
          metadata: { name: "api" },
          spec: {
            resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "api" }],
            policy: {
              overrideRules: [
                {
                  ...allClusters,
                  jsonPatchOverrides: [
                    patchOp("add", "/metadata/labels/first", "applied"),
                    patchOp("replace", "/spec/replicas", "${MEMBER-CLUSTER-LABEL-KEY-size}"),
                  ],
                },
              ],
            },
          },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", ROS("ovf-app"), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ResourceOverride",
          metadata: { name: "extra" },
          spec: {
            resourceSelectors: [{ group: "", version: "v1", kind: "ConfigMap", name: "extra" }],
            policy: {
              overrideRules: [{ clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { size: "2" } } }] }, overrideType: "Delete" }],
            },
          },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", CRP(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterResourcePlacement",
          metadata: { name: "ovf" },
          spec: {
            resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ovf-app" }],
            policy: { placementType: "PickFixed", clusterNames: ["ovf-a", "ovf-b"] },
          },
        })
      ).status,
    ).toBe(201);
    const works = await worksOf("ovf");
    expect(Object.keys(works)).toEqual(["ovf-a"]);
    expect(works["ovf-a"].spec.workload.manifests.map((m: KubeObject) => m.kind)).toEqual(["Namespace", "Deployment"]);
    expect(manifest(works["ovf-a"], "Deployment")).toMatchObject({ metadata: { labels: { first: "applied" } }, spec: { replicas: 2 } });
    const crp = (await call("GET", CRP("ovf"))).body;
    const failed = clusterCondition(crp, "ovf-b", "Overridden");
    expect(failed).toMatchObject({ status: "False", reason: "OverriddenFailed" });
    expect(failed.message).toBe(
      'Failed to apply the override rules on the resources: ResourceOverrideSnapshot "api-0" failed to apply on Deployment "api" in namespace "ovf-app": label key size not found on cluster ovf-b',
    );
    expect(clusterCondition(crp, "ovf-b", "WorkSynchronized")).toBeUndefined();
    expect(condition(crp, "ClusterResourcePlacementOverridden")).toMatchObject({
      status: "False",
      reason: "OverriddenFailed",
      message: "Failed to override resources in 1 cluster(s)",
    });

    // Labelling the cluster fixes it: its works appear, rendered in full.
    expect(
      (await call("PATCH", `/apis/cluster.open-cluster-management.io/v1/managedclusters/ovf-b`, { metadata: { labels: { size: "4" } } }, merge)).status,
    ).toBe(200);
    await run("ovf");
    const fixed = await worksOf("ovf");
    expect(manifest(fixed["ovf-b"], "Deployment")).toMatchObject({ metadata: { labels: { first: "applied" } }, spec: { replicas: 4 } });
    expect(fixed["ovf-b"].spec.workload.manifests.map((m: KubeObject) => m.kind)).toEqual(["Namespace", "ConfigMap", "Deployment"]);
  });

  it("hostile overrides (a bad pointer, a huge value, an unknown variable) fail per cluster, the previous works kept", async () => {
    await createCluster("ovh-a", { role: "edge" });
    await createNamespaces("ovh-app");
    await deploy("ovh-app", "svc", "svc:1");
    expect(
      (
        await call("POST", CRP(), {
          apiVersion: "placement.kubernetes-fleet.io/v1",
          kind: "ClusterResourcePlacement",
          metadata: { name: "ovh" },
          spec: {
            resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "ovh-app" }],
            policy: { placementType: "PickFixed", clusterNames: ["ovh-a"] },
          },
        })
      ).status,
    ).toBe(201);
    await report("ovh-a", "ovh-work");
    await run("ovh");
    const first = (await worksOf("ovh"))["ovh-a"];
    const hostile: [string, unknown[]][] = [
      ["bad-pointer", [patchOp("replace", "/spec/template/spec/containers/~9/image", "x")]],
      ["huge", [patchOp("add", "/metadata/annotations", Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v".repeat(15_000)])))]],
      ["unknown-variable", [patchOp("add", "/metadata/labels/where", "${MEMBER-CLUSTER-REGION}")]],
    ];
    for (const [name, ops] of hostile) {
      const r = await call("POST", ROS("ovh-app"), {
        apiVersion: "placement.kubernetes-fleet.io/v1",
        kind: "ResourceOverride",
        metadata: { name },
        spec: {
          placement: { name: "ovh" },
          resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "svc" }],
          policy: { overrideRules: [{ ...allClusters, jsonPatchOverrides: ops }] },
        },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      await run("ovh");
      const crp = (await call("GET", CRP("ovh"))).body;
      expect(clusterCondition(crp, "ovh-a", "Overridden"), name).toMatchObject({ status: "False", reason: "OverriddenFailed" });
      const w = (await worksOf("ovh"))["ovh-a"];
      expect(w.metadata.resourceVersion, name).toBe(first.metadata.resourceVersion);
      expect(w.spec, name).toEqual(first.spec);
      expect((await call("DELETE", ROS("ovh-app", name))).status).toBe(200);
      await vi.waitFor(async () => expect((await call("GET", ROS("ovh-app", name))).status).toBe(404), { timeout: 5000, interval: 100 });
    }
    await run("ovh");
    const crp = (await call("GET", CRP("ovh"))).body;
    expect(clusterCondition(crp, "ovh-a", "Overridden")).toMatchObject({ status: "True", reason: "NoOverrideSpecified" });
  });
});
