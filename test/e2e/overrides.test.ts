/**
 * KubeFleet's and Karmada's overrides end to end (docs/overrides.md): real kubectl against a real
 * hub (`wrangler dev`, HTTPS) with three simulated member clusters run by real agent processes,
 * each labelled with a region and a size. One Deployment is placed on the three by one
 * ClusterResourcePlacement with a ResourceOverride (the image's registry per region, the replicas
 * from `${MEMBER-CLUSTER-LABEL-KEY-size}`), a ClusterResourceOverride (a label on the namespace
 * and everything in it from `${MEMBER-CLUSTER-LABEL-KEY-region}`) and a Karmada OverridePolicy (an
 * annotation on one cluster by name, applied after KubeFleet's: docs/overrides.md "One order
 * everywhere"): each member's own API (through the hub's proxy) shows exactly its rendered
 * object; changing the override for one region rolls out to that region's clusters only, and
 * changing the OverridePolicy to the one cluster it names, the others' works untouched.
 *
 * (A ClusterResourceOverride selecting the namespace also patches the Namespace object itself,
 * as KubeFleet's does, so the Deployment's image and replicas come from a ResourceOverride.)
 *
 * Karmada's OverridePolicy applies where Karmada's propagation policies render (docs/overrides.md
 * "Karmada"): a Deployment placed on the three by a PropagationPolicy gets an annotation on one
 * cluster by name and a registry for the eu region; moving the annotation to another cluster
 * writes the works of the two clusters concerned only.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, startHub, type Hub } from "../../scripts/hub-process.ts";
import { joinMembers, kubectlWith, scratchDir, stopAll, waitFor, writeAdminKubeconfig, type AgentProcess } from "./support.ts";

const { dir, file } = scratchDir("flotilla-overrides-");
const CRP = "/apis/placement.kubernetes-fleet.io/v1/clusterresourceplacements";
const WORKS = "/apis/work.open-cluster-management.io/v1/manifestworks";
const MEMBERS = [
  ["ov-eu-1", "eu", "2"],
  ["ov-us-1", "us", "3"],
  ["ov-us-2", "us", "1"],
] as const;

let hub: Hub;
let kubeconfig: string;
const agents: AgentProcess[] = [];
const { kubectl } = kubectlWith(() => kubeconfig, dir);

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
  await joinMembers(
    hub,
    MEMBERS.map(([name, region, size]) => ({ name, labels: { region, size } })),
    { stateDir: dir, agents },
  );
});

afterAll(() => stopAll(agents, hub));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const crp = async (): Promise<any> => (await admin(hub, "GET", `${CRP}/regional`)).body;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const cond = (o: any, type: string) => (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const works = async (): Promise<Record<string, any>> =>
  Object.fromEntries(
    (
      (await admin(hub, "GET", `${WORKS}?labelSelector=${encodeURIComponent("kubernetes-fleet.io/parent-CRP=regional")}`)).body.items as {
        metadata: { namespace: string };
      }[]
    ).map((w) => [w.metadata.namespace, w]),
  );

/** What a simulated cluster runs: the object of `plural` (group `group`) named `name`, from its state file. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function running(cluster: string, group: string, plural: string, name: string): any {
  try {
    const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
      objects: { group: string; plural: string; object: { metadata: { name: string } } }[];
    };
    return state.objects.find((o) => o.group === group && o.plural === plural && o.object.metadata.name === name)?.object;
  } catch {
    return undefined;
  }
}
const image = (d: { spec: { template: { spec: { containers: { image: string }[] } } } } | undefined) => d?.spec.template.spec.containers[0]?.image;

const roYaml = (usRegistry: string) =>
  [
    "apiVersion: placement.kubernetes-fleet.io/v1",
    "kind: ResourceOverride",
    "metadata: {name: web, namespace: regional}",
    "spec:",
    "  placement: {name: regional}",
    "  resourceSelectors: [{group: apps, version: v1, kind: Deployment, name: web}]",
    "  policy:",
    "    overrideRules:",
    "    - clusterSelector: {clusterSelectorTerms: [{labelSelector: {matchLabels: {region: eu}}}]}",
    "      jsonPatchOverrides: [{op: replace, path: /spec/template/spec/containers/0/image, value: 'eu.registry.example/web:1.0'}]",
    "    - clusterSelector: {clusterSelectorTerms: [{labelSelector: {matchLabels: {region: us}}}]}",
    `      jsonPatchOverrides: [{op: replace, path: /spec/template/spec/containers/0/image, value: '${usRegistry}/web:1.0'}]`,
    "    - clusterSelector: {clusterSelectorTerms: []}",
    "      jsonPatchOverrides: [{op: replace, path: /spec/replicas, value: '${MEMBER-CLUSTER-LABEL-KEY-size}'}]",
    "",
  ].join("\n");

/** Karmada's OverridePolicy of the namespace: an annotation on ov-us-2, by name. */
const teamYaml = (value: string) =>
  [
    "apiVersion: policy.karmada.io/v1alpha1",
    "kind: OverridePolicy",
    "metadata: {name: team, namespace: regional}",
    "spec:",
    "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]",
    "  overrideRules:",
    "  - targetCluster: {clusterNames: [ov-us-2]}",
    "    overriders:",
    `      annotationsOverrider: [{operator: add, value: {team: ${value}}}]`,
    "",
  ].join("\n");

describe("KubeFleet's and Karmada's overrides on one placement with kubectl, wrangler dev and agents", () => {
  it("runs each cluster's rendered Deployment, and rolls an override change out to the affected clusters only", async () => {
    const app = file(
      "app.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: regional}",
        "---",
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata: {name: web, namespace: regional, labels: {app: web}}",
        "spec:",
        "  replicas: 1",
        "  selector: {matchLabels: {app: web}}",
        "  template:",
        "    metadata: {labels: {app: web}}",
        "    spec: {containers: [{name: web, image: 'docker.io/library/web:1.0'}]}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", app)).toContain("deployment.apps/web created");
    expect(await kubectl("apply", "-f", file("ro.yaml", roYaml("us.registry.example")))).toContain(
      "resourceoverride.placement.kubernetes-fleet.io/web created",
    );
    const cro = file(
      "cro.yaml",
      [
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterResourceOverride",
        "metadata: {name: regional-label}",
        "spec:",
        "  placement: {name: regional}",
        "  clusterResourceSelectors: [{group: '', version: v1, kind: Namespace, name: regional}]",
        "  policy:",
        "    overrideRules:",
        "    - clusterSelector: {clusterSelectorTerms: []}",
        "      jsonPatchOverrides: [{op: add, path: /metadata/labels/fleet-region, value: '${MEMBER-CLUSTER-LABEL-KEY-region}'}]",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", cro)).toContain("clusterresourceoverride.placement.kubernetes-fleet.io/regional-label created");
    expect(await kubectl("get", "resourceoverridesnapshots", "-n", "regional", "-o", "name")).toContain("web-0");
    expect(await kubectl("apply", "-f", file("team.yaml", teamYaml("platform")))).toContain("overridepolicy.policy.karmada.io/team created");
    const placement = file(
      "crp.yaml",
      [
        "apiVersion: placement.kubernetes-fleet.io/v1",
        "kind: ClusterResourcePlacement",
        "metadata: {name: regional}",
        "spec:",
        "  resourceSelectors: [{group: '', version: v1, kind: Namespace, name: regional}]",
        "  policy: {placementType: PickAll}",
        "  strategy:",
        "    rollingUpdate: {maxUnavailable: 1, unavailablePeriodSeconds: 1}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", placement)).toContain("clusterresourceplacement.placement.kubernetes-fleet.io/regional created");

    const want = {
      "ov-eu-1": ["eu.registry.example/web:1.0", 2],
      "ov-us-1": ["us.registry.example/web:1.0", 3],
      "ov-us-2": ["us.registry.example/web:1.0", 1],
    } as Record<string, [string, number]>;
    const team = (c: string) => (c === "ov-us-2" ? "platform" : undefined);
    await waitFor(
      "each cluster runs its rendered Deployment",
      async () =>
        MEMBERS.every(([c]) => {
          const d = running(c, "apps", "deployments", "web");
          return image(d) === want[c]![0] && d.spec.replicas === want[c]![1] && d.metadata.annotations?.team === team(c);
        }),
      60_000,
    );
    // Each member's own API (the hub's proxy to it) shows exactly its rendered Deployment.
    for (const [c] of MEMBERS) {
      const r = await admin(hub, "GET", `/clusters/${c}/proxy/apis/apps/v1/namespaces/regional/deployments/web`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect([image(r.body), r.body.spec.replicas, r.body.metadata.annotations?.team]).toEqual([...want[c]!, team(c)]);
    }
    for (const [c, region] of MEMBERS) {
      expect(running(c, "", "namespaces", "regional")?.metadata.labels?.["fleet-region"]).toBe(region);
      expect(running(c, "apps", "deployments", "web")?.metadata.labels?.["fleet-region"]).toBe(region);
    }
    await waitFor("the placement Available", async () => cond(await crp(), "ClusterResourcePlacementAvailable")?.status === "True", 30_000);
    const c = await crp();
    expect(cond(c, "ClusterResourcePlacementOverridden")).toMatchObject({ status: "True", reason: "OverriddenSucceeded" });
    expect(c.status.placementStatuses.map((s: { applicableResourceOverrides?: unknown }) => s.applicableResourceOverrides)).toEqual([
      [{ name: "web-0", namespace: "regional" }],
      [{ name: "web-0", namespace: "regional" }],
      [{ name: "web-0", namespace: "regional" }],
    ]);
    const before = await works();
    expect(JSON.parse(before["ov-us-2"].metadata.annotations["policy.karmada.io/applied-overrides"])).toEqual([
      { policyName: "team", overriders: { annotationsOverrider: [{ operator: "add", value: { team: "platform" } }] } },
    ]);
    expect(before["ov-us-1"].metadata.annotations["policy.karmada.io/applied-overrides"]).toBeUndefined();

    // Change the us registry: only the us clusters' works change; the eu cluster keeps its work and object.
    expect(await kubectl("apply", "-f", file("ro2.yaml", roYaml("us-mirror.example")))).toContain("configured");
    await waitFor(
      "the us clusters run the mirror",
      async () =>
        image(running("ov-us-1", "apps", "deployments", "web")) === "us-mirror.example/web:1.0" &&
        image(running("ov-us-2", "apps", "deployments", "web")) === "us-mirror.example/web:1.0",
      60_000,
    );
    const after = await works();
    expect(after["ov-eu-1"].metadata.generation).toBe(before["ov-eu-1"].metadata.generation);
    expect(after["ov-eu-1"].metadata.resourceVersion).toBe(before["ov-eu-1"].metadata.resourceVersion);
    expect(after["ov-us-1"].metadata.generation).toBe(before["ov-us-1"].metadata.generation + 1);
    expect(image(running("ov-eu-1", "apps", "deployments", "web"))).toBe("eu.registry.example/web:1.0");
    expect(running("ov-us-1", "apps", "deployments", "web").spec.replicas).toBe(3);
    await waitFor("the placement Available again", async () => cond(await crp(), "ClusterResourcePlacementAvailable")?.status === "True", 30_000);

    // Change the OverridePolicy (it names ov-us-2 alone): only ov-us-2's work is written.
    const mid = await works();
    expect(await kubectl("apply", "-f", file("team2.yaml", teamYaml("payments")))).toContain("configured");
    await waitFor(
      "ov-us-2 runs the new annotation",
      async () => running("ov-us-2", "apps", "deployments", "web")?.metadata.annotations?.team === "payments",
      60_000,
    );
    const last = await works();
    for (const c of ["ov-eu-1", "ov-us-1"]) expect(last[c].metadata.generation).toBe(mid[c].metadata.generation);
    expect(last["ov-us-2"].metadata.generation).toBe(mid["ov-us-2"].metadata.generation + 1);
    expect(running("ov-us-1", "apps", "deployments", "web").metadata.annotations?.team).toBeUndefined();
    await waitFor("the placement Available again", async () => cond(await crp(), "ClusterResourcePlacementAvailable")?.status === "True", 30_000);

    expect(await kubectl("delete", "crp", "regional")).toContain("deleted");
    await waitFor("the works gone", async () => Object.keys(await works()).length === 0, 30_000);
  });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const karmadaWorks = async (): Promise<Record<string, any>> =>
  Object.fromEntries(
    ((await admin(hub, "GET", WORKS)).body.items as { metadata: { name: string; namespace: string } }[])
      .filter((w) => w.metadata.name === "pp.karmada-regional.web-work")
      .map((w) => [w.metadata.namespace, w]),
  );

/** The Deployment `name` of `namespace` a simulated cluster runs. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function runningIn(cluster: string, namespace: string, name: string): any {
  try {
    const state = JSON.parse(readFileSync(path.join(dir, `${cluster}.json`), "utf8")) as {
      objects: { group: string; plural: string; object: { metadata: { name: string; namespace?: string } } }[];
    };
    return state.objects.find(
      (o) => o.group === "apps" && o.plural === "deployments" && o.object.metadata.name === name && o.object.metadata.namespace === namespace,
    )?.object;
  } catch {
    return undefined;
  }
}

const opYaml = (cluster: string) =>
  [
    "apiVersion: policy.karmada.io/v1alpha1",
    "kind: OverridePolicy",
    "metadata: {name: team, namespace: karmada-regional}",
    "spec:",
    "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]",
    "  overrideRules:",
    `  - targetCluster: {clusterNames: [${cluster}]}`,
    "    overriders:",
    "      annotationsOverrider: [{operator: add, value: {team: platform}}]",
    "  - targetCluster: {labelSelector: {matchLabels: {region: eu}}}",
    "    overriders:",
    "      imageOverrider: [{component: Registry, operator: replace, value: eu.registry.example}]",
    "",
  ].join("\n");

describe("Karmada's OverridePolicy with kubectl, wrangler dev and agents", () => {
  it("runs each cluster's Deployment as its PropagationPolicy and OverridePolicy render it; a change reaches the affected clusters only", async () => {
    const app = file(
      "karmada-app.yaml",
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: karmada-regional}",
        "---",
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata: {name: web, namespace: karmada-regional, labels: {app: web}}",
        "spec:",
        "  replicas: 1",
        "  selector: {matchLabels: {app: web}}",
        "  template:",
        "    metadata: {labels: {app: web}}",
        "    spec: {containers: [{name: web, image: 'docker.io/library/web:1.0'}]}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", app)).toContain("deployment.apps/web created");
    expect(await kubectl("apply", "-f", file("op.yaml", opYaml("ov-us-1")))).toContain("overridepolicy.policy.karmada.io/team created");
    const pp = file(
      "pp.yaml",
      [
        "apiVersion: policy.karmada.io/v1alpha1",
        "kind: PropagationPolicy",
        "metadata: {name: web, namespace: karmada-regional}",
        "spec:",
        "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]",
        "  placement: {clusterAffinity: {clusterNames: [ov-eu-1, ov-us-1, ov-us-2]}}",
        "",
      ].join("\n"),
    );
    expect(await kubectl("apply", "-f", pp)).toContain("propagationpolicy.policy.karmada.io/web created");
    const want = (annotated: string) =>
      MEMBERS.every(([c, region]) => {
        const d = runningIn(c, "karmada-regional", "web");
        if (!d) return false;
        const img = region === "eu" ? "eu.registry.example/library/web:1.0" : "docker.io/library/web:1.0";
        return image(d) === img && (d.metadata.annotations?.team === "platform") === (c === annotated);
      });
    await waitFor("each cluster runs its rendered Deployment", async () => want("ov-us-1"), 60_000);
    const before = await karmadaWorks();
    expect(JSON.parse(before["ov-us-1"].metadata.annotations["policy.karmada.io/applied-overrides"])[0].policyName).toBe("team");
    expect(before["ov-us-2"].metadata.annotations["policy.karmada.io/applied-overrides"]).toBeUndefined();

    // The annotation moves to ov-us-2: the eu cluster's work is not written.
    expect(await kubectl("apply", "-f", file("op2.yaml", opYaml("ov-us-2")))).toContain("configured");
    await waitFor("the annotation moved", async () => want("ov-us-2"), 60_000);
    const after = await karmadaWorks();
    // Its spec is not written again (its agent's status reports may still move its resourceVersion).
    expect(after["ov-eu-1"].metadata.generation).toBe(before["ov-eu-1"].metadata.generation);
    expect(after["ov-us-1"].metadata.generation).toBe(before["ov-us-1"].metadata.generation + 1);

    // Deleting the policy leaves what it placed (as Karmada's, docs/karmada.md).
    expect(await kubectl("delete", "pp", "web", "-n", "karmada-regional")).toContain("deleted");
    await waitFor(
      "the policy gone",
      async () => (await admin(hub, "GET", "/apis/policy.karmada.io/v1alpha1/namespaces/karmada-regional/propagationpolicies/web")).status === 404,
      30_000,
    );
  });
});
