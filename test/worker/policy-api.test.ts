/**
 * The policy kinds (src/kinds/policy.ts) over HTTP to the hub in workerd: OCM's documentation
 * examples of Policy, PlacementBinding and PolicySet are stored as sent, tables carry OCM's
 * printer columns, and bad input (OCM's webhook checks, fields the hub does not implement) gets a
 * 4xx Status naming the field with nothing written.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces } from "./helpers.ts";

const NS = "policies";
const POLICIES = `/apis/policy.open-cluster-management.io/v1/namespaces/${NS}/policies`;
const BINDINGS = `/apis/policy.open-cluster-management.io/v1/namespaces/${NS}/placementbindings`;
const SETS = `/apis/policy.open-cluster-management.io/v1beta1/namespaces/${NS}/policysets`;
const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" };

/** OCM's documentation example (seed 004, section Policy), as a user applies it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function docPolicy(name = "policy-namespace"): Record<string, any> {
  return {
    apiVersion: "policy.open-cluster-management.io/v1",
    kind: "Policy",
    metadata: {
      name,
      namespace: NS,
      annotations: {
        "policy.open-cluster-management.io/standards": "NIST SP 800-53",
        "policy.open-cluster-management.io/categories": "CM Configuration Management",
        "policy.open-cluster-management.io/controls": "CM-2 Baseline Configuration",
      },
    },
    spec: {
      remediationAction: "enforce",
      disabled: false,
      "policy-templates": [
        {
          objectDefinition: {
            apiVersion: "policy.open-cluster-management.io/v1",
            kind: "ConfigurationPolicy",
            metadata: { name: "policy-namespace-example" },
            spec: {
              remediationAction: "inform",
              severity: "low",
              "object-templates": [{ complianceType: "MustHave", objectDefinition: { kind: "Namespace", apiVersion: "v1", metadata: { name: "prod" } } }],
            },
          },
        },
      ],
    },
  };
}

beforeAll(async () => {
  await createNamespaces(NS);
});

describe("OCM's documentation examples", () => {
  it("stores the Policy, PlacementBinding and PolicySet as sent, with OCM's printer columns", async () => {
    const p = await call("POST", POLICIES, docPolicy());
    expect(p.status).toBe(201);
    expect(p.body.spec).toEqual(docPolicy().spec);
    const b = await call("POST", BINDINGS, {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "PlacementBinding",
      metadata: { name: "binding-policy-namespace", namespace: NS },
      placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "placement-hub-cluster" },
      subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "policy-namespace" }],
    });
    expect(b.status).toBe(201);
    expect(b.body.placementRef.name).toBe("placement-hub-cluster");
    const s = await call("POST", SETS, {
      apiVersion: "policy.open-cluster-management.io/v1beta1",
      kind: "PolicySet",
      metadata: { name: "acm-hardening", namespace: NS },
      spec: {
        description: "Apply standard best practices for hardening your Open Cluster Management installation.",
        policies: ["policy-check-backups", "policy-managedclusteraddon-available", "policy-subscriptions"],
      },
    });
    expect(s.status).toBe(201);

    const t = await call("GET", POLICIES, undefined, { headers: TABLE });
    expect(t.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Remediation action", "Compliance state", "Age"]);
    expect(t.body.rows[0].cells.slice(0, 2)).toEqual(["policy-namespace", "enforce"]);
    const st = await call("GET", SETS, undefined, { headers: TABLE });
    expect(st.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Compliance state", "Age"]);
    // Short names as OCM's CRDs declare them.
    const disc = await call("GET", "/apis/policy.open-cluster-management.io/v1");
    const byName = Object.fromEntries(disc.body.resources.map((r: { name: string; shortNames?: string[] }) => [r.name, r.shortNames]));
    expect(byName.policies).toEqual(["plc"]);
    expect(byName.placementbindings).toEqual(["pb"]);
  });
});

describe("bad input", () => {
  /** Posts `body`, expects `status` with a cause on `field`, and that nothing named `name` was stored. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async function refused(url: string, body: Record<string, any>, status: number, field: string) {
    const r = await call("POST", url, body);
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.kind).toBe("Status");
    expect(r.body.details.causes.map((c: { field: string }) => c.field)).toContain(field);
    expect((await call("GET", `${url}/${body.metadata.name}`)).status).toBe(404);
    return r.body;
  }

  it("refuses a root policy whose <namespace>.<name> exceeds 62 characters, as OCM's webhook", async () => {
    const body = await refused(POLICIES, docPolicy("p".repeat(62 - NS.length + 1)), 422, "metadata.name");
    expect(body.message).toContain("cannot exceed 62 characters");
    expect((await call("POST", POLICIES, docPolicy("p".repeat(62 - NS.length)))).status).toBe(201);
  });

  it("refuses a policy without remediationAction on the policy or its ConfigurationPolicy", async () => {
    const p = docPolicy("no-action");
    delete p.spec.remediationAction;
    delete p.spec["policy-templates"][0].objectDefinition.spec.remediationAction;
    const body = await refused(POLICIES, p, 422, "spec.policy-templates[0].objectDefinition.spec.remediationAction");
    expect(body.message).toContain("cannot both be unset");
  });

  it("requires disabled and policy-templates as OCM's CRD does", async () => {
    const p = docPolicy("required");
    delete p.spec.disabled;
    await refused(POLICIES, p, 422, "spec.disabled");
  });

  it("refuses unimplemented template fields and engines with 422 naming them", async () => {
    const raw = docPolicy("raw");
    raw.spec["policy-templates"][0].objectDefinition.spec["object-templates-raw"] = "- complianceType: musthave";
    await refused(POLICIES, raw, 422, "spec.policy-templates[0].objectDefinition.spec.object-templates-raw");
    const prune = docPolicy("prune");
    prune.spec["policy-templates"][0].objectDefinition.spec.pruneObjectBehavior = "DeleteAll";
    await refused(POLICIES, prune, 422, "spec.policy-templates[0].objectDefinition.spec.pruneObjectBehavior");
    // A namespace label selector is evaluated by the agent: a bad one is refused as a LabelSelector is.
    const labels = docPolicy("labels");
    labels.spec["policy-templates"][0].objectDefinition.spec.namespaceSelector = { matchExpressions: [{ key: "env", operator: "In" }] };
    await refused(POLICIES, labels, 422, "spec.policy-templates[0].objectDefinition.spec.namespaceSelector.matchExpressions[0].values");
    const selected = docPolicy("labels-ok");
    selected.spec["policy-templates"][0].objectDefinition.spec.namespaceSelector = {
      include: ["prod-*"],
      matchLabels: { env: "prod" },
      matchExpressions: [{ key: "tier", operator: "Exists" }],
    };
    expect((await call("POST", POLICIES, selected)).status).toBe(201);
    const cert = docPolicy("cert");
    cert.spec["policy-templates"][0].objectDefinition = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "CertificatePolicy",
      metadata: { name: "c" },
      spec: {},
    };
    await refused(POLICIES, cert, 422, "spec.policy-templates[0].objectDefinition.kind");
    const deps = docPolicy("deps");
    deps.spec.dependencies = [{ apiVersion: "policy.open-cluster-management.io/v1", kind: "Policy", name: "other", compliance: "Compliant" }];
    await refused(POLICIES, deps, 422, "spec.dependencies");
    const tmpl = docPolicy("tmpl");
    tmpl.spec["policy-templates"][0].objectDefinition.spec["object-templates"][0].objectDefinition.metadata.name = '{{hub fromConfigMap "" "c" "k" hub}}';
    await refused(POLICIES, tmpl, 422, "spec.policy-templates[0].objectDefinition.spec.object-templates[0].objectDefinition.metadata.name");
  });

  it("serves metadataComplianceType as config-policy-controller's enum (MustHave, MustOnlyHave), not MustNotHave", async () => {
    const md = docPolicy("md-only");
    md.spec["policy-templates"][0].objectDefinition.spec["object-templates"][0].metadataComplianceType = "MustOnlyHave";
    expect((await call("POST", POLICIES, md)).status).toBe(201);
    const stored = (await call("GET", `${POLICIES}/md-only`)).body;
    expect(stored.spec["policy-templates"][0].objectDefinition.spec["object-templates"][0].metadataComplianceType).toBe("MustOnlyHave");
    const not = docPolicy("md-not");
    not.spec["policy-templates"][0].objectDefinition.spec["object-templates"][0].metadataComplianceType = "mustnothave";
    await refused(POLICIES, not, 422, "spec.policy-templates[0].objectDefinition.spec.object-templates[0].metadataComplianceType");
  });

  it("refuses a binding to a PlacementRule and an empty subject list", async () => {
    const base = {
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "PlacementBinding",
      placementRef: { apiGroup: "apps.open-cluster-management.io", kind: "PlacementRule", name: "r" },
      subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "p" }],
    };
    await refused(BINDINGS, { ...base, metadata: { name: "rule" } }, 422, "placementRef.kind");
    await refused(
      BINDINGS,
      { ...base, metadata: { name: "empty" }, placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "p" }, subjects: [] },
      422,
      "subjects",
    );
  });

  it("refuses PolicySet exclusions (not implemented)", async () => {
    await refused(
      SETS,
      {
        apiVersion: "policy.open-cluster-management.io/v1beta1",
        kind: "PolicySet",
        metadata: { name: "excl" },
        spec: { policies: ["a"], exclusions: [{ policyName: "a", clusterNames: ["c1"] }] },
      },
      422,
      "spec.exclusions",
    );
  });
});
