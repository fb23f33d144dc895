/**
 * OCM's add-on API over HTTP in workerd: both served versions (v1alpha1 stored, v1beta1
 * converted as OCM's api module converts), discovery listing both, printer columns as OCM's CRDs
 * declare them, and bad input refused with a 4xx Status and nothing written.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces } from "./helpers.ts";

const G = "/apis/addon.open-cluster-management.io";
const CMA1 = `${G}/v1alpha1/clustermanagementaddons`;
const CMA2 = `${G}/v1beta1/clustermanagementaddons`;
const NS = "addon-c1";
const MCA1 = `${G}/v1alpha1/namespaces/${NS}/managedclusteraddons`;
const MCA2 = `${G}/v1beta1/namespaces/${NS}/managedclusteraddons`;
const ADC1 = `${G}/v1alpha1/namespaces/${NS}/addondeploymentconfigs`;
const ADC2 = `${G}/v1beta1/namespaces/${NS}/addondeploymentconfigs`;
const TEMPLATES = `${G}/v1alpha1/addontemplates`;

beforeAll(async () => {
  await createNamespaces(NS);
});

describe("add-on API versions", () => {
  it("discovery lists v1beta1 (preferred) and v1alpha1 with OCM's resources", async () => {
    const groups = (await call("GET", "/apis")).body as { groups: { name: string; versions: { version: string }[]; preferredVersion: { version: string } }[] };
    const g = groups.groups.find((x) => x.name === "addon.open-cluster-management.io")!;
    expect(g.versions.map((v) => v.version)).toEqual(["v1beta1", "v1alpha1"]);
    expect(g.preferredVersion.version).toBe("v1beta1");
    const alpha = (await call("GET", `${G}/v1alpha1`)).body as { resources: { name: string }[] };
    expect(alpha.resources.map((r) => r.name).sort()).toEqual([
      "addondeploymentconfigs",
      "addontemplates",
      "clustermanagementaddons",
      "clustermanagementaddons/status",
      "managedclusteraddons",
      "managedclusteraddons/status",
    ]);
    const beta = (await call("GET", `${G}/v1beta1`)).body as { resources: { name: string }[] };
    expect(beta.resources.map((r) => r.name).sort()).toEqual([
      "addondeploymentconfigs",
      "clustermanagementaddons",
      "clustermanagementaddons/status",
      "managedclusteraddons",
      "managedclusteraddons/status",
    ]);
  });

  it("a v1alpha1 ClusterManagementAddOn reads as v1beta1 with defaultConfigs, and back", async () => {
    const cma = {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "conv" },
      spec: {
        addOnMeta: { displayName: "Conv", description: "d" },
        supportedConfigs: [
          { group: "addon.open-cluster-management.io", resource: "addondeploymentconfigs" },
          { group: "addon.open-cluster-management.io", resource: "addontemplates", defaultConfig: { name: "conv-template" } },
        ],
      },
    };
    const created = await call("POST", CMA1, cma);
    expect(created.status).toBe(201);
    expect(created.body.spec.installStrategy).toEqual({ type: "Manual" });
    const beta = (await call("GET", `${CMA2}/conv`)).body;
    expect(beta.apiVersion).toBe("addon.open-cluster-management.io/v1beta1");
    expect(beta.spec.supportedConfigs).toBeUndefined();
    expect(beta.spec.defaultConfigs).toEqual([
      { group: "addon.open-cluster-management.io", resource: "addondeploymentconfigs", name: "__reserved_no_default__" },
      { group: "addon.open-cluster-management.io", resource: "addontemplates", name: "conv-template" },
    ]);
    // A merge patch through v1beta1 is computed on the v1beta1 form and stored as v1alpha1.
    const patched = await call("PATCH", `${CMA2}/conv`, { spec: { addOnMeta: { displayName: "Conv 2" } } }, { contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    expect(patched.body.apiVersion).toBe("addon.open-cluster-management.io/v1beta1");
    const alpha = (await call("GET", `${CMA1}/conv`)).body;
    expect(alpha.spec.addOnMeta.displayName).toBe("Conv 2");
    expect(alpha.spec.supportedConfigs).toEqual(cma.spec.supportedConfigs);
    expect(alpha.metadata.resourceVersion).toBe(patched.body.metadata.resourceVersion);
  });

  it("a v1beta1 ManagedClusterAddOn's install-namespace annotation is v1alpha1's spec.installNamespace", async () => {
    const created = await call("POST", MCA2, {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "beta", annotations: { "addon.open-cluster-management.io/v1alpha1-install-namespace": "beta-ns" } },
      spec: {},
    });
    expect(created.status).toBe(201);
    expect(created.body.metadata.annotations).toEqual({ "addon.open-cluster-management.io/v1alpha1-install-namespace": "beta-ns" });
    const alpha = (await call("GET", `${MCA1}/beta`)).body;
    expect(alpha.spec.installNamespace).toBe("beta-ns");
    expect(alpha.metadata.annotations).toBeUndefined();
    // v1alpha1's default install namespace reads as the annotation in v1beta1.
    expect(
      (
        await call("POST", MCA1, {
          apiVersion: "addon.open-cluster-management.io/v1alpha1",
          kind: "ManagedClusterAddOn",
          metadata: { name: "alpha" },
          spec: {},
        })
      ).status,
    ).toBe(201);
    const beta = (await call("GET", `${MCA2}/alpha`)).body;
    expect(beta.metadata.annotations["addon.open-cluster-management.io/v1alpha1-install-namespace"]).toBe("open-cluster-management-agent-addon");
    expect(beta.spec.installNamespace).toBeUndefined();
  });

  it("status registrations convert between signerName and typed registrations", async () => {
    await call("POST", MCA1, { apiVersion: "addon.open-cluster-management.io/v1alpha1", kind: "ManagedClusterAddOn", metadata: { name: "regs" }, spec: {} });
    const status = {
      registrations: [
        {
          signerName: "kubernetes.io/kube-apiserver-client",
          subject: { user: "system:open-cluster-management:cluster:addon-c1:addon:regs:agent:regs-agent", groups: ["g"] },
        },
        { signerName: "example.com/signer", subject: { user: "u", organizationUnit: ["ou"] } },
      ],
      kubeClientDriver: "token",
      configReferences: [
        {
          group: "addon.open-cluster-management.io",
          resource: "addondeploymentconfigs",
          namespace: NS,
          name: "cfg",
          desiredConfig: { namespace: NS, name: "cfg", specHash: "h" },
        },
      ],
    };
    const put = await call("PATCH", `${MCA1}/regs/status`, { status }, { contentType: "application/merge-patch+json" });
    expect(put.status).toBe(200);
    const beta = (await call("GET", `${MCA2}/regs`)).body;
    expect(beta.status.registrations).toEqual([
      {
        type: "kubeClient",
        kubeClient: { subject: { user: "system:open-cluster-management:cluster:addon-c1:addon:regs:agent:regs-agent", groups: ["g"] }, driver: "token" },
      },
      { type: "customSigner", customSigner: { signerName: "example.com/signer", subject: { user: "u", organizationUnits: ["ou"] } } },
    ]);
    expect(beta.status.kubeClientDriver).toBeUndefined();
    expect(beta.status.configReferences).toEqual([
      { group: "addon.open-cluster-management.io", resource: "addondeploymentconfigs", desiredConfig: { namespace: NS, name: "cfg", specHash: "h" } },
    ]);
    // Written back through v1beta1, the v1alpha1 form is restored.
    const back = await call("PUT", `${MCA2}/regs/status`, beta);
    expect(back.status).toBe(200);
    const alpha = (await call("GET", `${MCA1}/regs`)).body;
    expect(alpha.status.registrations).toEqual(status.registrations);
    expect(alpha.status.kubeClientDriver).toBe("token");
    expect(alpha.status.configReferences).toEqual(status.configReferences);
  });

  it("a watch through v1beta1 sends v1beta1 objects", async () => {
    const r = await call("GET", `${MCA2}?watch=true&resourceVersion=0&timeoutSeconds=1`);
    expect(r.status).toBe(200);
    const events = (
      typeof r.body === "string"
        ? r.body
            .trim()
            .split("\n")
            .map((l: string) => JSON.parse(l))
        : [r.body]
    ) as { type: string; object: { apiVersion: string; metadata: { name: string; annotations?: Record<string, string> } } }[];
    const alpha = events.find((e) => e.object.metadata.name === "alpha")!;
    expect(alpha.type).toBe("ADDED");
    expect(alpha.object.apiVersion).toBe("addon.open-cluster-management.io/v1beta1");
    expect(alpha.object.metadata.annotations?.["addon.open-cluster-management.io/v1alpha1-install-namespace"]).toBe("open-cluster-management-agent-addon");
  });

  it("kubectl's table shows AVAILABLE, DEGRADED and PROGRESSING in both versions", async () => {
    for (const url of [MCA1, MCA2]) {
      const table = (await call("GET", url, undefined, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } })).body as {
        columnDefinitions: { name: string }[];
      };
      expect(table.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Available", "Degraded", "Progressing"]);
    }
  });

  it("an AddOnDeploymentConfig is the same in both versions; unimplemented fields are refused", async () => {
    const body = {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "AddOnDeploymentConfig",
      metadata: { name: "cfg" },
      spec: { customizedVariables: [{ name: "LOG_LEVEL", value: "4" }], nodePlacement: { nodeSelector: { a: "b" } } },
    };
    const created = await call("POST", ADC2, body);
    expect(created.status).toBe(201);
    expect(created.body.spec.agentInstallNamespace).toBe("open-cluster-management-agent-addon");
    expect((await call("GET", `${ADC1}/cfg`)).body.spec.customizedVariables).toEqual([{ name: "LOG_LEVEL", value: "4" }]);
    const proxied = await call("POST", ADC1, {
      ...body,
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      metadata: { name: "proxied" },
      spec: { proxyConfig: { httpProxy: "http://p", caBundle: "Y2E=" } },
    });
    expect(proxied.status).toBe(422);
    expect(proxied.body.details.causes).toEqual([
      {
        reason: "FieldValueForbidden",
        message: "Forbidden: a proxy CA bundle is not implemented by this hub's add-on manager",
        field: "spec.proxyConfig.caBundle",
      },
    ]);
    const badVar = await call("POST", ADC1, {
      ...body,
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      metadata: { name: "badvar" },
      spec: { customizedVariables: [{ name: "1x", value: "v" }] },
    });
    expect(badVar.status).toBe(422);
    expect(badVar.body.details.causes[0].field).toBe("spec.customizedVariables[0].name");
    const badQuantity = await call("POST", ADC1, {
      ...body,
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      metadata: { name: "badq" },
      spec: { resourceRequirements: [{ containerID: "deployments:*:*", resources: { limits: { cpu: "lots" } } }] },
    });
    expect(badQuantity.status).toBe(422);
    expect(badQuantity.body.details.causes[0].field).toBe("spec.resourceRequirements[0].resources.limits.cpu");
    const badID = await call("POST", ADC1, {
      ...body,
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      metadata: { name: "badid" },
      spec: { resourceRequirements: [{ containerID: "services:a:b", resources: {} }] },
    });
    expect(badID.status).toBe(422);
    expect(badID.body.details.causes[0].field).toBe("spec.resourceRequirements[0].containerID");
    for (const name of ["proxied", "badvar", "badq", "badid"]) expect((await call("GET", `${ADC1}/${name}`)).status).toBe(404);
  });

  it("bad input: an unsupported config resource, a CustomSigner template, an empty agentSpec, a wrong apiVersion", async () => {
    const cma = await call("POST", CMA2, {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "bad-config" },
      spec: { defaultConfigs: [{ group: "example.com", resource: "widgets", name: "w" }] },
    });
    expect(cma.status).toBe(422);
    expect(cma.body.details.causes).toEqual([
      {
        reason: "FieldValueNotSupported",
        message: 'Unsupported value: "example.com": supported values: "addon.open-cluster-management.io"',
        field: "spec.defaultConfigs[0].group",
      },
    ]);
    const signer = await call("POST", TEMPLATES, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "signer" },
      spec: {
        addonName: "signer",
        agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" } }] } },
        registration: [{ type: "CustomSigner", customSigner: { signerName: "a/b" } }],
      },
    });
    expect(signer.status).toBe(422);
    expect(signer.body.details.causes[0].field).toBe("spec.registration[0].type");
    const empty = await call("POST", TEMPLATES, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "empty" },
      spec: { addonName: "empty", agentSpec: {} },
    });
    expect(empty.status).toBe(422);
    expect(empty.body.details.causes[0].field).toBe("spec.agentSpec.workload.manifests");
    const wrong = await call("POST", CMA2, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "wrong" },
      spec: {},
    });
    expect(wrong.status).toBe(400);
    // OCM's pre-delete hooks and hosted mode are marks the manager does not act on: refused, not deployed as ordinary manifests.
    const hook = await call("POST", TEMPLATES, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "hook" },
      spec: {
        addonName: "hook",
        agentSpec: {
          workload: {
            manifests: [
              { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" } },
              {
                apiVersion: "batch/v1",
                kind: "Job",
                metadata: { name: "cleanup", namespace: "default", annotations: { "addon.open-cluster-management.io/addon-pre-delete": "" } },
              },
            ],
          },
        },
      },
    });
    expect(hook.status).toBe(422);
    expect(hook.body.details.causes[0]).toMatchObject({
      reason: "FieldValueForbidden",
      field: "spec.agentSpec.workload.manifests[1].metadata.annotations[addon.open-cluster-management.io/addon-pre-delete]",
    });
    const hosted = await call("POST", MCA1, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ManagedClusterAddOn",
      metadata: { name: "hosted", annotations: { "addon.open-cluster-management.io/hosting-cluster-name": "other" } },
      spec: {},
    });
    expect(hosted.status).toBe(422);
    expect(hosted.body.details.causes[0].field).toBe("metadata.annotations[addon.open-cluster-management.io/hosting-cluster-name]");
    for (const url of [`${CMA1}/bad-config`, `${TEMPLATES}/signer`, `${TEMPLATES}/empty`, `${CMA1}/wrong`, `${TEMPLATES}/hook`, `${MCA1}/hosted`])
      expect((await call("GET", url)).status).toBe(404);
  });

  it("list-maps refuse duplicates as kube-apiserver does; a SingleNamespace hub permission needs its namespace", async () => {
    const tpl = { group: "addon.open-cluster-management.io", resource: "addontemplates" };
    const dup = await call("POST", CMA1, {
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "dup" },
      spec: {
        supportedConfigs: [
          { ...tpl, defaultConfig: { name: "a" } },
          { ...tpl, defaultConfig: { name: "b" } },
        ],
      },
    });
    expect(dup.status).toBe(422);
    expect(dup.body.details.causes).toEqual([
      {
        reason: "FieldValueDuplicate",
        field: "spec.supportedConfigs[1]",
        message: 'Duplicate value: map[string]interface {}{"group":"addon.open-cluster-management.io", "resource":"addontemplates"}',
      },
    ]);
    const dupBeta = await call("POST", CMA2, {
      apiVersion: "addon.open-cluster-management.io/v1beta1",
      kind: "ClusterManagementAddOn",
      metadata: { name: "dup" },
      spec: {
        defaultConfigs: [
          { ...tpl, name: "a" },
          { ...tpl, name: "b" },
        ],
      },
    });
    expect(dupBeta.status).toBe(422);
    expect(dupBeta.body.details.causes[0].field).toBe("spec.defaultConfigs[1]");
    const permission = (p: unknown) => ({
      apiVersion: "addon.open-cluster-management.io/v1alpha1",
      kind: "AddOnTemplate",
      metadata: { name: "perm" },
      spec: {
        addonName: "perm",
        agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" } }] } },
        registration: [{ type: "KubeClient", kubeClient: { hubPermissions: [p] } }],
      },
    });
    const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" };
    const missing = await call("POST", TEMPLATES, permission({ type: "SingleNamespace" }));
    expect(missing.status).toBe(422);
    expect(missing.body.details.causes).toEqual([
      {
        reason: "FieldValueRequired",
        field: "spec.registration[0].kubeClient.hubPermissions[0].singleNamespace",
        message: "Required value: single namespace is required when the HubPermission type is SingleNamespace",
      },
    ]);
    const empty = await call("POST", TEMPLATES, permission({ type: "SingleNamespace", singleNamespace: { namespace: "", roleRef } }));
    expect(empty.status).toBe(422);
    expect(empty.body.details.causes[0].field).toBe("spec.registration[0].kubeClient.hubPermissions[0].singleNamespace.namespace");
    for (const url of [`${CMA1}/dup`, `${TEMPLATES}/perm`]) expect((await call("GET", url)).status).toBe(404);
    expect((await call("POST", TEMPLATES, permission({ type: "SingleNamespace", singleNamespace: { namespace: "team", roleRef } }))).status).toBe(201);
  });

  it("server-side apply through v1beta1 creates and updates the stored v1alpha1 object", async () => {
    const yaml = [
      "apiVersion: addon.open-cluster-management.io/v1beta1",
      "kind: ClusterManagementAddOn",
      "metadata:",
      "  name: applied",
      "spec:",
      "  addOnMeta:",
      "    displayName: Applied",
      "  installStrategy:",
      "    type: Placements",
      "    placements:",
      "    - name: global",
      "      namespace: default",
    ].join("\n");
    const first = await call("PATCH", `${CMA2}/applied?fieldManager=kubectl`, yaml, { contentType: "application/apply-patch+yaml" });
    expect(first.status).toBe(201);
    expect(first.body.spec.installStrategy.placements[0].rolloutStrategy).toEqual({ type: "All" });
    const again = await call("PATCH", `${CMA2}/applied?fieldManager=kubectl`, yaml.replace("Applied", "Applied again"), {
      contentType: "application/apply-patch+yaml",
    });
    expect(again.status).toBe(200);
    const alpha = (await call("GET", `${CMA1}/applied`)).body;
    expect(alpha.spec.addOnMeta.displayName).toBe("Applied again");
    expect(alpha.apiVersion).toBe("addon.open-cluster-management.io/v1alpha1");
  });
});
