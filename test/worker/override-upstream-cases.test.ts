// Cases of KubeFleet's and Karmada's own unit tests not yet covered elsewhere, driven over the
// HTTP API in workerd (docs/overrides.md): kubefleet-dev/kubefleet
// pkg/utils/validator/clusterresourceoverride_test.go ("multiple invalid override paths, 1 valid",
// "policy with multiple rules"), karmada-io/karmada pkg/webhook/overridepolicy/validating_test.go
// (the denial messages of Handle_*), and every field Karmada's policies carry that Flotilla does not
// build refused by name rather than accepted and ignored.
import { describe, expect, it } from "vitest";
import { call, createNamespaces } from "./helpers.ts";

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
