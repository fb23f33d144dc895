/**
 * CustomResourceDefinitions with the real kubectl against a hub served over HTTPS (issue 42,
 * Build 1): `kubectl apply` of a CRD and a custom resource, `kubectl get` with the CRD's
 * printer columns and short name, `kubectl explain` from the CRD's schema, `--validate=strict`
 * refusing an unknown field, `kubectl edit --subresource=status` and `kubectl scale`, and
 * `kubectl delete crd` taking the custom resources with it.
 */
import { execFile } from "node:child_process";
import { chmodSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubectlWith, scratchDir, writeAdminKubeconfig } from "./support.ts";

const run = promisify(execFile);
const { dir, file } = scratchDir("flotilla-kubectl-crd-");

let hub: Hub;
let kubeconfig: string;
const { kubectl, kubectlFails } = kubectlWith(() => kubeconfig, dir);

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
      additionalPrinterColumns:
        - name: Spec
          type: string
          jsonPath: .spec.cronSpec
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
        - name: Phase
          type: string
          jsonPath: .status.phase
      schema:
        openAPIV3Schema:
          type: object
          description: CronTab runs an image on a schedule.
          properties:
            spec:
              type: object
              description: The desired schedule.
              properties:
                cronSpec:
                  type: string
                  description: The schedule in cron format.
                  pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
                image:
                  type: string
                replicas:
                  type: integer
                  minimum: 1
                  default: 1
              x-kubernetes-validations:
                - rule: "self.replicas <= 10"
                  message: at most 10 replicas
            status:
              type: object
              properties:
                phase:
                  type: string
                replicas:
                  type: integer
`;

const CR = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
`;

beforeAll(async () => {
  hub = await startHub({ https: true, graceMultiplier: 2 });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
});

afterAll(async () => {
  await hub?.stop();
});

describe("kubectl with a CustomResourceDefinition", () => {
  it("applies a CRD and a custom resource, and gets it with the printer columns", async () => {
    expect(await kubectl("apply", "-f", file("crd.yaml", CRD))).toContain("customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created");
    expect(await kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")).toContain("condition met");
    expect(await kubectl("apply", "-f", file("cr.yaml", CR))).toContain("crontab.stable.example.com/my-cron created");
    const table = await kubectl("get", "ct");
    expect(table).toMatch(/^NAME\s+SPEC\s+REPLICAS\s+PHASE\s*\n/);
    expect(table).toMatch(/\nmy-cron\s+\* \* \* \* \*\/5\s+1\s+/);
    expect(await kubectl("get", "crontabs.stable.example.com", "my-cron", "-o", "jsonpath={.spec.replicas}")).toBe("1");
  });

  it("explains the custom resource from the CRD's schema", async () => {
    const out = await kubectl("explain", "crontab.spec");
    expect(out).toContain("The desired schedule.");
    expect(out).toContain("cronSpec");
    expect(out).toContain("The schedule in cron format.");
  });

  it("refuses an unknown field under --validate=strict, a bad pattern and a failed rule", async () => {
    const unknown = file("unknown.yaml", CR.replace("image: my-awesome-cron-image", "image: x\n  colour: red"));
    expect(await kubectlFails("apply", "--validate=strict", "-f", unknown)).toContain('unknown field "spec.colour"');
    const bad = file("bad.yaml", CR.replace('"* * * * */5"', '"every minute"'));
    expect(await kubectlFails("apply", "-f", bad)).toContain("spec.cronSpec in body should match");
    const many = file("many.yaml", CR.replace("image: my-awesome-cron-image", "image: x\n  replicas: 11"));
    expect(await kubectlFails("apply", "-f", many)).toContain("at most 10 replicas");
  });

  it("edits the status through --subresource=status, and scales through the scale subresource", async () => {
    await kubectl("patch", "crontab", "my-cron", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Pending"}}');
    const editor = file("editor.sh", `#!/bin/sh\nsed -i 's/phase: Pending/phase: Running/' "$1"\n`);
    chmodSync(editor, 0o755);
    await run("kubectl", ["--kubeconfig", kubeconfig, "edit", "crontab", "my-cron", "--subresource=status"], {
      cwd: dir,
      env: { ...process.env, KUBE_EDITOR: editor },
    });
    expect(await kubectl("get", "crontab", "my-cron", "-o", "jsonpath={.status.phase}")).toBe("Running");
    expect(await kubectl("scale", "crontab", "my-cron", "--replicas=3")).toContain("scaled");
    expect(await kubectl("get", "crontab", "my-cron", "-o", "jsonpath={.spec.replicas}")).toBe("3");
    expect(await kubectl("get", "ct")).toMatch(/\nmy-cron\s+\S+ \S+ \S+ \S+ \S+\s+3\s+Running/);
  });

  it("deletes the custom resources with the CRD", async () => {
    expect(await kubectl("delete", "crd", "crontabs.stable.example.com")).toContain("deleted");
    expect(await kubectlFails("get", "crontabs.stable.example.com")).toMatch(/doesn't have a resource type|the server could not find the requested resource/);
  });
});
