// KubeFleet's own validator and validating-webhook unit tests, case by case, driven over HTTP:
// kubefleet-dev/kubefleet pkg/utils/validator/placement_test.go and
// pkg/webhook/{clusterresourceplacement,resourceplacement}/v1beta1_*_validating_webhook_test.go.
// Each case names its upstream test and case; a refused object is a 422 Invalid naming the field
// and KubeFleet's message, and leaves nothing stored.
import { describe, expect, it } from "vitest";
import { call, createNamespaces, merge } from "./helpers.ts";
import type { KindDefinition } from "../../src/k8s/kind.ts";
import type { KubeObject } from "../../src/k8s/meta.ts";
import { validatePlacement } from "../../src/kinds/fleet-validation.ts";

const G = "/apis/placement.kubernetes-fleet.io/v1beta1";
const CRPS = `${G}/clusterresourceplacements`;
const RP_NS = "validator-cases";
const RPS = `${G}/namespaces/${RP_NS}/resourceplacements`;

/** placement_test.go's `resourceSelector`. */
const CLUSTER_ROLE = { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", name: "test-cluster-role" };
/** The resourceplacement webhook test's `resourceSelector`. */
const DEPLOYMENT = { group: "apps", version: "v1", kind: "Deployment", name: "test-deployment" };

let seq = 0;
const crp = (spec: Record<string, unknown>, name = `vc-${++seq}`) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1beta1",
  kind: "ClusterResourcePlacement",
  metadata: { name },
  spec: { resourceSelectors: [CLUSTER_ROLE], ...spec },
});
const rp = (spec: Record<string, unknown>, name = `vc-rp-${++seq}`) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1beta1",
  kind: "ResourcePlacement",
  metadata: { name, namespace: RP_NS },
  spec: { resourceSelectors: [DEPLOYMENT], ...spec },
});

type Policy = Record<string, unknown>;
const labels = (m: Record<string, string>) => ({ labelSelector: { matchLabels: m } });
const inWithoutValues = { labelSelector: { matchExpressions: [{ key: "test-key", operator: "In" }] } };
const required = (...terms: Record<string, unknown>[]) => ({ requiredDuringSchedulingIgnoredDuringExecution: { clusterSelectorTerms: terms } });
const preferred = (...terms: Record<string, unknown>[]) => ({
  preferredDuringSchedulingIgnoredDuringExecution: terms.map((preference) => ({ weight: 0, preference })),
});
const affinity = (...parts: Record<string, unknown>[]) => ({ affinity: { clusterAffinity: Object.assign({}, ...parts) } });
const props = (...reqs: [string, string, string[]][]) => ({
  propertySelector: { matchExpressions: reqs.map(([name, operator, values]) => ({ name, operator, values })) },
});
const requiredProps = (...reqs: [string, string, string[]][]) => affinity(required({ ...labels({ "test-key1": "test-value1" }), ...props(...reqs) }));
const pickN = (p: Policy = {}) => ({ placementType: "PickN", numberOfClusters: 1, ...p });
const T1 = { key: "key1", operator: "Equal", value: "value1", effect: "NoSchedule" };
const T2 = { key: "key2", operator: "Exists", effect: "NoSchedule" };

/** Expects a 422 Invalid whose message carries `message` and whose causes name `field`, and nothing stored at `path`. */
async function expectRefused(r: Awaited<ReturnType<typeof call>>, message: string, field: string, path?: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(422);
  expect(r.body.kind).toBe("Status");
  expect(r.body.reason).toBe("Invalid");
  expect(r.body.message).toContain(message);
  expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
  if (path) expect((await call("GET", path)).status).toBe(404);
}

/** [upstream case, spec, null (created) or [message, field]] for a ClusterResourcePlacement's create. */
type Case = [string, Record<string, unknown>, [string, string] | null];

async function runCreate(path: string, body: { metadata: { name: string } }, want: [string, string] | null) {
  const r = await call("POST", path, body);
  if (want === null) {
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return;
  }
  await expectRefused(r, want[0], want[1], `${path}/${body.metadata.name}`);
}

describe("TestValidateClusterResourcePlacement (placement_test.go)", () => {
  const cases: Case[] = [
    ["valid CRP", { strategy: { type: "RollingUpdate" } }, null],
    [
      "invalid Resource Selector with name & label selector",
      { resourceSelectors: [{ ...CLUSTER_ROLE, labelSelector: { matchLabels: { "test-key": "test-value" } } }] },
      [
        "the labelSelector and name fields are mutually exclusive in selector {Group:rbac.authorization.k8s.io Version:v1 Kind:ClusterRole Name:test-cluster-role LabelSelector:&LabelSelector{MatchLabels:map[string]string{test-key: test-value,},MatchExpressions:[]LabelSelectorRequirement{},} SelectionScope:NamespaceWithResources}",
        "spec.resourceSelectors[0]",
      ],
    ],
    [
      "invalid Resource Selector with invalid GVK",
      { resourceSelectors: [{ group: "rbac.authorization.k8s.io", version: "v1", kind: "invalidKind", name: "test-invalidKind" }] },
      ["failed to get GVR of the selector", "spec.resourceSelectors[0]"],
    ],
    [
      "invalid Resource Selector with not ClusterScopedResource",
      { resourceSelectors: [DEPLOYMENT] },
      ["resource is not found in schema (please retry) or it is not a cluster scoped resource", "spec.resourceSelectors[0]"],
    ],
    [
      "CRP with namespaced resource should fail",
      { resourceSelectors: [DEPLOYMENT] },
      ["resource is not found in schema (please retry) or it is not a cluster scoped resource: apps/v1, Kind=Deployment", "spec.resourceSelectors[0]"],
    ],
    [
      "valid CRP with NamespaceWithResourceSelectors and namespaced resources",
      {
        resourceSelectors: [
          { group: "", version: "v1", kind: "Namespace", name: "test-namespace", selectionScope: "NamespaceWithResourceSelectors" },
          DEPLOYMENT,
          { group: "", version: "v1", kind: "ConfigMap", labelSelector: { matchLabels: { app: "test" } } },
        ],
      },
      null,
    ],
    [
      "valid CRP with NamespaceWithResourceSelectors and cluster-scoped resources",
      {
        resourceSelectors: [
          { group: "", version: "v1", kind: "Namespace", name: "test-namespace", selectionScope: "NamespaceWithResourceSelectors" },
          CLUSTER_ROLE,
        ],
      },
      null,
    ],
  ];
  for (const [name, spec, want] of cases) it(name, () => runCreate(CRPS, crp(spec), want));

  it("CRP with invalid name", async () => {
    // Upstream's name also has capitals: the name's own rule refuses it too, and both say why.
    const body = crp({ strategy: { type: "RollingUpdate" } }, "test-crp-with-very-long-name-field-exceeding-DNS1035LabelMaxLength");
    await runCreate(CRPS, body, ["the name field cannot have length exceeding 63", "metadata.name"]);
    const lower = crp({}, "test-crp-with-very-long-name-field-exceeding-dns1035-label-max-length");
    await runCreate(CRPS, lower, ["metadata.name: the name field cannot have length exceeding 63", "metadata.name"]);
  });
});

describe("TestValidateClusterResourcePlacement_RolloutStrategy (placement_test.go)", () => {
  const cases: Case[] = [
    ["empty rollout strategy", {}, null],
    ["valid rollout strategy - External", { type: "External" }, null],
    [
      "invalid rollout strategy - External strategy with rollingUpdate config",
      { type: "External", rollingUpdate: { unavailablePeriodSeconds: -10 } },
      ["rollingUpdateConifg is not valid for ExternalRollout strategy type", "spec.strategy"],
    ],
    ["invalid rollout strategy", { type: "random type" }, ["unsupported rollout strategy type `random type`", "spec.strategy"]],
    [
      "invalid rollout strategy - UnavailablePeriodSeconds",
      { type: "RollingUpdate", rollingUpdate: { unavailablePeriodSeconds: -10 } },
      ["unavailablePeriodSeconds must be greater than or equal to 0, got -10", "spec.strategy"],
    ],
    [
      "invalid rollout strategy - % error MaxUnavailable",
      { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25" } },
      ["maxUnavailable `25` is invalid", "spec.strategy"],
    ],
    [
      "invalid rollout strategy - negative MaxUnavailable",
      { type: "RollingUpdate", rollingUpdate: { maxUnavailable: -10 } },
      ["maxUnavailable must be greater than or equal to 0, got `-10`", "spec.strategy"],
    ],
    ["valid rollout strategy - zero MaxUnavailable", { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0 } }, null],
    [
      "invalid rollout strategy - % error MaxSurge",
      { type: "RollingUpdate", rollingUpdate: { maxSurge: "25" } },
      ["maxSurge `25` is invalid", "spec.strategy"],
    ],
    [
      "invalid rollout strategy - negative MaxSurge",
      { type: "RollingUpdate", rollingUpdate: { maxSurge: -10 } },
      ["maxSurge must be greater than or equal to 0, got `-10`", "spec.strategy"],
    ],
    [
      "invalid rollout strategy - ServerSideApplyConfig not valid when type is not serversideApply",
      { type: "RollingUpdate", applyStrategy: { type: "ClientSideApply", serverSideApplyConfig: { force: false } } },
      ["serverSideApplyConfig is only valid for ServerSideApply strategy type", "spec.strategy"],
    ],
  ];
  for (const [name, strategy, want] of cases) it(name, () => runCreate(CRPS, crp({ strategy }), want));

  it("the CRD defaults every resource selector's selectionScope to NamespaceWithResources", async () => {
    const r = await call(
      "POST",
      CRPS,
      crp({ resourceSelectors: [CLUSTER_ROLE, { group: "", version: "v1", kind: "Namespace", name: "n", selectionScope: "NamespaceOnly" }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec.resourceSelectors.map((s: { selectionScope?: string }) => s.selectionScope)).toEqual(["NamespaceWithResources", "NamespaceOnly"]);
  });

  it("valid rollout strategy - External: KubeFleet's defaulter adds no rollingUpdate to it", async () => {
    const r = await call("POST", CRPS, crp({ strategy: { type: "External" } }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec.strategy.rollingUpdate).toBeUndefined();
  });
});

const policyCases = (cases: [string, Policy, [string, string] | null][]) => {
  for (const [name, policy, want] of cases) it(name, () => runCreate(CRPS, crp({ policy }), want));
};

describe("TestValidateClusterResourcePlacement_PickFixedPlacementPolicy (placement_test.go)", () => {
  const fixed = (p: Policy = {}) => ({ placementType: "PickFixed", ...p });
  policyCases([
    ["valid placement policy - PickFixed with non-empty cluster names", fixed({ clusterNames: ["test-cluster"] }), null],
    ["valid placement policy - PickFixed with empty cluster names", fixed(), null],
    [
      "invalid placement policy - PickFixed with non-unique cluster names",
      fixed({ clusterNames: ["test-cluster1", "test-cluster1", "test-cluster2", "test-cluster2"] }),
      ["cluster names must be unique for policy type PickFixed", "spec.policy"],
    ],
    [
      "invalid placement policy - PickFixed with invalid cluster names",
      fixed({ clusterNames: ["test@,cluster1"] }),
      [
        "PickFixed cluster name test@,cluster1 is not a valid member name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "spec.policy",
      ],
    ],
    [
      "invalid placement policy - PickFixed with too long cluster name",
      fixed({ clusterNames: ["this-is-a-very-long-cluster-name-that-exceeds-the-maximum-allowed-length-for-dns-labels"] }),
      [
        "PickFixed cluster name this-is-a-very-long-cluster-name-that-exceeds-the-maximum-allowed-length-for-dns-labels cannot have length exceeding 63",
        "spec.policy",
      ],
    ],
    [
      "invalid placement policy - PickFixed with non nil number of clusters",
      fixed({ clusterNames: ["test-cluster"], numberOfClusters: 1 }),
      ["number of clusters must be nil for policy type PickFixed, only valid for PickN placement policy type", "spec.policy"],
    ],
    [
      "invalid placement policy - PickFixed with non nil affinity",
      fixed({ clusterNames: ["test-cluster"], ...affinity(required(labels({ "test-key": "test-value" }))) }),
      ["affinity must be nil for policy type PickFixed, only valid for PickAll/PickN placement policy types", "spec.policy"],
    ],
    [
      "invalid placement policy - PickFixed with non empty topology constraints",
      fixed({ clusterNames: ["test-cluster"], topologySpreadConstraints: [{ topologyKey: "test-key" }] }),
      ["topology spread constraints needs to be empty for policy type PickFixed, only valid for PickN policy type", "spec.policy"],
    ],
    ["valid placement policy, PickFixed placementType, empty toleration, nil error", fixed({ clusterNames: ["test-cluster"] }), null],
    [
      "invalid placement policy - PickFixed placementType, non empty valid tolerations, error",
      fixed({ tolerations: [T1, T2, { operator: "Exists" }] }),
      ["tolerations needs to be empty for policy type PickFixed, only valid for PickAll/PickN", "spec.policy"],
    ],
  ]);
});

describe("TestValidateClusterResourcePlacement_PickAllPlacementPolicy (placement_test.go)", () => {
  const all = (p: Policy = {}) => ({ placementType: "PickAll", ...p });
  policyCases([
    [
      "invalid placement policy - PickAll with non-empty cluster names",
      all({ clusterNames: ["test-cluster"] }),
      ["cluster names needs to be empty for policy type PickAll, only valid for PickFixed policy type", "spec.policy"],
    ],
    [
      "invalid placement policy - PickAll with non nil number of clusters",
      all({ numberOfClusters: 1 }),
      ["number of clusters must be nil for policy type PickAll, only valid for PickN placement policy type", "spec.policy"],
    ],
    [
      "invalid placement policy - PickAll with invalid label selector terms in RequiredDuringSchedulingIgnoredDuringExecution in affinity",
      all(affinity(required(inWithoutValues))),
      [
        "the labelSelector in cluster selector &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:test-key,Operator:In,Values:[],},},} is invalid: values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        "spec.policy",
      ],
    ],
    [
      "invalid placement policy - PickAll with non empty PreferredDuringSchedulingIgnoredDuringExecution",
      all({
        affinity: { clusterAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: labels({ "test-key": "test-value" }) }] } },
      }),
      ["PreferredDuringSchedulingIgnoredDuringExecution will be ignored for placement policy type PickAll", "spec.policy"],
    ],
    [
      "invalid placement policy - PickAll with non empty topology constraints",
      all({ topologySpreadConstraints: [{ topologyKey: "test-key" }] }),
      ["topology spread constraints needs to be empty for policy type PickAll, only valid for PickN policy type", "spec.policy"],
    ],
    ["valid placement policy - PickAll with non nil affinity", all(affinity(required(labels({ "test-key": "test-value" })))), null],
    ["valid placement policy - PickAll placementType, empty tolerations, nil error", all(), null],
    [
      "invalid placement policy - PickAll placementType, non empty invalid tolerations, error",
      all({ tolerations: [{ key: "key1", operator: "Exists", value: "value1", effect: "NoSchedule" }] }),
      ["toleration value needs to be empty, when operator is Exists", "spec.policy"],
    ],
    [
      "valid placement policy - PickAll with property selector in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      all(requiredProps(["version", "Ge", ["1"]], ["cpu", "Gt", ["500m"]])),
      null,
    ],
    [
      "invalid placement policy - PickAll with invalid property selector in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      all(requiredProps(["version", "Eq", ["1", "2"]])),
      ["operator Eq requires exactly one value, got 2", "spec.policy"],
    ],
    [
      "invalid placement policy - PickAll with invalid property selector name, invalid capacity type",
      all(requiredProps(["resources.kubernetes-fleet.io/node-count", "Eq", ["2"]])),
      [
        "invalid capacity type in resource property name resources.kubernetes-fleet.io/node-count, supported values are [allocatable available total]",
        "spec.policy",
      ],
    ],
    [
      "invalid placement policy - PickAll with invalid property selector name, no segments",
      all(requiredProps(["resources.kubernetes-fleet.io/totalcpu", "Eq", ["2"]])),
      ["invalid resource property name resources.kubernetes-fleet.io/totalcpu, expected format is [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]", "spec.policy"],
    ],
    [
      "valid placement policy - PickAll with valid property selector name",
      all(requiredProps(["resources.kubernetes-fleet.io/allocatable-memory", "Eq", ["2"]])),
      null,
    ],
  ]);
});

describe("TestValidateClusterResourcePlacement_PickNPlacementPolicy (placement_test.go)", () => {
  const L1 = labels({ "test-key1": "test-value1" });
  policyCases([
    [
      "invalid placement policy - PickN with non-empty cluster names",
      pickN({ clusterNames: ["test-cluster"] }),
      ["cluster names needs to be empty for policy type PickN, only valid for PickFixed policy type", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with nil number of clusters",
      { placementType: "PickN" },
      ["number of cluster cannot be nil for policy type PickN", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with negative number of clusters",
      pickN({ numberOfClusters: -1 }),
      ["number of clusters cannot be -1 for policy type PickN", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid label selector terms in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(affinity(required(inWithoutValues))),
      ["for 'in', 'notin' operators, values set can't be empty", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with non-nil property sorter in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(affinity(required({ ...L1, propertySorter: { name: "Name", sortOrder: "Descending" } }))),
      ["PropertySorter is not allowed for RequiredDuringSchedulingIgnoredDuringExecution affinity", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid property selector in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(requiredProps(["version", "Eq", ["1", "2"]])),
      ["operator Eq requires exactly one value, got 2", "spec.policy"],
    ],
    [
      "valid placement policy - PickN with property selector in RequiredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(requiredProps(["version", "Ge", ["1"]], ["cpu", "Gt", ["500m"]])),
      null,
    ],
    [
      "invalid placement policy - PickN with invalid label selector terms in PreferredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(affinity(preferred(inWithoutValues))),
      [
        "the labelSelector in preferred cluster selector &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:test-key,Operator:In,Values:[],},},} is invalid: values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        "spec.policy",
      ],
    ],
    [
      "invalid placement policy - PickN with non-nil property selector in PreferredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(affinity(preferred({ ...L1, ...props(["version", "Eq", ["1"]]) }))),
      ["PropertySelector is not allowed for PreferredDuringSchedulingIgnoredDuringExecution affinity", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid property sorter in PreferredDuringSchedulingIgnoredDuringExecution affinity",
      pickN(affinity(preferred({ ...L1, propertySorter: { name: "resources.kubernetes-fleet.io/total-cpu", sortOrder: "random-order" } }))),
      ["invalid property sort order random-order", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid topology constraint with unknown unsatisfiable type",
      pickN({ topologySpreadConstraints: [{ topologyKey: "test-key", whenUnsatisfiable: "random-type" }] }),
      ["unknown unsatisfiable type random-type", "spec.policy"],
    ],
    [
      "valid placement policy - PickN with non nil affinity, non empty topology constraints",
      pickN({
        ...affinity(required(L1), preferred(labels({ "test-key2": "test-value2" }))),
        topologySpreadConstraints: [{ topologyKey: "test-key", whenUnsatisfiable: "DoNotSchedule" }],
      }),
      null,
    ],
    ["valid placement policy - PickN placementType, empty tolerations, nil error", pickN(), null],
    [
      // Upstream's policy here is PickAll with numberOfClusters (both refused).
      "invalid placement policy - PickN placementType, non empty invalid tolerations, error",
      { placementType: "PickAll", numberOfClusters: 1, tolerations: [{ operator: "Equal", value: "value1", effect: "NoSchedule" }] },
      ["toleration key cannot be empty, when operator is Equal", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid property selector name, invalid label name",
      pickN(requiredProps(["resources.kubernetes-fleet.io/total-nospecialchars%^=@", "Eq", ["2"]])),
      ["property name resources.kubernetes-fleet.io/total-nospecialchars%^=@ is not valid", "spec.policy"],
    ],
    [
      "valid placement policy - PickN with valid property selector name (non-resource, single segment)",
      pickN(requiredProps(["k8s-minor-version", "Eq", ["28"]])),
      null,
    ],
    [
      "valid placement policy - PickN with valid property selector name (non-resource, multiple segments)",
      pickN(requiredProps(["kubernetes.azure.com/vm-sizes/Standard_D8s_v3/count", "Eq", ["2"]])),
      null,
    ],
    [
      "valid placement policy - PickN with valid property selector name (non-resource, multiple segments with prefix)",
      pickN(requiredProps(["a.very.loooooooong.suuuuuuuub.doooooooomain.kubernetes.azure.com/vm-sizes/Standard_D8s_v3/count", "Eq", ["2"]])),
      null,
    ],
    [
      "valid placement policy - PickN with valid property selector name (non-resource, multiple segments with no prefix)",
      pickN(requiredProps(["Standard_D8s_v3/count", "Eq", ["2"]])),
      null,
    ],
    [
      "invalid placement policy - PickN with invalid property selector name (non-resource, invalid prefix)",
      pickN(requiredProps(["St@ndard_D8s_v3/count", "Eq", ["2"]])),
      ["property name first segment St@ndard_D8s_v3 is not valid", "spec.policy"],
    ],
    [
      "invalid placement policy - PickN with invalid property selector name (non-resource, invalid non-prefix segment)",
      pickN(requiredProps(["Standard_D8s_v3/count/$", "Eq", ["2"]])),
      ["property name segment $ is not valid", "spec.policy"],
    ],
  ]);
});

describe("TestValidateTolerations (placement_test.go), as a PickAll policy's", () => {
  const tolerations = (...t: Record<string, unknown>[]) => ({ placementType: "PickAll", tolerations: t });
  policyCases([
    ["valid tolerations", tolerations(T1, T2, { operator: "Exists" }), null],
    ["valid toleration, value is empty, operator is Equal", tolerations({ key: "key1", operator: "Equal", effect: "NoSchedule" }), null],
    [
      "invalid toleration, key is empty, operator is Equal",
      tolerations({ operator: "Equal", value: "value1", effect: "NoSchedule" }),
      ["toleration key cannot be empty, when operator is Equal", "spec.policy"],
    ],
    [
      "invalid toleration, key is invalid, operator is Equal",
      tolerations({ key: "key:123*", operator: "Equal", value: "value1", effect: "NoSchedule" }),
      ["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", "spec.policy"],
    ],
    [
      "invalid toleration, value is invalid, operator is Equal",
      tolerations({ key: "key1", operator: "Equal", value: "val#%/-123", effect: "NoSchedule" }),
      [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        "spec.policy",
      ],
    ],
    [
      "invalid toleration, key is invalid, operator is Exists",
      tolerations({ key: "key:123*", operator: "Exists", effect: "NoSchedule" }),
      ["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", "spec.policy"],
    ],
    [
      "invalid toleration, value is not empty, operator is Exists",
      tolerations({ key: "key1", operator: "Exists", value: "value1", effect: "NoSchedule" }),
      ["toleration value needs to be empty, when operator is Exists", "spec.policy"],
    ],
    ["invalid toleration, non-unique toleration", tolerations(T1, T2, T1), ["tolerations must be unique", "spec.policy"]],
  ]);
});

describe("TestValidateOperatorAndValues (placement_test.go), as a PickN required term's", () => {
  const req = (op: string, values: string[]) => pickN(requiredProps(["kubernetes-fleet.io/node-count", op, values]));
  policyCases([
    ["Eq with one valid value", req("Eq", ["5"]), null],
    ["Gt with one valid value", req("Gt", ["100Mi"]), null],
    ["Lte with one valid value", req("Le", ["2.5"]), null],
    ["unsupported operator", req("In", ["5"]), ["unsupported operator In", "spec.policy"]],
    ["Eq with zero values", req("Eq", []), ["operator Eq requires exactly one value, got 0", "spec.policy"]],
    ["Eq with two values", req("Eq", ["5", "10"]), ["operator Eq requires exactly one value, got 2", "spec.policy"]],
    ["Lt with malformed quantity", req("Lt", ["five"]), ['value "five" is not a valid resource.Quantity', "spec.policy"]],
  ]);
});

describe("TestValidateRequirementsConsistency (placement_test.go), as a PickN required term's", () => {
  const on = (...reqs: [string, string][]) => pickN(requiredProps(...reqs.map(([op, v]) => ["p", op, [v]] as [string, string, string[]])));
  const bad = (sub: string): [string, string] => [`inconsistent requirements on property p: ${sub}`, "spec.policy"];
  policyCases([
    ["empty input", pickN(affinity(required({ propertySelector: { matchExpressions: [] } }))), null],
    ["single requirement", on(["Eq", "5"]), null],
    ["two compatible Eq with same value", on(["Eq", "5"], ["Eq", "5"]), null],
    ["Eq + Ne with different values", on(["Eq", "5"], ["Ne", "10"]), null],
    ["two Ne", on(["Ne", "5"], ["Ne", "10"]), null],
    ["Gt + Lt with non-empty interval", on(["Gt", "5"], ["Lt", "10"]), null],
    ["Gte x + Lte x pinpoints x", on(["Ge", "10"], ["Le", "10"]), null],
    ["Eq inside bounds", on(["Ge", "5"], ["Eq", "7"], ["Le", "10"]), null],
    ["redundant lower bounds keep most restrictive (compatible)", on(["Gt", "5"], ["Gt", "10"], ["Lt", "20"]), null],
    ["value with units (memory quantity)", on(["Ge", "100Mi"], ["Lt", "1Gi"]), null],
    ["two Eq with different values", on(["Eq", "5"], ["Eq", "10"]), bad("conflicting Eq values 5 and 10")],
    ["Eq + Ne with same value", on(["Eq", "5"], ["Ne", "5"]), bad("conflicting Eq and Ne on same value 5")],
    ["Gt 10 + Lt 5", on(["Gt", "10"], ["Lt", "5"]), bad("lower bound (10) and upper bound (5) exclude all values")],
    ["Gt x + Lt x boundary", on(["Gt", "10"], ["Lt", "10"]), bad("lower bound (10) and upper bound (10) exclude all values")],
    ["Gt x + Lte x boundary", on(["Gt", "10"], ["Le", "10"]), bad("lower bound (10) and upper bound (10) exclude all values")],
    ["Gte x + Lt x boundary", on(["Ge", "10"], ["Lt", "10"]), bad("lower bound (10) and upper bound (10) exclude all values")],
    [
      "least-restrictive lower hides contradiction (still detected via most-restrictive)",
      on(["Gt", "10"], ["Gt", "5"], ["Lt", "7"]),
      bad("lower bound (10) and upper bound (7)"),
    ],
    ["Eq below lower bound", on(["Ge", "10"], ["Eq", "5"]), bad("eq value 5 violates lower bound 10")],
    ["Eq above upper bound", on(["Le", "10"], ["Eq", "20"]), bad("eq value 20 violates upper bound 10")],
    ["Eq equals strict lower bound", on(["Gt", "10"], ["Eq", "10"]), bad("eq value 10 violates lower bound 10")],
    ["Eq equals strict upper bound", on(["Lt", "10"], ["Eq", "10"]), bad("eq value 10 violates upper bound 10")],
    // The malformed value is refused by validateOperatorAndValues, not by the consistency check.
    [
      "malformed value is ignored for consistency check",
      on(["Eq", "not-a-number"], ["Eq", "5"]),
      ['value "not-a-number" is not a valid resource.Quantity', "spec.policy"],
    ],
    ["Eq + Ne with same canonical value but different format", on(["Eq", "1000m"], ["Ne", "1"]), bad("conflicting Eq and Ne on same value 1")],
    ["Eq + Lt bound with same canonical value but different format", on(["Lt", "1024"], ["Eq", "1Ki"]), bad("eq value 1Ki violates upper bound 1024")],
  ]);

  it("prints quantities as Quantity.String() does (1000m is 1, 2.5 is 2500m), as KubeFleet's messages", async () => {
    const causeOf = async (policy: Policy) => {
      const r = await call("POST", CRPS, crp({ policy }));
      expect(r.status).toBe(422);
      return r.body.details.causes.find((c: { field: string }) => c.field === "spec.policy").message;
    };
    expect(await causeOf(on(["Eq", "1000m"], ["Ne", "1"]))).toBe(
      "the placement policy field is invalid: inconsistent requirements on property p: conflicting Eq and Ne on same value 1",
    );
    expect(await causeOf(on(["Eq", "2.5"], ["Eq", "3"]))).toBe(
      "the placement policy field is invalid: inconsistent requirements on property p: conflicting Eq values 2500m and 3",
    );
    expect(await causeOf(on(["Ge", "2048"], ["Le", "1Ki"]))).toBe(
      "the placement policy field is invalid: inconsistent requirements on property p: lower bound (2048) and upper bound (1Ki) exclude all values",
    );
  });

  it("malformed value is ignored for consistency check: no cascade of a consistency error", async () => {
    const r = await call("POST", CRPS, crp({ policy: on(["Eq", "not-a-number"], ["Eq", "5"]) }));
    expect(r.status).toBe(422);
    expect(r.body.message).not.toContain("inconsistent requirements");
  });
});

describe("TestValidateResourcePlacement (placement_test.go)", () => {
  const cases: Case[] = [
    ["RP with valid PickFixed policy and empty cluster names", { policy: { placementType: "PickFixed", clusterNames: [] } }, null],
    [
      "RP with invalid rollout strategy",
      { strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: -1 } } },
      ["maxUnavailable must be greater than or equal to 0", "spec.strategy"],
    ],
    [
      "RP with cluster scoped resource should fail",
      { resourceSelectors: [CLUSTER_ROLE] },
      ["resource is not found in schema (please retry) or it is a cluster scoped resource", "spec.resourceSelectors[0]"],
    ],
    ["RP with namespaced resource should succeed", {}, null],
  ];
  for (const [name, spec, want] of cases)
    it(name, async () => {
      await createNamespaces(RP_NS);
      await runCreate(RPS, rp(spec), want);
    });
});

/** Creates `old` (must be accepted), then PUTs `next` over it (its resourceVersion); returns the PUT's answer. */
async function replace(path: string, old: { metadata: { name: string } }, next: { metadata: Record<string, unknown>; spec: unknown }) {
  const created = await call("POST", path, old);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const url = `${path}/${old.metadata.name}`;
  const r = await call("PUT", url, { ...next, metadata: { ...next.metadata, resourceVersion: created.body.metadata.resourceVersion } });
  return { r, url, created: created.body };
}

/** After a refused update: the stored object is the one created, unchanged. */
async function expectUnchanged(url: string, created: { metadata: { resourceVersion: string }; spec: unknown }) {
  const now = await call("GET", url);
  expect(now.status).toBe(200);
  expect(now.body.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  expect(now.body.spec).toEqual(created.spec);
}

describe("TestIsPlacementPolicyUpdateValid (placement_test.go), as updates", () => {
  const withAff = (type: string, key = "test-key1", value = "test-value1", p: Policy = {}) => ({
    placementType: type,
    ...p,
    ...affinity(required(labels({ [key]: value }))),
  });
  const cases: [string, Policy | undefined, Policy | undefined, boolean][] = [
    ["old policy is nil, current policy is nil", undefined, undefined, false],
    ["old policy nil, current policy non nil, current placement type is PickAll", undefined, withAff("PickAll"), false],
    [
      "old policy nil, current policy non nil, current placement type is PickN",
      undefined,
      withAff("PickN", undefined, undefined, { numberOfClusters: 1 }),
      true,
    ],
    ["old policy is non nil, current policy is nil, old placement type is PickAll", withAff("PickAll"), undefined, false],
    // Upstream's old PickFixed policy has an affinity, which PickFixed refuses; its cluster names stand for it.
    ["old policy is non nil, current policy is nil, old placement type is PickFixed", { placementType: "PickFixed", clusterNames: ["a"] }, undefined, true],
    [
      "old policy is non nil, current policy is non nil, placement type changed",
      withAff("PickN", undefined, undefined, { numberOfClusters: 1 }),
      withAff("PickAll", "test-key2", "test-value2"),
      true,
    ],
    [
      "old policy is not nil, current policy is non nil, placement type unchanged",
      withAff("PickN", undefined, undefined, { numberOfClusters: 1 }),
      withAff("PickN", "test-key2", "test-value2", { numberOfClusters: 1 }),
      false,
    ],
  ];
  for (const [name, oldPolicy, newPolicy, typeUpdated] of cases)
    it(name, async () => {
      const n = `vc-upd-${++seq}`;
      const { r, url, created } = await replace(CRPS, crp(oldPolicy ? { policy: oldPolicy } : {}, n), crp(newPolicy ? { policy: newPolicy } : {}, n));
      if (typeUpdated) {
        await expectRefused(r, "placement type is immutable", "spec.policy.placementType");
        await expectUnchanged(url, created);
      } else expect(r.status, JSON.stringify(r.body)).toBe(200);
    });
});

describe("TestIsTolerationsUpdatedOrDeleted (placement_test.go), as updates", () => {
  const T3 = { key: "key3", operator: "Exists", effect: "NoSchedule" };
  const cases: [string, Record<string, unknown>[] | undefined, Record<string, unknown>[] | undefined, boolean][] = [
    ["old tolerations is nil", undefined, [T1, T2], false],
    ["new tolerations is nil", [T1, T2], undefined, true],
    ["one toleration was updated in new tolerations", [T1, T2], [T1, T3], true],
    ["one toleration was deleted in new tolerations", [T1, T2], [T1], true],
    ["old tolerations, new tolerations are same", [T1, T2], [T1, T2], false],
    ["a toleration was added to new tolerations", [T1, T2], [T1, T2, { operator: "Exists" }], false],
  ];
  for (const [name, oldT, newT, refused] of cases)
    it(name, async () => {
      const n = `vc-tol-${++seq}`;
      const policy = (t?: Record<string, unknown>[]) => ({ policy: { placementType: "PickAll", ...(t ? { tolerations: t } : {}) } });
      const { r, url, created } = await replace(CRPS, crp(policy(oldT), n), { ...crp(policy(newT), n), metadata: { name: n, labels: { changed: "yes" } } });
      if (refused) {
        await expectRefused(r, "tolerations have been updated/deleted, only additions to tolerations are allowed", "spec.policy.tolerations");
        await expectUnchanged(url, created);
      } else expect(r.status, JSON.stringify(r.body)).toBe(200);
    });
});

describe("TestHandle (clusterresourceplacement validating webhook)", () => {
  const errString = "the rollout Strategy field  is invalid: maxUnavailable must be greater than or equal to 0, got `-1`";
  const valid = (n: string) => crp({ policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate" } }, n);
  const invalid = (n: string) => crp({ policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: -1 } } }, n);

  it("allow CRP create", async () => {
    expect((await call("POST", CRPS, valid(`vc-h-${++seq}`))).status).toBe(201);
  });

  it("deny CRP create - invalid CRP object", async () => {
    const n = `vc-h-${++seq}`;
    await expectRefused(await call("POST", CRPS, invalid(n)), errString, "spec.strategy", `${CRPS}/${n}`);
  });

  it("allow CRP update - valid update", async () => {
    const n = `vc-h-${++seq}`;
    const next = crp({ policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 2 } } }, n);
    const { r } = await replace(CRPS, valid(n), next);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.spec.strategy.rollingUpdate.maxUnavailable).toBe(2);
  });

  it("deny CRP update - valid old CRP, invalid new CRP, spec updated", async () => {
    const n = `vc-h-${++seq}`;
    const { r, url, created } = await replace(CRPS, valid(n), invalid(n));
    await expectRefused(r, errString, "spec.strategy");
    await expectUnchanged(url, created);
  });

  it("deny CRP update - new CRP immutable placement type", async () => {
    const n = `vc-h-${++seq}`;
    const { r, url, created } = await replace(
      CRPS,
      valid(n),
      crp({ policy: { placementType: "PickN", numberOfClusters: 2 }, strategy: { type: "RollingUpdate" } }, n),
    );
    await expectRefused(r, "placement type is immutable", "spec.policy.placementType");
    await expectUnchanged(url, created);
  });

  it("deny CRP update - new CRP tolerations updated", async () => {
    const n = `vc-h-${++seq}`;
    // Upstream's toleration has no operator: KubeFleet's defaulter makes it Equal.
    const old = crp({ policy: { placementType: "PickAll", tolerations: [{ key: "key1", value: "value1" }] }, strategy: { type: "RollingUpdate" } }, n);
    const { r, url, created } = await replace(CRPS, old, valid(n));
    await expectRefused(r, "tolerations have been updated/deleted, only additions to tolerations are allowed", "spec.policy.tolerations");
    await expectUnchanged(url, created);
  });
});

describe("TestHandle (resourceplacement validating webhook)", () => {
  const errString = "the rollout Strategy field  is invalid: maxUnavailable must be greater than or equal to 0, got `-1`";
  const valid = (n: string) => rp({ policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate" } }, n);
  const invalid = (n: string) => rp({ policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: -1 } } }, n);

  it("allow RP create", async () => {
    await createNamespaces(RP_NS);
    expect((await call("POST", RPS, valid(`vc-rh-${++seq}`))).status).toBe(201);
  });

  it("deny RP create - invalid RP object", async () => {
    await createNamespaces(RP_NS);
    const n = `vc-rh-${++seq}`;
    await expectRefused(await call("POST", RPS, invalid(n)), errString, "spec.strategy", `${RPS}/${n}`);
  });

  it("deny RP update - valid old RP, invalid new RP, spec updated", async () => {
    await createNamespaces(RP_NS);
    const n = `vc-rh-${++seq}`;
    const { r, url, created } = await replace(RPS, valid(n), invalid(n));
    await expectRefused(r, errString, "spec.strategy");
    await expectUnchanged(url, created);
  });

  it("deny RP update - new RP immutable placement type", async () => {
    await createNamespaces(RP_NS);
    const n = `vc-rh-${++seq}`;
    const { r, url, created } = await replace(
      RPS,
      valid(n),
      rp({ policy: { placementType: "PickN", numberOfClusters: 2 }, strategy: { type: "RollingUpdate" } }, n),
    );
    await expectRefused(r, "placement type is immutable", "spec.policy.placementType");
    await expectUnchanged(url, created);
  });

  it("deny RP update - new RP tolerations updated", async () => {
    await createNamespaces(RP_NS);
    const n = `vc-rh-${++seq}`;
    const old = rp({ policy: { placementType: "PickAll", tolerations: [{ key: "key1", value: "value1" }] }, strategy: { type: "RollingUpdate" } }, n);
    const { r, url, created } = await replace(RPS, old, valid(n));
    await expectRefused(r, "tolerations have been updated/deleted, only additions to tolerations are allowed", "spec.policy.tolerations");
    await expectUnchanged(url, created);
  });

  it("decode error for main object: a body that is not JSON is a 400, nothing stored", async () => {
    await createNamespaces(RP_NS);
    const r = await call("POST", RPS, undefined, { raw: "{" });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.kind).toBe("Status");
  });

  it("decode error for the object of an update: a body that is not JSON is a 400, the object unchanged", async () => {
    await createNamespaces(RP_NS);
    const n = `vc-rh-${++seq}`;
    const created = await call("POST", RPS, valid(n));
    expect(created.status).toBe(201);
    const r = await call("PUT", `${RPS}/${n}`, undefined, { raw: "{" });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    await expectUnchanged(`${RPS}/${n}`, created.body);
  });
});

describe("HandlePlacementValidation's update rules on a placement being deleted", () => {
  // KubeFleet lets an update through on its way out only when the stored object is itself invalid
  // (AllowUpdateOldInvalidFmt); a valid stored object is held to every rule, deleting or not.
  async function deleting(n: string) {
    const created = await call("POST", CRPS, crp({}, n));
    expect(created.status).toBe(201);
    const hold = await call("PATCH", `${CRPS}/${n}`, { metadata: { finalizers: ["example.com/hold", ...created.body.metadata.finalizers] } }, merge);
    expect(hold.status, JSON.stringify(hold.body)).toBe(200);
    const del = await call("DELETE", `${CRPS}/${n}`);
    expect(del.status).toBeLessThan(300);
    const now = await call("GET", `${CRPS}/${n}`);
    expect(now.body.metadata.deletionTimestamp).toBeDefined();
    return now.body;
  }

  it("deny CRP update - valid old CRP, invalid new CRP, spec updated: also when the CRP is being deleted", async () => {
    const n = `vc-del-${++seq}`;
    const stored = await deleting(n);
    const r = await call("PATCH", `${CRPS}/${n}`, { spec: { strategy: { rollingUpdate: { maxUnavailable: -1 } } } }, merge);
    await expectRefused(r, "maxUnavailable must be greater than or equal to 0, got `-1`", "spec.strategy");
    await expectUnchanged(`${CRPS}/${n}`, stored);
  });

  it("deny CRP update - new CRP immutable placement type: also when the CRP is being deleted", async () => {
    const n = `vc-del-${++seq}`;
    const stored = await deleting(n);
    const r = await call("PATCH", `${CRPS}/${n}`, { spec: { policy: { placementType: "PickN", numberOfClusters: 1 } } }, merge);
    await expectRefused(r, "placement type is immutable", "spec.policy.placementType");
    await expectUnchanged(`${CRPS}/${n}`, stored);
  });

  it("a valid spec change and the finalizer's removal of a CRP being deleted are let through", async () => {
    const n = `vc-del-${++seq}`;
    await deleting(n);
    const r = await call("PATCH", `${CRPS}/${n}`, { spec: { strategy: { rollingUpdate: { maxUnavailable: 1 } } } }, merge);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const fin = r.body.metadata.finalizers.filter((f: string) => f !== "example.com/hold");
    const released = await call("PATCH", `${CRPS}/${n}`, { metadata: { finalizers: fin.length ? fin : null } }, merge);
    expect(released.status, JSON.stringify(released.body)).toBe(200);
  });
});

describe("HandlePlacementValidation with a stored object its rules refuse (not reachable over HTTP: nothing invalid is stored)", () => {
  const lookup = (group: string, version: string, kind: string) =>
    kind === "ClusterRole" ? ({ namespaced: false } as KindDefinition) : kind === "Deployment" ? ({ namespaced: true } as KindDefinition) : undefined;
  const object = (strategy: Record<string, unknown>, meta: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: "placement.kubernetes-fleet.io/v1beta1",
    kind: "ClusterResourcePlacement",
    metadata: { name: "test-crp", uid: "u", resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z", ...meta },
    spec: { resourceSelectors: [CLUSTER_ROLE], policy: { placementType: "PickAll" }, strategy: { type: "RollingUpdate", ...strategy } },
  });
  const invalidOld = object({ rollingUpdate: { maxUnavailable: -1 } }, { finalizers: ["kubernetes-fleet.io/crp-cleanup"] });
  const errString = "the rollout Strategy field  is invalid: maxUnavailable must be greater than or equal to 0, got `-1`";

  it("deny CRP update - invalid old CRP, valid new CRP, spec updated", () => {
    const causes = validatePlacement(object({ rollingUpdate: { maxUnavailable: 2 } }), invalidOld, true, lookup);
    expect(causes.map((c) => c.message)).toEqual([`deny update on old invalid v1beta1 CRP with DeletionTimestamp not set ${errString}`]);
  });

  it("allow CRP update - invalid old CRP object, valid new CRP is deleting, finalizer removed, spec updated", () => {
    const next = object({ rollingUpdate: { maxUnavailable: 2 } }, { finalizers: [], deletionTimestamp: "2026-01-01T00:00:00Z" });
    expect(validatePlacement(next, invalidOld, true, lookup)).toEqual([]);
  });

  it("allow CRP update - invalid old CRP, invalid new CRP is deleting, finalizer not removed (a spec change)", () => {
    const next = object({ rollingUpdate: { maxUnavailable: -2 } }, { deletionTimestamp: "2026-01-01T00:00:00Z" });
    expect(validatePlacement(next, invalidOld, true, lookup)).toEqual([]);
  });

  it("deny RP update - invalid old RP, invalid new RP is not deleting (a spec change)", () => {
    const rpObject = (strategy: Record<string, unknown>): KubeObject => ({
      ...object(strategy),
      kind: "ResourcePlacement",
      spec: { ...object(strategy).spec, resourceSelectors: [DEPLOYMENT] },
    });
    const causes = validatePlacement(rpObject({ rollingUpdate: { maxUnavailable: -2 } }), rpObject({ rollingUpdate: { maxUnavailable: -1 } }), false, lookup);
    expect(causes.map((c) => c.message)).toEqual([`deny update on old invalid v1beta1 RP with DeletionTimestamp not set ${errString}`]);
  });
});

describe("a toleration's operator defaults to Equal before the additions-only rule compares", () => {
  it("a toleration written without operator, repeated without one, is not an update", async () => {
    const n = `vc-tolop-${++seq}`;
    const policy = (t: Record<string, unknown>[]) => ({ policy: { placementType: "PickAll", tolerations: t } });
    const { r } = await replace(CRPS, crp(policy([{ key: "key1", value: "value1" }]), n), crp(policy([{ key: "key1", value: "value1" }, T2]), n));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.spec.policy.tolerations[0]).toEqual({ key: "key1", value: "value1", operator: "Equal" });
  });
});

describe("merge patches of a stored placement (the webhook's update rules over PATCH)", () => {
  it("a merge patch that makes the strategy invalid is refused, the object unchanged", async () => {
    const n = `vc-mp-${++seq}`;
    const created = await call("POST", CRPS, crp({}, n));
    expect(created.status).toBe(201);
    const r = await call("PATCH", `${CRPS}/${n}`, { spec: { strategy: { rollingUpdate: { maxSurge: -1 } } } }, merge);
    await expectRefused(r, "maxSurge must be greater than or equal to 0, got `-1`", "spec.strategy");
    await expectUnchanged(`${CRPS}/${n}`, created.body);
  });
});
