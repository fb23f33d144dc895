/**
 * Rendering of a template add-on (src/addons/render.ts) and its health (src/addons/health.ts),
 * as OCM's template add-on and workload availability prober do.
 */
import { describe, expect, it } from "vitest";
import { renderDeployWork, variablesOf } from "../../src/addons/render.ts";
import { availability, manifestApplied } from "../../src/addons/health.ts";

const owner = { apiVersion: "addon.open-cluster-management.io/v1alpha1", kind: "ManagedClusterAddOn", name: "hello", uid: "u1" };
const deployment = (annotations?: Record<string, string>) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "agent", namespace: "{{INSTALL_NAMESPACE}}", ...(annotations ? { annotations } : {}) },
  spec: { template: { spec: { containers: [{ name: "a", image: "img:{{VERSION}}", args: ["{{CLUSTER_NAME}}", "{{HUB_KUBECONFIG}}", "{{UNKNOWN}}"] }] } } },
});

describe("template add-on rendering", () => {
  it("replaces OCM's built-in and customized variables; built-ins win", () => {
    const vars = variablesOf({
      addon: "hello",
      cluster: "c1",
      template: { registration: [{ type: "KubeClient" }] },
      config: {
        customizedVariables: [
          { name: "CLUSTER_NAME", value: "x" },
          { name: "VERSION", value: "2" },
        ],
      },
      owner,
    });
    expect(Object.fromEntries(vars)).toEqual({
      CLUSTER_NAME: "c1",
      VERSION: "2",
      INSTALL_NAMESPACE: "open-cluster-management-agent-addon",
      HUB_KUBECONFIG: "/managed/hub-kubeconfig/kubeconfig",
    });
    const work = renderDeployWork({
      addon: "hello",
      cluster: "c1",
      template: { agentSpec: { workload: { manifests: [deployment()] } } },
      config: { customizedVariables: [{ name: "VERSION", value: "2" }], agentInstallNamespace: "hello-ns" },
      owner,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const [ns, dep] = (work.spec as { workload: { manifests: Record<string, any>[] } }).workload.manifests;
    expect(ns).toEqual({ apiVersion: "v1", kind: "Namespace", metadata: { name: "hello-ns" } });
    expect(dep!.metadata.namespace).toBe("hello-ns");
    // No registration: HUB_KUBECONFIG does not apply and stays as written, as an unknown variable.
    expect(dep!.spec.template.spec.containers[0].image).toBe("img:2");
    expect(dep!.spec.template.spec.containers[0].args).toEqual(["c1", "{{HUB_KUBECONFIG}}", "{{UNKNOWN}}"]);
    expect(work.metadata.name).toBe("addon-hello-deploy-0");
    expect(work.metadata.annotations).toEqual({ "addon.flotilla.dev/install-namespace": "hello-ns", "addon.flotilla.dev/health-check-mode": "Customized" });
  });

  it("injects the variables into workloads' containers and mounts the hub kubeconfig of a registering add-on, as OCM's template add-on", () => {
    const render = (registration?: unknown[]) =>
      renderDeployWork({
        addon: "hello",
        cluster: "c1",
        template: { agentSpec: { workload: { manifests: [deployment()] } }, ...(registration ? { registration } : {}) },
        config: { customizedVariables: [{ name: "LOG_LEVEL", value: "4" }] },
        owner,
      });
    type Pod = { containers: { env?: { name: string; value: string }[]; volumeMounts?: unknown[] }[]; volumes?: unknown[] };
    const podOf = (work: ReturnType<typeof render>) =>
      (work.spec as { workload: { manifests: { spec: { template: { spec: Pod } } }[] } }).workload.manifests[1]!.spec.template.spec;
    const registered = podOf(render([{ type: "KubeClient" }]));
    expect(registered.containers[0]!.env).toEqual([
      { name: "LOG_LEVEL", value: "4" },
      { name: "CLUSTER_NAME", value: "c1" },
      { name: "INSTALL_NAMESPACE", value: "open-cluster-management-agent-addon" },
      { name: "HUB_KUBECONFIG", value: "/managed/hub-kubeconfig/kubeconfig" },
    ]);
    expect(registered.containers[0]!.volumeMounts).toEqual([{ name: "hub-kubeconfig", mountPath: "/managed/hub-kubeconfig" }]);
    expect(registered.volumes).toEqual([{ name: "hub-kubeconfig", secret: { secretName: "hello-hub-kubeconfig" } }]);
    const plain = podOf(render());
    expect(plain.containers[0]!.env!.map((e) => e.name)).toEqual(["LOG_LEVEL", "CLUSTER_NAME", "INSTALL_NAMESPACE"]);
    expect(plain.containers[0]!.volumeMounts).toBeUndefined();
    expect(plain.volumes).toBeUndefined();
  });

  it("orphans the added install namespace and the manifests annotated deletion-orphan", () => {
    const work = renderDeployWork({
      addon: "hello",
      cluster: "c1",
      template: { agentSpec: { workload: { manifests: [deployment({ "addon.open-cluster-management.io/deletion-orphan": "" })] } } },
      owner,
    });
    expect((work.spec as Record<string, unknown>).deleteOption).toEqual({
      propagationPolicy: "SelectivelyOrphan",
      selectivelyOrphans: {
        orphaningRules: [
          { group: "", resource: "namespaces", name: "open-cluster-management-agent-addon" },
          { group: "apps", resource: "deployments", name: "agent", namespace: "open-cluster-management-agent-addon" },
        ],
      },
    });
  });

  it("applies node placement to pod templates and adds the workload feedback rules once", () => {
    const work = renderDeployWork({
      addon: "hello",
      cluster: "c1",
      template: {
        agentSpec: {
          workload: { manifests: [deployment(), { apiVersion: "v1", kind: "Namespace", metadata: { name: "open-cluster-management-agent-addon" } }] },
          manifestConfigs: [
            {
              resourceIdentifier: { group: "apps", resource: "deployments", name: "agent", namespace: "open-cluster-management-agent-addon" },
              feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "x", path: ".status" }] }],
            },
          ],
        },
      },
      config: { nodePlacement: { nodeSelector: { a: "b" }, tolerations: [{ key: "k", operator: "Exists" }] } },
      owner,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const spec = work.spec as { workload: { manifests: Record<string, any>[] }; manifestConfigs: unknown[]; deleteOption?: unknown };
    expect(spec.workload.manifests).toHaveLength(2);
    expect(spec.deleteOption).toBeUndefined();
    expect(spec.workload.manifests[0]!.spec.template.spec).toMatchObject({ nodeSelector: { a: "b" }, tolerations: [{ key: "k", operator: "Exists" }] });
    expect(spec.manifestConfigs).toEqual([
      {
        resourceIdentifier: { group: "apps", resource: "deployments", name: "agent", namespace: "open-cluster-management-agent-addon" },
        feedbackRules: [{ type: "JSONPaths", jsonPaths: [{ name: "x", path: ".status" }] }, { type: "WellKnownStatus" }],
      },
    ]);
  });

  it("a template without workloads is health mode None: available once applied", () => {
    const work = renderDeployWork({
      addon: "cfg",
      cluster: "c1",
      template: { agentSpec: { workload: { manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "default" } }] } } },
      owner,
    });
    expect(work.metadata.annotations!["addon.flotilla.dev/health-check-mode"]).toBe("None");
    const applied = manifestApplied({ conditions: [{ type: "Applied", status: "True" }] });
    expect(availability("cfg", "None", applied, [], [])).toMatchObject({ status: "True", reason: "WorkApplied" });
  });
});

describe("workload availability probe", () => {
  const probed = [
    { resource: "deployments", name: "agent", namespace: "ns" },
    { resource: "daemonsets", name: "ds", namespace: "ns" },
  ];
  const fb = (resource: string, name: string, values: Record<string, number>) => ({
    resourceMeta: { group: "apps", resource, name, namespace: "ns" },
    statusFeedback: { values: Object.entries(values).map(([n, v]) => ({ name: n, fieldValue: { type: "Integer", integer: v } })) },
  });
  const applied = manifestApplied({ conditions: [{ type: "Applied", status: "True" }] });

  it("is unset before the manifests are applied, and for Lease", () => {
    expect(manifestApplied({ conditions: [] })).toBeNull();
    expect(availability("a", "Customized", null, [], probed)).toBeNull();
    expect(availability("a", "Lease", applied, [], probed)).toBeNull();
    expect(manifestApplied({ conditions: [{ type: "Applied", status: "False", message: "boom" }] })).toMatchObject({
      status: "False",
      reason: "ManifestWorkApplyFailed",
    });
  });

  it("Unknown without feedback, False with a workload not ready, True when all are", () => {
    expect(availability("a", "Customized", applied, [fb("deployments", "agent", { ReadyReplicas: 1 })], probed)).toMatchObject({
      status: "Unknown",
      reason: "NoProbeResult",
    });
    expect(
      availability(
        "a",
        "Customized",
        applied,
        [fb("deployments", "agent", { ReadyReplicas: 0 }), fb("daemonsets", "ds", { NumberReady: 1, DesiredNumberScheduled: 1 })],
        probed,
      ),
    ).toMatchObject({ status: "False", reason: "ProbeUnavailable" });
    expect(
      availability(
        "a",
        "Customized",
        applied,
        [fb("deployments", "agent", { ReadyReplicas: 2 }), fb("daemonsets", "ds", { NumberReady: 1, DesiredNumberScheduled: 1 })],
        probed,
      ),
    ).toMatchObject({ status: "True", reason: "ProbeAvailable", message: "a add-on is available." });
  });
});

describe("deployment config: image mirrors, proxy and container resources", () => {
  it("pulls images from the mirror of their registry, sets the proxy, and sets resources on the containers a containerID names", () => {
    const work = renderDeployWork({
      addon: "hello",
      cluster: "c1",
      template: {
        agentSpec: {
          workload: {
            manifests: [
              deployment(),
              {
                apiVersion: "apps/v1",
                kind: "DaemonSet",
                metadata: { name: "ds", namespace: "x" },
                spec: { template: { spec: { containers: [{ name: "d", image: "docker.io/library/busybox:1" }] } } },
              },
            ],
          },
        },
      },
      config: {
        customizedVariables: [{ name: "VERSION", value: "3" }],
        registries: [
          { source: "img", mirror: "mirror.example.com/img" },
          { source: "docker.io/library", mirror: "quay.io/mirror" },
        ],
        proxyConfig: { httpsProxy: "http://proxy:3128", noProxy: "10.0.0.0/8" },
        resourceRequirements: [
          { containerID: "*:*:*", resources: { requests: { cpu: "10m" } } },
          { containerID: "deployments:agent:a", resources: { limits: { memory: "64Mi" } } },
        ],
      },
      owner,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const [, dep, ds] = (work.spec as { workload: { manifests: Record<string, any>[] } }).workload.manifests;
    expect(dep!.spec.template.spec.containers[0]).toMatchObject({ image: "mirror.example.com/img:3", resources: { limits: { memory: "64Mi" } } });
    expect(ds!.spec.template.spec.containers[0]).toMatchObject({ image: "quay.io/mirror/busybox:1", resources: { requests: { cpu: "10m" } } });
    expect(ds!.spec.template.spec.containers[0].env).toEqual([
      { name: "HTTPS_PROXY", value: "http://proxy:3128" },
      { name: "NO_PROXY", value: "10.0.0.0/8" },
      { name: "VERSION", value: "3" },
      { name: "CLUSTER_NAME", value: "c1" },
      { name: "INSTALL_NAMESPACE", value: "open-cluster-management-agent-addon" },
    ]);
  });
});
