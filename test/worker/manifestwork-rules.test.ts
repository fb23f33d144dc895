// ManifestWork `manifestConfigs[].conditionRules` as OCM's CRD declares them: a list map keyed by
// `condition` (a second rule for one condition is 422 naming it), `type` WellKnownConditions or
// CEL; valid rules are stored as written (the agent evaluates them, agent/src/work/condition-rules.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { call, createNamespaces } from "./helpers.ts";

const WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/rules/manifestworks";

function work(name: string, conditionRules: unknown[]) {
  return {
    apiVersion: "work.open-cluster-management.io/v1",
    kind: "ManifestWork",
    metadata: { name },
    spec: {
      workload: {
        manifests: [
          {
            apiVersion: "batch/v1",
            kind: "Job",
            metadata: { name: "once", namespace: "default" },
            spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "x", image: "busybox" }] } } },
          },
        ],
      },
      manifestConfigs: [
        { resourceIdentifier: { group: "batch", resource: "jobs", name: "once", namespace: "default" }, feedbackScrapeType: "Watch", conditionRules },
      ],
    },
  };
}

beforeAll(async () => {
  await createNamespaces("rules");
});

describe("conditionRules on the hub", () => {
  it("stores valid rules as written", async () => {
    const rules = [
      { type: "WellKnownConditions", condition: "Complete" },
      { type: "CEL", condition: "Progressing", celExpressions: ["!has(object.status.succeeded)"], messageExpression: 'result ? "running" : "done"' },
    ];
    const res = await call("POST", WORKS, work("ok", rules));
    expect(res.status).toBe(201);
    expect(res.body.spec.manifestConfigs[0]).toMatchObject({ feedbackScrapeType: "Watch", conditionRules: rules });
  });

  it("refuses two rules for one condition with 422 Duplicate value, as the CRD's list map does", async () => {
    const res = await call(
      "POST",
      WORKS,
      work("dup", [
        { type: "WellKnownConditions", condition: "Complete" },
        { type: "CEL", condition: "Complete", celExpressions: ["true"] },
      ]),
    );
    expect(res.status).toBe(422);
    expect(res.body.details.causes).toContainEqual({
      field: "spec.manifestConfigs[0].conditionRules[1]",
      reason: "FieldValueDuplicate",
      message: 'Duplicate value: map[string]interface {}{"condition":"Complete"}',
    });
    expect((await call("GET", `${WORKS}/dup`)).status).toBe(404);
  });

  it("refuses an unknown rule type naming the field", async () => {
    const res = await call("POST", WORKS, work("bad", [{ type: "Script", condition: "Complete" }]));
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.details.causes)).toContain("spec.manifestConfigs[0].conditionRules[0].type");
  });
});
