/**
 * Tests of ManifestWork `conditionRules` and raw/watched status feedback in the work agent:
 * OCM's own cases (ocm `pkg/work/spoke/conditions/reader_test.go`,
 * `pkg/work/spoke/statusfeedback/reader_test.go`, the roll-up of `conditions/helpers.go`)
 * translated to tables, then the controller against the simulated member cluster over HTTP.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { startSimulatedCluster } from "../../agent/sim/index.ts";
import type { KubeConfig } from "../../agent/src/kube.ts";
import { kubeConfigFromYaml } from "../../agent/src/kubeconfig.ts";
import { createLogger } from "../../agent/src/log.ts";
import { aggregateRuleCondition, evaluateConditionRules } from "../../agent/src/work/condition-rules.ts";
import { workStatus, type ManifestOutcome } from "../../agent/src/work/conditions.ts";
import { WorkController } from "../../agent/src/work/controller.ts";
import { DynamicClient } from "../../agent/src/work/dynamic.ts";
import { collectFeedback, MAX_JSON_RAW_LENGTH } from "../../agent/src/work/feedback.ts";
import { waitFor } from "../wait.ts";
import type { ConditionRule, ManifestConfig, ManifestWork, Obj } from "../../agent/src/work/types.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "test" },
  status: { readyReplicas: 1, replicas: 2, conditions: [{ type: "Available", status: "True" }] },
};
const job = (conditions: Obj[], succeeded: number) => ({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "test" }, status: { conditions, succeeded } });
const pod = (phase: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "test" },
  status: { conditions: [{ status: "False", type: "Ready" }], phase },
});

describe("OCM conditions/reader_test.go", () => {
  const cases: {
    name: string;
    object: Obj;
    gvk: [string, string, string];
    rule: ConditionRule;
    expected: { type: string; status: string; reason: string; message: string } | undefined;
  }[] = [
    {
      name: "deployment available",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: {
        type: "CEL",
        condition: "Available",
        celExpressions: ['object.status.conditions.exists(c, c.type == "Available" && c.status == "True")'],
        messageExpression: 'result ? "Deployment available" : "Deployment unavailable"',
      },
      expected: { type: "Available", status: "True", reason: "ConditionRuleEvaluated", message: "Deployment available" },
    },
    {
      name: "wrong return type",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "CEL", condition: "Available", celExpressions: ['object.status.conditions.filter(c, c.type == "Available")[0].status'] },
      expected: { type: "Available", status: "False", reason: "ConditionRuleExpressionError", message: "expected bool result, got string" },
    },
    {
      name: "invalid CEL",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "CEL", condition: "Available", celExpressions: ["object.missing"] },
      expected: { type: "Available", status: "False", reason: "ConditionRuleExpressionError", message: "no such key: missing" },
    },
    {
      name: "invalid message CEL",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "CEL", condition: "Available", celExpressions: ["true"], messageExpression: "badcel" },
      expected: {
        type: "Available",
        status: "True",
        reason: "ConditionRuleEvaluated",
        message: "ERROR: <input>:1:1: undeclared reference to 'badcel' (in container '')",
      },
    },
    {
      name: "cel lib function hasConditions",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: {
        type: "CEL",
        condition: "HasConditions",
        celExpressions: [
          'hasConditions(object.status)\n && !hasConditions({})\n && !hasConditions("badtype")\n && !hasConditions({"conditions": []})\n && !hasConditions({"conditions": null})',
        ],
        message: "should work",
      },
      expected: { type: "HasConditions", status: "True", reason: "ConditionRuleEvaluated", message: "should work" },
    },
    {
      name: "Job complete",
      object: job(
        [
          { status: "True", type: "Complete" },
          { status: "True", type: "Another" },
        ],
        1,
      ),
      gvk: ["batch", "v1", "Job"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "True", reason: "ConditionRuleEvaluated", message: "Job is finished" },
    },
    {
      name: "Job failed",
      object: job([{ status: "True", type: "Failed" }], 0),
      gvk: ["batch", "v1", "Job"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "True", reason: "ConditionRuleEvaluated", message: "Job is finished" },
    },
    {
      name: "Job incomplete",
      object: job(
        [
          { status: "False", type: "Complete" },
          { status: "True", type: "Another" },
        ],
        0,
      ),
      gvk: ["batch", "v1", "Job"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "False", reason: "ConditionRuleEvaluated", message: "Job is not finished" },
    },
    {
      name: "Pod complete",
      object: pod("Succeeded"),
      gvk: ["", "v1", "Pod"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "True", reason: "ConditionRuleEvaluated", message: "Pod is in phase Succeeded" },
    },
    {
      name: "Pod failed",
      object: pod("Failed"),
      gvk: ["", "v1", "Pod"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "True", reason: "ConditionRuleEvaluated", message: "Pod is in phase Failed" },
    },
    {
      name: "Pod running",
      object: pod("Running"),
      gvk: ["", "v1", "Pod"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: { type: "Complete", status: "False", reason: "ConditionRuleEvaluated", message: "Pod is in phase Running" },
    },
    {
      name: "a user message overrides the well-known one",
      object: pod("Running"),
      gvk: ["", "v1", "Pod"],
      rule: { type: "WellKnownConditions", condition: "Complete", messageExpression: '"phase: " + object.status.phase' },
      expected: { type: "Complete", status: "False", reason: "ConditionRuleEvaluated", message: "phase: Running" },
    },
    {
      name: "a well-known condition OCM does not know for the kind gives nothing",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "WellKnownConditions", condition: "Complete" },
      expected: undefined,
    },
    {
      name: "without message or messageExpression: Manifest is (not) <condition>",
      object: deployment,
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "CEL", condition: "Scaled", celExpressions: ["object.status.readyReplicas == object.status.replicas"] },
      expected: { type: "Scaled", status: "False", reason: "ConditionRuleEvaluated", message: "Manifest is not Scaled" },
    },
    {
      name: "an expression past Kubernetes' per-call cost limit fails without running",
      object: { ...deployment, data: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, "v"])) },
      gvk: ["apps", "v1", "Deployment"],
      rule: { type: "CEL", condition: "Heavy", celExpressions: ["object.data.all(a, object.data.all(b, object.data.all(c, a != b || b == c)))"] },
      expected: { type: "Heavy", status: "False", reason: "ConditionRuleExpressionError", message: "operation cancelled: actual cost limit exceeded" },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const [group, version, kind] = c.gvk;
      const got = await evaluateConditionRules(c.object, group, version, kind, [c.rule]);
      expect(got[0]).toEqual(c.expected);
      expect(got).toHaveLength(c.expected ? 1 : 0);
    });
  }

  it("expressions are ANDed and stop at the first false", async () => {
    const got = await evaluateConditionRules(deployment, "apps", "v1", "Deployment", [
      { type: "CEL", condition: "X", celExpressions: ["true", "false", "object.missing"] },
    ]);
    expect(got).toEqual([{ type: "X", status: "False", reason: "ConditionRuleEvaluated", message: "Manifest is not X" }]);
  });
});

describe("OCM statusfeedback/reader_test.go: raw JSON values", () => {
  const rule = (name: string, path: string) => [{ type: "JSONPaths" as const, jsonPaths: [{ name, path }] }];
  it("rawjson value format: a list is Go's JSON text", () => {
    expect(collectFeedback(pod("Succeeded"), "", "v1", "Pod", rule("conditions", ".status.conditions"))).toEqual({
      values: [{ name: "conditions", fieldValue: { type: "JsonRaw", jsonRaw: '[{"status":"False","type":"Ready"}]' } }],
      errors: [],
    });
  });
  it("filtered rawjson value format: several matches are one list", () => {
    const obj = {
      status: {
        conditions: [
          { type: "Cond1", status: "true" },
          { type: "Cond2", status: "false" },
          { type: "Cond3", status: "true" },
        ],
      },
    };
    expect(collectFeedback(obj, "apps", "v1", "Deployment", rule("conditions", '.status.conditions[?(@.status=="true")].type')).values).toEqual([
      { name: "conditions", fieldValue: { type: "JsonRaw", jsonRaw: '["Cond1","Cond3"]' } },
    ]);
  });
  it("rawjson value exceed max length: an error, no value", () => {
    const big = { status: { notes: "x".repeat(MAX_JSON_RAW_LENGTH) } };
    const r = collectFeedback(big, "", "v1", "Pod", rule("status", ".status"));
    expect(r.values).toEqual([]);
    expect(r.errors).toEqual([`the length of returned json raw string for name status is larger than the maximum length ${MAX_JSON_RAW_LENGTH}`]);
  });
  it("a fraction is JsonRaw; <, > and & are escaped as Go does", () => {
    const r = collectFeedback({ status: { ratio: 0.5, html: { b: "<a&b>", a: 1 } } }, "", "v1", "Pod", [
      {
        type: "JSONPaths",
        jsonPaths: [
          { name: "ratio", path: ".status.ratio" },
          { name: "html", path: ".status.html" },
        ],
      },
    ]);
    expect(r.values).toEqual([
      { name: "ratio", fieldValue: { type: "JsonRaw", jsonRaw: "0.5" } },
      { name: "html", fieldValue: { type: "JsonRaw", jsonRaw: '{"a":1,"b":"\\u003ca\\u0026b\\u003e"}' } },
    ]);
  });
});

describe("OCM conditions/helpers.go: roll-up into the work's conditions", () => {
  it.each([
    ["Progressing", ["False", "True"], "True"],
    ["Progressing", ["False", "Unknown"], "Unknown"],
    ["Progressing", ["False", "False"], "False"],
    ["Complete", ["True", "False"], "False"],
    ["Complete", ["True", "Unknown"], "Unknown"],
    ["Complete", ["True", "True"], "True"],
  ])("%s over %j is %s", (type, statuses, want) => {
    const c = aggregateRuleCondition(
      type,
      statuses.map((status) => ({ status, message: "m" })),
    );
    expect(c).toEqual({ type, status: want, reason: "ConditionRulesAggregated", message: "Aggregated from 2 manifest conditions" });
  });

  it("one manifest's condition keeps its message; rule-made Progressing replaces the native one", () => {
    const meta = (ordinal: number) => ({ ordinal, group: "batch", version: "v1", kind: "Job", resource: "jobs", name: `j${ordinal}`, namespace: "default" });
    const outcome = (ordinal: number, rules: ManifestOutcome["rules"]): ManifestOutcome => ({
      meta: meta(ordinal),
      applied: { ok: true },
      live: { state: "found", object: {} },
      feedback: undefined,
      rollout: { progressing: false },
      rules,
    });
    const s = workStatus(
      [outcome(0, [{ type: "Progressing", status: "True", reason: "ConditionRuleEvaluated", message: "still migrating" }]), outcome(1, [])],
      3,
      undefined,
      "2026-01-01T00:00:00Z",
    );
    const progressing = s.conditions.find((c) => c.type === "Progressing");
    expect(progressing).toMatchObject({ status: "True", reason: "ConditionRulesAggregated", message: "still migrating", observedGeneration: 3 });
    expect(s.conditions.filter((c) => c.type === "Progressing")).toHaveLength(1);
    expect(s.resourceStatus.manifests[0]?.conditions.find((c) => c.type === "Progressing")).toMatchObject({
      status: "True",
      reason: "ConditionRuleEvaluated",
      observedGeneration: 3,
    });
  });
});

describe("the controller on a simulated cluster", () => {
  async function setup() {
    const cluster = await startSimulatedCluster();
    cleanups.push(() => cluster.close());
    const kc: KubeConfig = kubeConfigFromYaml(cluster.kubeconfigYaml);
    const dyn = new DynamicClient(kc);
    await dyn.create(
      { group: "", version: "v1", resource: "namespaces" },
      "",
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "flotilla-agent" } },
      "test",
    );
    const c = new WorkController({ kubeConfig: kc, namespace: "flotilla-agent", logger: createLogger({ write: () => undefined }), watch: true });
    cleanups.push(() => c.close());
    return { kc, dyn, c };
  }

  const web = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx" }] } },
    },
  };
  const manifestConfigs: ManifestConfig[] = [
    {
      resourceIdentifier: { group: "apps", resource: "deployments", name: "web", namespace: "default" },
      feedbackScrapeType: "Watch",
      feedbackRules: [
        {
          type: "JSONPaths",
          jsonPaths: [
            { name: "conditions", path: ".status.conditions" },
            { name: "ready", path: ".status.readyReplicas" },
          ],
        },
      ],
      conditionRules: [
        {
          type: "CEL",
          condition: "Progressing",
          celExpressions: ["object.status.readyReplicas < object.spec.replicas"],
          messageExpression: 'string(object.status.readyReplicas) + " of " + string(object.spec.replicas) + " ready"',
        },
        { type: "CEL", condition: "Ready", celExpressions: ["object.status.readyReplicas == object.spec.replicas"] },
      ],
    },
  ];
  const w: ManifestWork = {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name: "w", namespace: "c1", uid: randomUUID(), generation: 1 },
    spec: { workload: { manifests: [web] }, manifestConfigs },
  };

  it("a CEL rule sets the manifest's and the work's conditions, JsonRaw feedback is reported, and a watched change is signalled at once", async () => {
    const { dyn, c } = await setup();
    let signals = 0;
    c.onWatchedChange(() => signals++);
    c.setWorks([w]);
    const first = (await c.sync())[0]!.status;
    const cond = <C extends { type: string }>(conds: C[] | undefined, type: string) => conds?.find((x) => x.type === type);
    // The simulated cluster's deployment controller makes the replicas ready.
    expect(cond(first.conditions, "Ready")).toMatchObject({ status: "True", reason: "ConditionRulesAggregated", message: "Manifest is Ready" });
    expect(cond(first.conditions, "Progressing")).toMatchObject({ status: "False", reason: "ConditionRulesAggregated", message: "2 of 2 ready" });
    const m = first.resourceStatus.manifests[0]!;
    expect(cond(m.conditions, "Progressing")).toMatchObject({ status: "False", reason: "ConditionRuleEvaluated", observedGeneration: 1 });
    const raw = m.statusFeedback.values.find((v) => v.name === "conditions");
    expect(raw?.fieldValue.type).toBe("JsonRaw");
    expect(JSON.parse((raw?.fieldValue as { jsonRaw: string }).jsonRaw)).toEqual(expect.arrayContaining([expect.objectContaining({ type: "Available" })]));

    // Wait until the watch runs (a pass then reads nothing), then change the status: the listener fires.
    const before = signals;
    const cur = (await dyn.get({ group: "apps", version: "v1", resource: "deployments", namespace: "default", name: "web" })) as {
      metadata: { generation: number };
    } & Obj;
    // The status write is made again until the watch has signalled it (the watch may start late).
    await waitFor(
      "the watched Deployment's status change signalled",
      async () => {
        await dyn.request("PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", {
          body: {
            ...cur,
            metadata: { ...(cur.metadata as Obj), resourceVersion: undefined },
            status: { observedGeneration: cur.metadata.generation, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1 },
          },
        });
        return signals > before;
      },
      15_000,
      100,
    );
    const second = (await c.sync())[0]!.status;
    expect(cond(second.conditions, "Progressing")).toMatchObject({ status: "True", message: "1 of 2 ready" });
    expect(cond(second.conditions, "Ready")?.status).toBe("False");
    expect(second.resourceStatus.manifests[0]?.statusFeedback.values.find((v) => v.name === "ready")).toEqual({
      name: "ready",
      fieldValue: { type: "Integer", integer: 1 },
    });
  });

  it("a manifest whose Complete rule is True is no longer updated (OCM): a deleted Job is not re-created", async () => {
    const { dyn, c } = await setup();
    const once = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "once", namespace: "default" },
      spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "x", image: "busybox" }] } } },
    };
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "plain", namespace: "default" }, data: { a: "1" } };
    const jobWork: ManifestWork = {
      apiVersion: "work.open-cluster-management.io/v1",
      kind: "ManifestWork",
      metadata: { name: "job", namespace: "c1", uid: randomUUID(), generation: 1 },
      spec: {
        workload: { manifests: [once, cm] },
        manifestConfigs: [
          {
            resourceIdentifier: { group: "batch", resource: "jobs", name: "once", namespace: "default" },
            conditionRules: [{ type: "WellKnownConditions", condition: "Complete" }],
          },
        ],
      },
    };
    c.setWorks([jobWork]);
    const jobRef = { group: "batch", version: "v1", resource: "jobs", namespace: "default", name: "once" };
    const cmRef = { group: "", version: "v1", resource: "configmaps", namespace: "default", name: "plain" };
    // The simulated Job controller completes the Job; the rule then reports Complete, on the manifest and the work.
    let s = (await c.sync())[0]!.status;
    for (let i = 0; i < 50 && s.conditions.find((x) => x.type === "Complete")?.status !== "True"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      s = (await c.sync())[0]!.status;
    }
    expect(s.conditions.find((x) => x.type === "Complete")).toMatchObject({ status: "True", reason: "ConditionRulesAggregated", message: "Job is finished" });
    // The completed Job and the ConfigMap are deleted on the cluster: the work is Complete, so
    // nothing is written again, pass after pass (the rule's condition stays while the Job is gone).
    await dyn.delete(jobRef);
    await dyn.delete(cmRef);
    await c.sync();
    const after = (await c.sync())[0]!.status;
    expect(after.conditions.find((x) => x.type === "Complete")?.status).toBe("True");
    await expect(dyn.get(jobRef)).rejects.toMatchObject({ code: 404 });
    await expect(dyn.get(cmRef)).rejects.toMatchObject({ code: 404 });
    expect(after.resourceStatus.manifests[0]?.conditions.find((x) => x.type === "Available")?.status).toBe("False");
  });
});
