// KubeFleet's ClusterResourcePlacement and ResourcePlacement over the HTTP API: validation as
// KubeFleet's CRDs (CEL rules) and its validating webhook (pkg/utils/validator/placement_test.go's
// cases, with its messages), fields not built refused with 422 naming them, defaults, v1 and
// v1beta1 of one object, printer columns, and the controller's kinds read-only.
import { describe, expect, it } from "vitest";
import { call, createNamespaces, merge } from "./helpers.ts";
import { propertyNameError, propertyRequirementErrors, tolerationErrors } from "../../src/kinds/fleet-validation.ts";

const G = "/apis/placement.kubernetes-fleet.io";
const CRPS = `${G}/v1/clusterresourceplacements`;
const CRPS_BETA = `${G}/v1beta1/clusterresourceplacements`;
const RPS = (ns: string) => `${G}/v1/namespaces/${ns}/resourceplacements`;
const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" };

const NS_SELECTOR = { group: "", version: "v1", kind: "Namespace", name: "validation-app" };
let seq = 0;
const crp = (spec: Record<string, unknown>, name = `crp-v-${++seq}`) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1",
  kind: "ClusterResourcePlacement",
  metadata: { name },
  spec: { resourceSelectors: [NS_SELECTOR], ...spec },
});
const pickAll = (policy: Record<string, unknown>) => ({ policy: { placementType: "PickAll", ...policy } });
const pickN = (policy: Record<string, unknown>) => ({ policy: { placementType: "PickN", numberOfClusters: 1, ...policy } });
const pickFixed = (policy: Record<string, unknown>) => ({ policy: { placementType: "PickFixed", ...policy } });
const required = (term: Record<string, unknown>) => ({
  affinity: { clusterAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: [term] } } },
});
const preferred = (term: Record<string, unknown>, weight = 10) => ({
  affinity: { clusterAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight, preference: term }] } },
});
const rolling = (ru: Record<string, unknown>) => ({ strategy: { type: "RollingUpdate", rollingUpdate: ru } });
const property = (name: string, operator: string, values: string[]) => ({ propertySelector: { matchExpressions: [{ name, operator, values }] } });

/** [case, spec, expected message fragment (null: created)], after KubeFleet's validator tests. */
const CASES: [string, Record<string, unknown>, string | null][] = [
  ["valid CRP", {}, null],
  [
    "name and label selector",
    { resourceSelectors: [{ ...NS_SELECTOR, labelSelector: { matchLabels: { a: "b" } } }] },
    "the labelSelector and name fields are mutually exclusive in selector",
  ],
  ["invalid GVK", { resourceSelectors: [{ group: "apps", version: "v1", kind: "Nonsense", name: "x" }] }, "failed to get GVR of the selector"],
  [
    "not a cluster-scoped resource",
    { resourceSelectors: [{ group: "", version: "v1", kind: "Secret", name: "x" }] },
    "the resource is not found in schema (please retry) or it is not a cluster scoped resource: /v1, Kind=Secret",
  ],
  [
    "NamespaceWithResourceSelectors with namespaced resources",
    {
      resourceSelectors: [
        { ...NS_SELECTOR, selectionScope: "NamespaceWithResourceSelectors" },
        { group: "", version: "v1", kind: "Secret", name: "x" },
        { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "admin" },
      ],
    },
    null,
  ],
  [
    "NamespaceWithResourceSelectors by label",
    {
      resourceSelectors: [
        { group: "", version: "v1", kind: "Namespace", labelSelector: { matchLabels: { a: "b" } }, selectionScope: "NamespaceWithResourceSelectors" },
      ],
    },
    "namespace selector with NamespaceWithResourceSelectors mode must select by name (not by label)",
  ],
  [
    "NamespaceWithResourceSelectors with another namespace selector",
    {
      resourceSelectors: [
        { ...NS_SELECTOR, selectionScope: "NamespaceWithResourceSelectors" },
        { group: "", version: "v1", kind: "Namespace", name: "other" },
      ],
    },
    "when using NamespaceWithResourceSelectors mode, only one namespace selector is allowed",
  ],
  ["unsupported rollout strategy type", { strategy: { type: "random type" } }, "unsupported rollout strategy type `random type`"],
  ["negative unavailablePeriodSeconds", rolling({ unavailablePeriodSeconds: -10 }), "unavailablePeriodSeconds must be greater than or equal to 0, got -10"],
  ["maxUnavailable not a percentage", rolling({ maxUnavailable: "25" }), "maxUnavailable `25` is invalid"],
  ["negative maxUnavailable", rolling({ maxUnavailable: -10 }), "maxUnavailable must be greater than or equal to 0, got `-10`"],
  ["zero maxUnavailable", rolling({ maxUnavailable: 0 }), null],
  ["maxSurge not a percentage", rolling({ maxSurge: "25" }), "maxSurge `25` is invalid"],
  ["negative maxSurge", rolling({ maxSurge: -10 }), "maxSurge must be greater than or equal to 0, got `-10`"],
  [
    "serverSideApplyConfig without ServerSideApply",
    { strategy: { applyStrategy: { type: "ClientSideApply", serverSideApplyConfig: { force: true } } } },
    "serverSideApplyConfig is only valid for ServerSideApply strategy type",
  ],
  ["PickFixed with names", pickFixed({ clusterNames: ["a", "b"] }), null],
  ["PickFixed without names", pickFixed({}), null],
  ["PickFixed with repeated names", pickFixed({ clusterNames: ["a", "a"] }), "cluster names must be unique for policy type PickFixed"],
  [
    "PickFixed with an invalid name",
    pickFixed({ clusterNames: ["test@,cluster1"] }),
    "PickFixed cluster name test@,cluster1 is not a valid member name: a lowercase RFC 1123 subdomain",
  ],
  [
    "PickFixed with a long name",
    pickFixed({ clusterNames: ["this-is-a-very-long-cluster-name-that-exceeds-the-maximum-allowed-length-for-dns-labels"] }),
    "cannot have length exceeding 63",
  ],
  ["PickFixed with numberOfClusters", pickFixed({ numberOfClusters: 1 }), "number of clusters must be nil for policy type PickFixed"],
  ["PickFixed with affinity", pickFixed(required({ labelSelector: { matchLabels: { a: "b" } } })), "affinity must be nil for policy type PickFixed"],
  [
    "PickFixed with topology spread",
    pickFixed({ topologySpreadConstraints: [{ topologyKey: "zone" }] }),
    "topology spread constraints needs to be empty for policy type PickFixed",
  ],
  ["PickFixed with tolerations", pickFixed({ tolerations: [{ key: "k", operator: "Exists" }] }), "tolerations needs to be empty for policy type PickFixed"],
  ["PickAll with cluster names", pickAll({ clusterNames: ["a"] }), "cluster names needs to be empty for policy type PickAll"],
  ["PickAll with numberOfClusters", pickAll({ numberOfClusters: 2 }), "number of clusters must be nil for policy type PickAll"],
  [
    "PickAll with an invalid required label selector",
    pickAll(required({ labelSelector: { matchExpressions: [{ key: "a", operator: "In" }] } })),
    "for 'in', 'notin' operators, values set can't be empty",
  ],
  [
    "PickAll with preferred terms",
    pickAll(preferred({ labelSelector: { matchLabels: { a: "b" } } })),
    "PreferredDuringSchedulingIgnoredDuringExecution will be ignored for placement policy type PickAll",
  ],
  [
    "PickAll with topology spread",
    pickAll({ topologySpreadConstraints: [{ topologyKey: "zone" }] }),
    "topology spread constraints needs to be empty for policy type PickAll",
  ],
  [
    "PickAll with a toleration Exists and a value",
    pickAll({ tolerations: [{ key: "k", operator: "Exists", value: "v" }] }),
    "toleration value needs to be empty, when operator is Exists",
  ],
  ["PickAll with a property selector", pickAll(required(property("resources.kubernetes-fleet.io/allocatable-cpu", "Gt", ["2"]))), null],
  [
    "PickAll with two values for Eq",
    pickAll(required(property("kubernetes-fleet.io/node-count", "Eq", ["1", "2"]))),
    "operator Eq requires exactly one value, got 2",
  ],
  [
    "PickAll with an invalid capacity type",
    pickAll(required(property("resources.kubernetes-fleet.io/node-count", "Gt", ["1"]))),
    "invalid capacity type in resource property name resources.kubernetes-fleet.io/node-count, supported values are [allocatable available total]",
  ],
  [
    "PickAll with a resource property name without a capacity type",
    pickAll(required(property("resources.kubernetes-fleet.io/totalcpu", "Gt", ["1"]))),
    "invalid resource property name resources.kubernetes-fleet.io/totalcpu, expected format is [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]",
  ],
  [
    "PickAll with contradicting requirements",
    pickAll(
      required({
        propertySelector: {
          matchExpressions: [
            { name: "p", operator: "Gt", values: ["10"] },
            { name: "p", operator: "Lt", values: ["5"] },
          ],
        },
      }),
    ),
    "exclude all values",
  ],
  ["PickN with cluster names", pickN({ clusterNames: ["a"] }), "cluster names needs to be empty for policy type PickN"],
  ["PickN without numberOfClusters", { policy: { placementType: "PickN" } }, "number of cluster cannot be nil for policy type PickN"],
  ["PickN with a negative numberOfClusters", pickN({ numberOfClusters: -1 }), "number of clusters cannot be -1 for policy type PickN"],
  [
    "PickN with a property sorter in a required term",
    pickN(required({ propertySorter: { name: "kubernetes-fleet.io/node-count", sortOrder: "Ascending" } })),
    "PropertySorter is not allowed for RequiredDuringSchedulingIgnoredDuringExecution affinity",
  ],
  [
    "PickN with a property selector in a preferred term",
    pickN(preferred(property("kubernetes-fleet.io/node-count", "Gt", ["1"]))),
    "PropertySelector is not allowed for PreferredDuringSchedulingIgnoredDuringExecution affinity",
  ],
  [
    "PickN with an invalid sort order",
    pickN(preferred({ propertySorter: { name: "kubernetes-fleet.io/node-count", sortOrder: "random-order" } })),
    "invalid property sort order random-order",
  ],
  [
    "PickN with an unknown unsatisfiable type",
    pickN({ topologySpreadConstraints: [{ topologyKey: "zone", whenUnsatisfiable: "random-type" }] }),
    "unknown unsatisfiable type random-type",
  ],
  [
    "PickN with affinity and topology spread",
    pickN({ ...preferred({ labelSelector: { matchLabels: { a: "b" } } }), topologySpreadConstraints: [{ topologyKey: "zone", maxSkew: 1 }] }),
    null,
  ],
  [
    "PickN with a toleration without key (Equal)",
    pickN({ tolerations: [{ operator: "Equal", value: "v" }] }),
    "toleration key cannot be empty, when operator is Equal",
  ],
  [
    "PickN with repeated tolerations",
    pickN({
      tolerations: [
        { key: "k", operator: "Exists" },
        { key: "k", operator: "Exists" },
      ],
    }),
    "tolerations must be unique",
  ],
  [
    "PickN with an invalid property name prefix",
    pickN(required(property("St@ndard_D8s_v3/node-count", "Gt", ["1"]))),
    "property name first segment St@ndard_D8s_v3 is not valid",
  ],
  ["PickN with an invalid property name segment", pickN(required(property("example.com/$", "Gt", ["1"]))), "property name segment $ is not valid"],
  ["a name longer than 63", { __name: "x".repeat(64) }, "the name field cannot have length exceeding 63"],
];

describe("ClusterResourcePlacement validation (KubeFleet's validator cases)", () => {
  for (const [name, spec, want] of CASES) {
    it(name, async () => {
      const { __name, ...rest } = spec as { __name?: string };
      const r = await call("POST", CRPS, crp(rest, __name));
      if (want === null) {
        expect(r.status, JSON.stringify(r.body)).toBe(201);
      } else {
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(r.body.reason).toBe("Invalid");
        expect(r.body.message).toContain(want);
      }
    });
  }

  it("refuses fields not built with 422 naming them, storing nothing", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ strategy: { applyStrategy: { type: "ReportDiff" } } }, "spec.strategy.applyStrategy.type"],
      [{ statusReportingScope: "NamespaceAccessible", resourceSelectors: [NS_SELECTOR] }, "spec.statusReportingScope"],
    ];
    for (const [spec, field] of cases) {
      const body = crp(spec, "not-built");
      const r = await call("POST", CRPS, body);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
      expect((await call("GET", `${CRPS}/not-built`)).status).toBe(404);
    }
    const mirror = await call("POST", CRPS_BETA, {
      ...crp({ strategy: { reportBackStrategy: { type: "Mirror", destination: "WorkAPI" } } }, "not-built"),
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
    });
    expect(mirror.status).toBe(422);
    expect(mirror.body.details.causes.map((c: { field: string }) => c.field)).toContain("spec.strategy.reportBackStrategy.type");
  });

  it("sets KubeFleet's defaults (its mutating webhook)", async () => {
    const r = await call("POST", CRPS, crp({}, "defaults"));
    expect(r.status).toBe(201);
    expect(r.body.spec.policy).toEqual({ placementType: "PickAll" });
    expect(r.body.spec.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%", unavailablePeriodSeconds: 60 },
      applyStrategy: { type: "ClientSideApply", comparisonOption: "PartialComparison", whenToApply: "Always", whenToTakeOver: "Always" },
    });
    expect(r.body.spec.revisionHistoryLimit).toBe(10);
  });

  it("keeps the placement type and the tolerations (only additions) on update", async () => {
    const created = await call("POST", CRPS, crp(pickN({ tolerations: [{ key: "k", operator: "Exists" }] }), "immutable"));
    expect(created.status).toBe(201);
    const type = await call("PATCH", `${CRPS}/immutable`, { spec: { policy: { placementType: "PickAll", numberOfClusters: null, tolerations: null } } }, merge);
    expect(type.status).toBe(422);
    expect(type.body.message).toContain("placement type is immutable");
    const removed = await call("PATCH", `${CRPS}/immutable`, { spec: { policy: { tolerations: [{ key: "other", operator: "Exists" }] } } }, merge);
    expect(removed.status).toBe(422);
    expect(removed.body.message).toContain("tolerations have been updated/deleted, only additions to tolerations are allowed");
    const added = await call(
      "PATCH",
      `${CRPS}/immutable`,
      {
        spec: {
          policy: {
            tolerations: [
              { key: "k", operator: "Exists" },
              { key: "other", operator: "Exists" },
            ],
          },
        },
      },
      merge,
    );
    expect(added.status, JSON.stringify(added.body)).toBe(200);
  });

  it("serves one object in v1 and v1beta1; v1 has no deleteStrategy", async () => {
    const beta = await call("POST", CRPS_BETA, {
      ...crp({ strategy: { deleteStrategy: { propagationPolicy: "Abandon" } } }, "versions"),
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
    });
    expect(beta.status, JSON.stringify(beta.body)).toBe(201);
    expect(beta.body.spec.strategy.deleteStrategy).toEqual({ propagationPolicy: "Abandon" });
    const v1 = await call("GET", `${CRPS}/versions`);
    expect(v1.status).toBe(200);
    expect(v1.body.apiVersion).toBe("placement.kubernetes-fleet.io/v1");
    expect(v1.body.spec.strategy.deleteStrategy).toBeUndefined();
    const refused = await call("POST", CRPS, crp({ strategy: { deleteStrategy: { propagationPolicy: "Delete" } } }, "versions-v1"));
    // Flotilla's fieldValidation default is Strict: an unknown field is 400.
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain("deleteStrategy");
  });

  it("prints KubeFleet's columns", async () => {
    expect((await call("POST", CRPS, crp({}, "columns"))).status).toBe(201);
    const table = await call("GET", CRPS, undefined, { headers: TABLE });
    expect(table.status).toBe(200);
    const names = table.body.columnDefinitions.map((c: { name: string }) => c.name);
    expect(names).toEqual([
      "Name",
      "Gen",
      "Type",
      "Scheduled",
      "Scheduled-Gen",
      "Work-Synchronized",
      "Work-Synchronized-Gen",
      "Available",
      "Available-Gen",
      "Age",
    ]);
  });

  it("serves the short names and discovery of the group", async () => {
    const r = await call("GET", `${G}/v1`);
    expect(r.status).toBe(200);
    const byName = Object.fromEntries(r.body.resources.map((x: { name: string }) => [x.name, x]));
    expect(byName.clusterresourceplacements.shortNames).toEqual(["crp"]);
    expect(byName.clusterresourceplacements.namespaced).toBe(false);
    expect(byName.resourceplacements.namespaced).toBe(true);
    expect(byName.clusterresourcesnapshots.verbs).toEqual(["get", "list", "watch"]);
    expect(byName["clusterresourceplacements/status"]).toBeDefined();
  });

  it("keeps the controller's kinds read-only to users", async () => {
    const r = await call("POST", `${G}/v1beta1/clusterresourcesnapshots`, {
      apiVersion: "placement.kubernetes-fleet.io/v1beta1",
      kind: "ClusterResourceSnapshot",
      metadata: { name: "forged" },
      spec: { selectedResources: [] },
    });
    expect(r.status).toBe(405);
  });
});

describe("ResourcePlacement validation", () => {
  it("selects namespaced kinds only, in its namespace", async () => {
    await createNamespaces("rp-validation");
    const rp = (name: string, selectors: unknown[]) => ({
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourcePlacement",
      metadata: { name },
      spec: { resourceSelectors: selectors },
    });
    const ok = await call(
      "POST",
      RPS("rp-validation"),
      rp("secrets", [{ group: "", version: "v1", kind: "Secret", labelSelector: { matchLabels: { app: "x" } } }]),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const bad = await call(
      "POST",
      RPS("rp-validation"),
      rp("roles", [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "admin" }]),
    );
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain("the resource is not found in schema (please retry) or it is a cluster scoped resource");
    const strategy = await call("POST", RPS("rp-validation"), {
      ...rp("strategy", [{ group: "", version: "v1", kind: "Secret" }]),
      spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Secret" }], strategy: { rollingUpdate: { maxUnavailable: -1 } } },
    });
    expect(strategy.status).toBe(422);
    expect(strategy.body.message).toContain("maxUnavailable must be greater than or equal to 0");
  });
});

describe("KubeFleet's property and toleration rules (pure)", () => {
  const req = (operator: string, value: string) => ({ name: "p", operator, values: [value] });
  it("validates operators and values (TestValidateOperatorAndValues)", () => {
    const cases: [string, string[], boolean][] = [
      ["Eq", ["5"], false],
      ["Gt", ["100Mi"], false],
      ["Le", ["2.5"], false],
      ["In", ["5"], true],
      ["Eq", [], true],
      ["Eq", ["5", "10"], true],
      ["Lt", ["five"], true],
    ];
    for (const [operator, values, wantErr] of cases) {
      const errs = propertyRequirementErrors([{ name: "kubernetes-fleet.io/node-count", operator, values }]);
      expect(errs.length > 0, `${operator} ${JSON.stringify(values)}`).toBe(wantErr);
    }
  });
  it("finds contradicting requirements on one property (TestValidateRequirementsConsistency)", () => {
    const cases: [string, ReturnType<typeof req>[], string | null][] = [
      ["two compatible Eq", [req("Eq", "5"), req("Eq", "5")], null],
      ["Eq + Ne different", [req("Eq", "5"), req("Ne", "10")], null],
      ["Gt + Lt non-empty", [req("Gt", "5"), req("Lt", "10")], null],
      ["Ge x + Le x", [req("Ge", "10"), req("Le", "10")], null],
      ["Eq inside bounds", [req("Ge", "5"), req("Eq", "7"), req("Le", "10")], null],
      ["units", [req("Ge", "100Mi"), req("Lt", "1Gi")], null],
      ["two Eq", [req("Eq", "5"), req("Eq", "10")], "conflicting Eq values"],
      ["Eq + Ne same", [req("Eq", "5"), req("Ne", "5")], "conflicting Eq and Ne"],
      ["Gt 10 + Lt 5", [req("Gt", "10"), req("Lt", "5")], "exclude all values"],
      ["Gt x + Lt x", [req("Gt", "10"), req("Lt", "10")], "exclude all values"],
      ["Gt x + Le x", [req("Gt", "10"), req("Le", "10")], "exclude all values"],
      ["Ge x + Lt x", [req("Ge", "10"), req("Lt", "10")], "exclude all values"],
      ["Eq below lower", [req("Ge", "10"), req("Eq", "5")], "violates lower bound"],
      ["Eq above upper", [req("Le", "10"), req("Eq", "20")], "violates upper bound"],
      ["Eq at strict lower", [req("Gt", "10"), req("Eq", "10")], "violates lower bound"],
    ];
    for (const [name, reqs, want] of cases) {
      const errs = propertyRequirementErrors(reqs);
      if (want === null) expect(errs, name).toEqual([]);
      else expect(errs.join("; "), name).toContain(want);
    }
  });
  it("validates tolerations (TestValidateTolerations)", () => {
    expect(
      tolerationErrors([
        { key: "k", operator: "Equal", value: "v" },
        { key: "k2", operator: "Exists" },
      ]),
    ).toEqual([]);
    expect(tolerationErrors([{ key: "k", operator: "Equal" }])).toEqual([]);
    expect(tolerationErrors([{ operator: "Equal", value: "v" }]).join()).toContain("toleration key cannot be empty, when operator is Equal");
    expect(tolerationErrors([{ key: "key@", operator: "Equal" }]).join()).toContain(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
    expect(tolerationErrors([{ key: "k", operator: "Equal", value: "val@" }]).join()).toContain(
      "a valid label must be an empty string or consist of alphanumeric characters",
    );
    expect(tolerationErrors([{ key: "key@", operator: "Exists" }]).join()).toContain("name part must consist of alphanumeric characters");
    expect(tolerationErrors([{ key: "k", operator: "Exists", value: "v" }]).join()).toContain("toleration value needs to be empty, when operator is Exists");
    expect(
      tolerationErrors([
        { key: "k", operator: "Exists" },
        { key: "k", operator: "Exists" },
      ]).join(),
    ).toContain("tolerations must be unique");
  });
  it("validates property names (validateName)", () => {
    expect(propertyNameError("kubernetes-fleet.io/node-count")).toBeNull();
    expect(propertyNameError("resources.kubernetes-fleet.io/allocatable-cpu")).toBeNull();
    expect(propertyNameError("a/b/c")).toBeNull();
    expect(propertyNameError("resources.kubernetes-fleet.io/total-nospecialchars%^=@")).toContain(
      "property name resources.kubernetes-fleet.io/total-nospecialchars%^=@ is not valid",
    );
    expect(propertyNameError("St@ndard_D8s_v3/x")).toContain("property name first segment St@ndard_D8s_v3 is not valid");
  });
});
