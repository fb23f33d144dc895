// Cases of KubeFleet's and Karmada's own unit tests not yet covered elsewhere, driven over the
// HTTP API in workerd (docs/overrides.md): kubefleet-dev/kubefleet
// pkg/utils/validator/clusterresourceoverride_test.go ("multiple invalid override paths, 1 valid",
// "policy with multiple rules"), karmada-io/karmada pkg/webhook/overridepolicy/validating_test.go
// (the denial messages of Handle_*), and every field Karmada's policies carry that Flotilla does not
// build refused by name rather than accepted and ignored. Then: KubeFleet's
// resourceoverride_test.go TestValidateJSONPatchOverridePath (every path) and
// TestValidateJSONPatchOverride (empty patches), overrider_test.go TestIsClusterMatched (over a
// placement's render subresource), Karmada's overridepolicy mutating_test.go (a selector's
// namespace defaulted) and clusteroverridepolicy validating_test.go.
import { describe, expect, it, vi } from "vitest";
import { call, createCluster, createNamespaces } from "./helpers.ts";

const FLEET = "/apis/placement.kubernetes-fleet.io/v1";
const PG = "/apis/policy.karmada.io/v1alpha1";
const OP = (ns: string) => `${PG}/namespaces/${ns}/overridepolicies`;

const cro = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ClusterResourceOverride",
  metadata: { name },
  spec: { clusterResourceSelectors: [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name }], ...spec },
});
const op = (name: string, spec: Record<string, unknown>) => ({ apiVersion: "policy.karmada.io/v1alpha1", kind: "OverridePolicy", metadata: { name }, spec });

describe("KubeFleet's validator cases (clusterresourceoverride_test.go)", () => {
  it("multiple invalid override paths, 1 valid: every error aggregated, the valid /Kind passes", async () => {
    const r = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-paths", {
        policy: {
          overrideRules: [
            {
              clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { key: "value" } } }] },
              overrideType: "JSONPatch",
              jsonPatchOverrides: [
                { op: "remove", path: "/Kind" },
                { op: "add", path: "spec.resourceSelectors/matchExpressions", value: "new-value" },
                { op: "replace", path: "", value: "new-reason" },
                { op: "remove", path: "/status", value: "new-value" },
              ],
            },
          ],
        },
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    const m = r.body.message as string;
    for (const why of ["path must start with /", "path cannot be empty", "cannot override status fields", "remove operation cannot have value"])
      expect(m).toContain(why);
    expect(m).not.toContain("/Kind");
  });

  it("policy with multiple rules: a property sorter or selector term is refused, only labelSelector is supported", async () => {
    const r = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-terms", {
        policy: {
          overrideRules: [
            {
              clusterSelector: {
                clusterSelectorTerms: [{ labelSelector: { matchLabels: { key: "value" } } }, { propertySorter: { name: "example", sortOrder: "Descending" } }],
              },
              jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/a", value: "b" }],
            },
            {
              clusterSelector: {
                clusterSelectorTerms: [{ propertySelector: { matchExpressions: [{ name: "example", operator: "Ge", values: ["1"] }] } }],
              },
              jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/a", value: "b" }],
            },
          ],
        },
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.message).toContain("only labelSelector is supported");
  });
});

describe("Karmada's OverridePolicy webhook cases (validating_test.go), with its denial messages", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "Handle_ValidationOverrideSpecFails_DeniesAdmission",
      {
        resourceSelectors: [{ apiVersion: "test-apiversion", kind: "test" }],
        overrideRules: [
          {
            targetCluster: { clusterNames: ["member1"] },
            overriders: { labelsOverrider: [{ operator: "add", value: { "testannotation~projectId": "c-m-lfx9lk92p-v86cf" } }] },
          },
        ],
      },
      'Invalid value: "testannotation~projectId"',
    ],
    [
      "Handle_InvalidFieldPathInYAML_DeniesAdmission",
      {
        overrideRules: [
          { overriders: { fieldOverrider: [{ fieldPath: "invalidPath", yaml: [{ subPath: "/db-config", operator: "replace", value: "db: new" }] }] } },
        ],
      },
      'spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath: Invalid value: "invalidPath": JSON pointer must be empty or start with a "/',
    ],
    [
      "Handle_InvalidJSONSubPath_DeniesAdmission",
      {
        overrideRules: [
          { overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "invalidSubPath", operator: "replace", value: "x" }] }] } },
        ],
      },
      'spec.overrideRules[0].overriders.fieldOverrider[0].json[0].subPath: Invalid value: "invalidSubPath": JSON pointer must be empty or start with a "/',
    ],
    [
      "Handle_InvalidYAMLSubPath_DeniesAdmission",
      {
        overrideRules: [
          { overriders: { fieldOverrider: [{ fieldPath: "/data/config", yaml: [{ subPath: "invalidSubPath", operator: "replace", value: "x" }] }] } },
        ],
      },
      'spec.overrideRules[0].overriders.fieldOverrider[0].yaml[0].subPath: Invalid value: "invalidSubPath": JSON pointer must be empty or start with a "/',
    ],
    [
      "Handle_InvalidJSONValue_DeniesAdmission_OverriderOpReplace",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "/db-config", operator: "replace" }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value: Invalid value: null: value is required for add or replace operation",
    ],
    [
      "Handle_InvalidJSONValue_DeniesAdmission_OverriderOpAdd",
      { overrideRules: [{ overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "/db-config", operator: "add" }] }] } }] },
      "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value: Invalid value: null: value is required for add or replace operation",
    ],
    [
      "Handle_InvalidJSONValue_DeniesAdmission_OverriderOpRemove",
      {
        overrideRules: [
          { overriders: { fieldOverrider: [{ fieldPath: "/data/config", json: [{ subPath: "/db-config", operator: "remove", value: "new" }] }] } },
        ],
      },
      "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value: Invalid value: ",
    ],
    [
      "Handle_ResourceSelectorNamespaceMismatch_DeniesAdmission",
      { resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "elsewhere", name: "cm" }] },
      "namespace of resource selector must be the same as the namespace of the policy",
    ],
  ];
  for (const [name, spec, message] of cases)
    it(name, async () => {
      await createNamespaces("up-kop");
      const r = await call("POST", OP("up-kop"), op("bad", spec));
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.kind).toBe("Status");
      expect(r.body.message).toContain(message);
    });

  it("Handle_ValidationSucceeds_AllowsAdmission", async () => {
    await createNamespaces("up-kop");
    const r = await call(
      "POST",
      OP("up-kop"),
      op("good", {
        resourceSelectors: [{ apiVersion: "test-apiversion", kind: "test" }],
        overrideRules: [
          { targetCluster: { clusterNames: ["member1"] }, overriders: { plaintext: [{ path: "/spec/optional", operator: "remove" }] } },
          { overriders: { fieldOverrider: [{ fieldPath: "/data/config", yaml: [{ subPath: "/db-config", operator: "replace", value: "db: new" }] }] } },
        ],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  });
});

describe("Karmada's fields that are not built: refused by name, never accepted and ignored", () => {
  it("PropagationPolicy dependentOverrides (waiting for OverridePolicies) is refused naming the field", async () => {
    await createNamespaces("up-kop");
    const r = await call("POST", `${PG}/namespaces/up-kop/propagationpolicies`, {
      apiVersion: "policy.karmada.io/v1alpha1",
      kind: "PropagationPolicy",
      metadata: { name: "deps" },
      spec: { resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "cm" }], dependentOverrides: ["op-a"] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect((r.body.details.causes as { field: string }[]).map((c) => c.field)).toContain("spec.dependentOverrides");
  });

  it("an OverridePolicy field Karmada does not have is refused, naming it", async () => {
    await createNamespaces("up-kop");
    for (const [spec, field] of [
      [{ dependentOverrides: ["x"] }, "dependentOverrides"],
      [{ overrideRules: [{ overriders: { replicasOverrider: [{ value: 2 }] } }] }, "replicasOverrider"],
      [{ overrideRules: [{ targetCluster: { clusterNames: ["m1"], spreadByField: "region" }, overriders: {} }] }, "spreadByField"],
    ] as const) {
      const r = await call("POST", OP("up-kop"), op("unknown", spec as Record<string, unknown>));
      expect([400, 422], JSON.stringify(r.body)).toContain(r.status);
      expect(r.body.kind).toBe("Status");
      expect(JSON.stringify(r.body)).toContain(field);
    }
  });
});

describe("KubeFleet's path validation (resourceoverride_test.go TestValidateJSONPatchOverridePath, TestValidateJSONPatchOverride)", () => {
  const cases: [string, string, string | null][] = [
    ["valid json patch override path", "/spec/clusterResourceSelector/kind", null],
    ["cannot override typeMeta fields (kind)", "/kind", "cannot override typeMeta fields"],
    ["cannot override typeMeta fields (apiVersion)", "/apiVersion", "cannot override typeMeta fields"],
    ["cannot override metadata fields", "/metadata/finalizers/0", "cannot override metadata fields"],
    ["cannot override any status field", "/status/conditions/0/reason", "cannot override status fields"],
    ["correct metadata field", "/metadata/annotations/new-annotation", null],
    ["apiVersion used as label", "/metadata/labels/apiVersion", null],
    ["case sensitive check", "/Kind", null],
    ["cannot override status", "/status", "cannot override status fields"],
    ["apiVersion within path", "/apiVersionabc", null],
    ["empty path", "", "path cannot be empty"],
    ["slashes only", "/////", "path cannot contain empty string"],
    ["path must start with /", "spec.resourceSelectors/selectors/0/name", "path must start with /"],
    ["cannot override metadata fields (finalizer)", "/metadata/finalizers", "cannot override metadata fields except annotations and labels"],
    ["invalid metadata field", "/metadata/annotationsabc", "cannot override metadata fields"],
    ["contains empty string", "/spec/clusterNames///member-1", "path cannot contain empty string"],
    ["metadata field", "/metadata", "cannot override field metadata"],
  ];
  cases.forEach(([label, path, want], i) =>
    it(`${want === null ? "accepts" : "refuses"} ${label}`, async () => {
      const name = `up-path-${i}`;
      const r = await call(
        "POST",
        `${FLEET}/clusterresourceoverrides`,
        cro(name, {
          policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path, value: "v" }] }] },
        }),
      );
      if (want === null) {
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        expect((await call("DELETE", `${FLEET}/clusterresourceoverrides/${name}`)).status).toBe(200);
      } else {
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(r.body.kind).toBe("Status");
        expect(r.body.message).toContain(want);
      }
    }),
  );

  it("nil jsonPatchOverrides of a JSONPatch rule: JSONPatchOverrides cannot be empty; an empty list: the CRD's minItems", async () => {
    const nil = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-empty-0", { policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] } }] } }),
    );
    expect(nil.status, JSON.stringify(nil.body)).toBe(422);
    expect(nil.body.message).toContain("JSONPatchOverrides cannot be empty");
    const empty = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-empty-1", { policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [] }] } }),
    );
    expect(empty.status, JSON.stringify(empty.body)).toBe(422);
    expect(empty.body.message).toContain("spec.policy.overrideRules[0].jsonPatchOverrides");
  });
});

describe("KubeFleet's cluster matching (overrider_test.go TestIsClusterMatched), over a placement's render subresource", () => {
  it("nil selector: no cluster; empty selector, empty terms, empty label selector: every cluster; terms ORed", async () => {
    await createCluster("up-match", { key1: "value1", key2: "value2" });
    const role = await call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "up-match", labels: { app: "up" } },
      rules: [],
    });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    const rules: [string, Record<string, unknown>, boolean][] = [
      ["nil-selector", {}, false],
      ["empty-selector", { clusterSelector: {} }, true],
      ["empty-terms", { clusterSelector: { clusterSelectorTerms: [] } }, true],
      ["empty-label-selector", { clusterSelector: { clusterSelectorTerms: [{ labelSelector: {} }] } }, true],
      ["matched-labels", { clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { key1: "value1" } } }] } }, true],
      [
        "multiple-terms",
        {
          clusterSelector: {
            clusterSelectorTerms: [{ labelSelector: { matchLabels: { key1: "value2" } } }, { labelSelector: { matchLabels: { key1: "value1" } } }],
          },
        },
        true,
      ],
      ["not-matched", { clusterSelector: { clusterSelectorTerms: [{ labelSelector: { matchLabels: { key1: "value2" } } }] } }, false],
    ];
    // A term without a label selector (matching no cluster in IsClusterMatched) never gets there: KubeFleet's validator refuses it.
    const nil = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-match", {
        policy: {
          overrideRules: [{ clusterSelector: { clusterSelectorTerms: [{}] }, jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/x", value: "y" }] }],
        },
      }),
    );
    expect(nil.status).toBe(422);
    expect(nil.body.message).toContain("labelSelector is required");
    const o = await call(
      "POST",
      `${FLEET}/clusterresourceoverrides`,
      cro("up-match", {
        policy: {
          overrideRules: rules.map(([label, rule]) => ({ ...rule, jsonPatchOverrides: [{ op: "add", path: `/metadata/labels/${label}`, value: "yes" }] })),
        },
      }),
    );
    expect(o.status, JSON.stringify(o.body)).toBe(201);
    const p = await call("POST", `${FLEET}/clusterresourceplacements`, {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourcePlacement",
      metadata: { name: "up-match" },
      spec: { resourceSelectors: [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "up-match" }] },
    });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    let r = await call("GET", `${FLEET}/clusterresourceplacements/up-match/render?cluster=up-match`);
    await vi.waitFor(
      async () => {
        r = await call("GET", `${FLEET}/clusterresourceplacements/up-match/render?cluster=up-match`);
        expect(r.body.clusterResourceOverrides).toEqual(["up-match-0"]);
      },
      { timeout: 8000, interval: 100 },
    );
    expect(r.body.error).toBeUndefined();
    const labels = r.body.objects[0].metadata.labels as Record<string, string>;
    for (const [label, , matched] of rules) expect([label, labels[label]]).toEqual([label, matched ? "yes" : undefined]);
  });
});

describe("Karmada's OverridePolicy mutating webhook (mutating_test.go) and ClusterOverridePolicy validating webhook (validating_test.go)", () => {
  it("Handle: a resource selector without a namespace gets the policy's", async () => {
    await createNamespaces("up-kop");
    const r = await call(
      "POST",
      OP("up-kop"),
      op("mutated", {
        resourceSelectors: [
          { apiVersion: "v1", kind: "ConfigMap", name: "a" },
          { apiVersion: "v1", kind: "ConfigMap", name: "b", namespace: "" },
        ],
        overrideRules: [{ overriders: { labelsOverrider: [{ operator: "add", value: { a: "b" } }] } }],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec.resourceSelectors.map((s: { namespace?: string }) => s.namespace)).toEqual(["up-kop", "up-kop"]);
  });

  it("Handle_ValidationClusterOverrideSpecFails_DeniesAdmission, Handle_ValidationSucceeds_AllowsAdmission", async () => {
    const cop = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: "policy.karmada.io/v1alpha1",
      kind: "ClusterOverridePolicy",
      metadata: { name },
      spec,
    });
    const bad = await call(
      "POST",
      `${PG}/clusteroverridepolicies`,
      cop("up-cop-bad", {
        resourceSelectors: [{ apiVersion: "test-apiversion", kind: "test" }],
        overrideRules: [
          {
            targetCluster: { clusterNames: ["member1"] },
            overriders: { annotationsOverrider: [{ operator: "add", value: { "testannotation~projectId": "c-m-lfx9lk92p-v86cf" } }] },
          },
        ],
      }),
    );
    expect(bad.status, JSON.stringify(bad.body)).toBe(422);
    expect(bad.body.message).toContain('Invalid value: "testannotation~projectId"');
    const good = await call(
      "POST",
      `${PG}/clusteroverridepolicies`,
      cop("up-cop-good", {
        resourceSelectors: [{ apiVersion: "test-apiversion", kind: "test" }],
        overrideRules: [
          {
            targetCluster: { clusterNames: ["member1"] },
            overriders: { annotationsOverrider: [{ operator: "add", value: { "testannotation/projectId": "c-m-lfx9lk92p-v86cf" } }] },
          },
        ],
      }),
    );
    expect(good.status, JSON.stringify(good.body)).toBe(201);
  });
});
