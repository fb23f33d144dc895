/**
 * Every field of OCM's ManifestWork, Placement, ManifestWorkReplicaSet, ManagedCluster and
 * ManagedClusterSet schemas (test/ocm/crd-fields.ts, from open-cluster-management-io/api's
 * CRDs), and of Policy and PolicySet (test/ocm/crd-fields-policy.ts, governance-policy-propagator's), submitted over HTTP to the hub in workerd as an OCM user's YAML would set it, against
 * the verdict of docs/ocm-compatibility.md: a Supported or Differs field is stored as sent; a
 * Refused one gets 422 Invalid with a cause naming the field, and nothing is stored. A Refused
 * field set to OCM's default, where OCM has one, is accepted (it asks for nothing the hub does
 * not do). A field OCM's webhooks refuse too is refused as they refuse it.
 * ManifestWork's status fields are reported through /status as an agent reports them, each
 * stored as sent. Other status fields are written by the hub's controllers; the table's
 * completeness for them is checked by test/unit/ocm-compatibility.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import doc from "../../docs/ocm-compatibility.md?raw";
import { OCM, parseCompatibility } from "../ocm/compatibility.ts";
import { concretePath, CONFIGURATION_POLICY, getField, MANIFEST, setField } from "../ocm/walker.ts";
import { call, createNamespaces } from "./helpers.ts";

const NS = "fidelity";
const table = parseCompatibility(doc);

/** How to create one object of a kind: its collection URL and an object holding OCM's required fields. */
const KINDS: Record<string, { url: string; base: (name: string) => Record<string, unknown> }> = {
  ManifestWork: {
    url: `/apis/work.open-cluster-management.io/v1/namespaces/${NS}/manifestworks`,
    base: (name) => ({
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name, namespace: NS },
      spec: { workload: { manifests: [structuredClone(MANIFEST)] } },
    }),
  },
  ManifestWorkReplicaSet: {
    url: `/apis/work.open-cluster-management.io/v1alpha1/namespaces/${NS}/manifestworkreplicasets`,
    base: (name) => ({
      apiVersion: "work.open-cluster-management.io/v1alpha1",
      kind: "ManifestWorkReplicaSet",
      metadata: { name, namespace: NS },
      spec: { placementRefs: [{ name: "fidelity" }], manifestWorkTemplate: { workload: { manifests: [structuredClone(MANIFEST)] } } },
    }),
  },
  Placement: {
    url: `/apis/cluster.open-cluster-management.io/v1beta1/namespaces/${NS}/placements`,
    base: (name) => ({ apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", metadata: { name, namespace: NS }, spec: {} }),
  },
  ManagedCluster: {
    url: "/apis/cluster.open-cluster-management.io/v1/managedclusters",
    base: (name) => ({ apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name }, spec: {} }),
  },
  ManagedClusterSet: {
    url: "/apis/cluster.open-cluster-management.io/v1beta2/managedclustersets",
    base: (name) => ({ apiVersion: "cluster.open-cluster-management.io/v1beta2", kind: "ManagedClusterSet", metadata: { name }, spec: {} }),
  },
  Policy: {
    url: `/apis/policy.open-cluster-management.io/v1/namespaces/${NS}/policies`,
    base: (name) => ({
      apiVersion: "policy.open-cluster-management.io/v1",
      kind: "Policy",
      metadata: { name, namespace: NS },
      spec: { disabled: false, "policy-templates": [{ objectDefinition: structuredClone(CONFIGURATION_POLICY) }] },
    }),
  },
  PolicySet: {
    url: `/apis/policy.open-cluster-management.io/v1beta1/namespaces/${NS}/policysets`,
    base: (name) => ({
      apiVersion: "policy.open-cluster-management.io/v1beta1",
      kind: "PolicySet",
      metadata: { name, namespace: NS },
      spec: { policies: ["p"] },
    }),
  },
};

/** Fields a user may not set in OCM either (its webhooks refuse them): the status and message the hub answers as OCM's does. */
const OCM_REFUSES: Record<string, { status: number; message: string }> = {
  "ManagedCluster spec.taints[].timeAdded": { status: 400, message: "It is not allowed to set TimeAdded of Taint" },
};

beforeAll(async () => {
  await createNamespaces(NS);
});

let serial = 0;

for (const [kind, how] of Object.entries(KINDS)) {
  const schema = OCM.kinds[kind]!;
  const fields = new Map(schema.fields.map((f) => [f.path, f]));
  const rows = new Map((table.get(kind) ?? []).map((r) => [r.path, r]));
  const submitted = schema.fields.filter((f) => f.path === "spec" || f.path.startsWith("spec."));

  describe(`${kind} (${schema.group}/${schema.version}): every spec field of OCM's schema`, () => {
    it("has a row in docs/ocm-compatibility.md for each", () => {
      expect(submitted.filter((f) => !rows.has(f.path)).map((f) => f.path)).toEqual([]);
    });

    for (const field of submitted) {
      const row = rows.get(field.path);
      it(`${field.path}: ${row?.verdict ?? "no row"}`, async () => {
        expect(row, `no row for ${field.path}`).toBeDefined();
        const name = `f${++serial}`;
        const body = how.base(name);
        const value = setField(body, field, fields);
        const created = await call("POST", how.url, body);
        const url = `${how.url}/${name}`;
        const alsoOcm = OCM_REFUSES[`${kind} ${field.path}`];
        if (alsoOcm) {
          // OCM's webhook refuses it too, and so does the hub, with OCM's status and words.
          expect(created.status, JSON.stringify(created.body)).toBe(alsoOcm.status);
          expect(created.body.message).toContain(alsoOcm.message);
          expect((await call("GET", url)).status).toBe(404);
          return;
        }
        if (row!.verdict === "Refused") {
          expect(created.status, JSON.stringify(created.body)).toBe(422);
          expect(created.body).toMatchObject({ kind: "Status", reason: "Invalid" });
          // The cause names the field, or the refused list that holds it (a list's items are refused with it).
          const named = (created.body.details?.causes ?? []).map((c: { field?: string }) => c.field ?? "");
          const at = concretePath(field.path);
          const cause = named.find((f: string) => at === f || (at.startsWith(f) && /^[.[]/.test(at.slice(f.length))));
          expect(cause, `causes ${JSON.stringify(named)} name no part of ${at}`).toBeDefined();
          const refusedHolder = [...rows.values()].find((r) => concretePath(r.path) === cause);
          expect(refusedHolder?.verdict).toBe("Refused");
          expect((await call("GET", url)).status).toBe(404);
          if (field.default !== undefined) {
            // OCM's default asks for what the hub does: accepted.
            const withDefault = how.base(`${name}d`);
            setField(withDefault, field, fields);
            setAt(withDefault, field.path, field.default);
            const accepted = await call("POST", how.url, withDefault);
            expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
          }
          return;
        }
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const stored = (await call("GET", url)).body;
        // A list is compared by its first item: the hub may add items of its own (a cluster's taints).
        const [path, sent] = Array.isArray(value) ? [`${field.path}[]`, value[0]] : [field.path, value];
        if (sent !== null && typeof sent === "object") expect(getField(stored, path)).toMatchObject(sent);
        else expect(getField(stored, path)).toEqual(sent);
      });
    }
  });
}

describe("ManifestWork status: every field of OCM's schema, as an agent reports it", () => {
  const schema = OCM.kinds.ManifestWork!;
  const fields = new Map(schema.fields.map((f) => [f.path, f]));
  const rows = new Map((table.get("ManifestWork") ?? []).map((r) => [r.path, r]));
  const reported = schema.fields.filter((f) => f.path.startsWith("status."));
  const how = KINDS.ManifestWork!;

  for (const field of reported) {
    it(`${field.path}: ${rows.get(field.path)?.verdict ?? "no row"}`, async () => {
      expect(rows.get(field.path)?.verdict).toBe("Supported");
      const name = `s${++serial}`;
      expect((await call("POST", how.url, how.base(name))).status).toBe(201);
      const patch: Record<string, unknown> = {};
      const value = setField(patch, field, fields);
      const r = await call("PATCH", `${how.url}/${name}/status`, patch, { contentType: "application/merge-patch+json" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const stored = (await call("GET", `${how.url}/${name}`)).body;
      const [path, sent] = Array.isArray(value) ? [`${field.path}[]`, value[0]] : [field.path, value];
      if (sent !== null && typeof sent === "object") expect(getField(stored, path)).toMatchObject(sent);
      else expect(getField(stored, path)).toEqual(sent);
    });
  }
});

describe("a refused field by any write", () => {
  it("a merge patch, a server-side apply in YAML, and fieldValidation=Warn are refused alike, changing nothing", async () => {
    const placements = KINDS.Placement!.url;
    expect((await call("POST", placements, KINDS.Placement!.base("patched"))).status).toBe(201);
    const before = (await call("GET", `${placements}/patched`)).body;
    const patched = await call("PATCH", `${placements}/patched`, { spec: { sortBy: "Score" } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(422);
    expect(patched.body.details.causes).toEqual([
      { reason: "FieldValueNotSupported", message: 'Unsupported value: "Score": supported values: "ClusterName"', field: "spec.sortBy" },
    ]);
    // Warn drops unknown fields only: a refused field is a known one.
    const warned = await call(
      "PATCH",
      `${placements}/patched?fieldValidation=Warn`,
      { spec: { scoreRateLimit: "5m" } },
      { contentType: "application/merge-patch+json" },
    );
    expect(warned.status).toBe(422);
    expect(warned.body.details.causes[0].field).toBe("spec.scoreRateLimit");
    expect((await call("GET", `${placements}/patched`)).body.metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    const yaml = [
      "apiVersion: work.open-cluster-management.io/v1",
      "kind: ManifestWork",
      "metadata:",
      "  name: applied",
      `  namespace: ${NS}`,
      "spec:",
      "  workload:",
      "    manifests:",
      "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: default}}",
      "  manifestConfigs:",
      "  - resourceIdentifier: {resource: configmaps, name: cm, namespace: default}",
      "    updateStrategy:",
      "      type: ServerSideApply",
      "      serverSideApply:",
      "        ignoreFields:",
      "        - condition: OnSpokePresent",
      "          jsonPointers: [/data/k]",
      "",
    ].join("\n");
    const applied = await call("PATCH", `${KINDS.ManifestWork!.url}/applied?fieldManager=kubectl`, yaml, { contentType: "application/apply-patch+yaml" });
    expect(applied.status).toBe(422);
    expect(applied.body.details.causes).toEqual([
      {
        reason: "FieldValueForbidden",
        message: "Forbidden: JSON Pointers in ignoreFields are not supported by this hub's work agent; use jsonPaths",
        field: "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jsonPointers",
      },
    ]);
    expect((await call("GET", `${KINDS.ManifestWork!.url}/applied`)).status).toBe(404);
  });

  it("an OCM Placement exported with its status is accepted; the status is the scheduler's", async () => {
    const exported = KINDS.Placement!.base("exported");
    exported.spec = { sortBy: "ClusterName", scoreRateLimit: "1m" };
    exported.status = {
      numberOfSelectedClusters: 7,
      lastScoreUpdateTime: "2026-01-01T00:00:00Z",
      decisionGroups: [{ decisionGroupIndex: 0, decisionGroupName: "", decisions: ["exported-decision-1"], clusterCount: 7 }],
    };
    const r = await call("POST", KINDS.Placement!.url, exported);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.status.numberOfSelectedClusters).toBe(0);
    expect(r.body.status.lastScoreUpdateTime).toBeUndefined();
    expect(r.body.status.decisionGroups[0]).toMatchObject({ clusterCount: 0 });
  });

  it("a ManagedCluster's caBundle is base64, as OCM's CRD (format byte) has it", async () => {
    const body = KINDS.ManagedCluster!.base("pem-bundle");
    body.spec = { managedClusterClientConfigs: [{ url: "https://cluster.example:6443", caBundle: "-----BEGIN CERTIFICATE-----" }] };
    const r = await call("POST", KINDS.ManagedCluster!.url, body);
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message: 'Invalid value: "-----BEGIN CERTIFICATE-----": illegal base64 data: must be standard base64 with padding',
        field: "spec.managedClusterClientConfigs[0].caBundle",
      },
    ]);
  });
});

/** Replaces the value at a field path (as {@link getField} finds it) in an object. */
function setAt(obj: Record<string, unknown>, path: string, value: unknown): void {
  const cut = Math.max(path.lastIndexOf("."), path.endsWith("[]") || path.endsWith("{}") ? path.length - 2 : -1);
  const parent = getField(obj, path.slice(0, cut)) as Record<string, unknown> | unknown[];
  const last = path.slice(cut).replace(/^\./, "");
  if (last === "[]") (parent as unknown[])[0] = value;
  else if (last === "{}") (parent as Record<string, unknown>).k = value;
  else (parent as Record<string, unknown>)[last] = value;
}
