/**
 * The built-in kinds stored as templates (src/kinds/builtin, issue 42) with the real kubectl
 * against a hub served over HTTPS (`wrangler dev`): an app's ordinary YAML applied client-side
 * (create, then an edit: a strategic merge patch computed from the hub's OpenAPI) and
 * server-side, read back as kubectl's tables (`get deploy`: READY UP-TO-DATE AVAILABLE AGE) and
 * by short name, documented by `kubectl explain deployment.spec`, refused by `--validate=strict`
 * with an unknown field, and deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHub, type Hub } from "../../scripts/hub-process.ts";
import { kubectlWith, scratchDir, writeAdminKubeconfig } from "./support.ts";

const { dir, file } = scratchDir("flotilla-kubectl-kinds-");

let hub: Hub;
let kubeconfig: string;
const { kubectl, kubectlFails } = kubectlWith(() => kubeconfig, dir);

/** The app: a Namespace, a ConfigMap, a Deployment and a Service, as a user writes them. */
const app = (image: string, greeting: string) =>
  `apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
data:
  greeting: ${greeting}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: ${image}
        ports:
        - containerPort: 80
        envFrom:
        - configMapRef:
            name: web-config
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 80
`;

/** One object of each other kind (a StatefulSet, DaemonSet, Job, CronJob, Ingress, NetworkPolicy, PDB, HPA, PVC, LimitRange, ResourceQuota). */
const others = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "fluent-bit:3"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: migrate, image: "busybox:1.36", command: ["true"]}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: report, image: "busybox:1.36"}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 6
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: shop}
spec:
  limits: [{type: Container, default: {cpu: 500m}}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota, namespace: shop}
spec: {hard: {pods: "20"}}
`;

beforeAll(async () => {
  hub = await startHub({ https: true });
  kubeconfig = await writeAdminKubeconfig(hub, dir);
});

afterAll(async () => {
  await hub?.stop();
});

describe("kubectl with the built-in kinds on the hub", () => {
  it("applies an app, shows kubectl's columns, applies an edit as a strategic merge patch, and deletes it", async () => {
    const applied = await kubectl("apply", "-f", file("app.yaml", app("nginx:1.27", "hello")));
    expect(applied).toContain("namespace/shop created");
    expect(applied).toContain("configmap/web-config created");
    expect(applied).toContain("deployment.apps/web created");
    expect(applied).toContain("service/web created");

    // Nothing runs the Deployment on the hub: 0 of 2 ready, as kubectl prints it.
    const deploy = await kubectl("get", "deploy", "-n", "shop");
    expect(deploy).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\n/);
    expect(deploy).toMatch(/\nweb\s+0\/2\s+0\s+0\s+\S+\n/);
    expect(await kubectl("get", "deploy", "web", "-n", "shop", "-o", "wide")).toMatch(/CONTAINERS\s+IMAGES\s+SELECTOR\n.*web\s+nginx:1\.27\s+app=web/s);
    expect(await kubectl("get", "cm", "web-config", "-n", "shop")).toMatch(/^NAME\s+DATA\s+AGE\nweb-config\s+1\s/);
    expect(await kubectl("get", "svc", "web", "-n", "shop")).toMatch(
      /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nweb\s+ClusterIP\s+<none>\s+<none>\s+80\/TCP\s/,
    );

    // An edit applied client-side: kubectl computes a strategic merge patch from the hub's OpenAPI.
    const edited = await kubectl("apply", "-f", file("app2.yaml", app("nginx:1.28", "bonjour")));
    expect(edited).toContain("configmap/web-config configured");
    expect(edited).toContain("deployment.apps/web configured");
    expect(edited).toContain("service/web unchanged");
    expect(await kubectl("get", "cm", "web-config", "-n", "shop", "-o", "jsonpath={.data.greeting}")).toBe("bonjour");
    expect(await kubectl("get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.template.spec.containers[*].image} {.metadata.generation}")).toBe(
      "nginx:1.28 2",
    );

    const rest = await kubectl("apply", "-f", file("others.yaml", others));
    for (const line of [
      "statefulset.apps/db created",
      "daemonset.apps/agent created",
      "job.batch/migrate created",
      "cronjob.batch/nightly created",
      "ingress.networking.k8s.io/web created",
      "networkpolicy.networking.k8s.io/web created",
      "poddisruptionbudget.policy/web created",
      "horizontalpodautoscaler.autoscaling/web created",
      "persistentvolumeclaim/uploads created",
      "limitrange/defaults created",
      "resourcequota/quota created",
    ])
      expect(rest).toContain(line);
    const short = await kubectl("get", "sts,ds,cj,ing,netpol,pdb,hpa,pvc,limits,quota", "-n", "shop", "-o", "name");
    expect(short.trim().split("\n").sort()).toEqual(
      [
        "statefulset.apps/db",
        "daemonset.apps/agent",
        "cronjob.batch/nightly",
        "ingress.networking.k8s.io/web",
        "networkpolicy.networking.k8s.io/web",
        "poddisruptionbudget.policy/web",
        "horizontalpodautoscaler.autoscaling/web",
        "persistentvolumeclaim/uploads",
        "limitrange/defaults",
        "resourcequota/quota",
      ].sort(),
    );
    const all = await kubectl("get", "all", "-n", "shop", "-o", "name");
    for (const o of [
      "service/web",
      "deployment.apps/web",
      "statefulset.apps/db",
      "job.batch/migrate",
      "cronjob.batch/nightly",
      "horizontalpodautoscaler.autoscaling/web",
    ])
      expect(all).toContain(o);
    expect(all).not.toContain("configmap/");
    expect(await kubectl("get", "jobs", "-n", "shop")).toMatch(/^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\nmigrate\s+Running\s+0\/1\s/);

    const ssa = await kubectl(
      "apply",
      "--server-side",
      "-f",
      file("cm-ssa.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: shop\ndata:\n  a: b\n"),
    );
    expect(ssa).toContain("configmap/extra serverside-applied");

    // kubectl's typed create of a ConfigMap sends protobuf.
    expect(await kubectl("create", "configmap", "literal", "-n", "shop", "--from-literal=mode=prod")).toBe("configmap/literal created\n");
    expect(await kubectl("get", "cm", "literal", "-n", "shop", "-o", "jsonpath={.data.mode}")).toBe("prod");

    const deleted = await kubectl("delete", "-f", file("others-del.yaml", others));
    expect(deleted).toContain(`statefulset.apps "db" deleted`);
    expect(await kubectl("get", "sts", "-n", "shop", "-o", "name")).toBe("");
  });

  it("explains deployment.spec from the hub's OpenAPI, with Kubernetes' descriptions", async () => {
    const spec = await kubectl("explain", "deployment.spec");
    expect(spec).toMatch(/GROUP:\s+apps/);
    expect(spec).toMatch(/KIND:\s+Deployment/);
    expect(spec).toContain("Specification of the desired behavior of the Deployment.");
    expect(spec).toMatch(/replicas\s+<integer>/);
    expect(spec).toMatch(/selector\s+<LabelSelector> -required-/);
    expect(spec).toMatch(/template\s+<PodTemplateSpec> -required-/);
    expect(spec).toMatch(/strategy\s+<DeploymentStrategy>/);
    const containers = await kubectl("explain", "deployment.spec.template.spec.containers.image");
    expect(containers).toContain("Container image name.");
    expect(await kubectl("explain", "cm")).toMatch(/KIND:\s+ConfigMap/);
  });

  it("refuses an unknown field with --validate=strict, stores nothing; --validate=false drops it", async () => {
    const bad = file(
      "bad.yaml",
      app("nginx:1.27", "x")
        .split("---\n")[2]!
        .replace("name: web\n  namespace", "name: typo\n  namespace")
        .replace("        image:", "        imagePullSecret: regcred\n        image:"),
    );
    const err = await kubectlFails("apply", "--validate=strict", "-f", bad);
    expect(err).toContain('unknown field "spec.template.spec.containers[0].imagePullSecret"');
    expect(await kubectlFails("get", "deploy", "typo", "-n", "shop")).toContain("NotFound");
    const lax = await kubectl("apply", "--validate=false", "-f", bad);
    expect(lax).toContain("deployment.apps/typo created");
    expect(await kubectl("get", "deploy", "typo", "-n", "shop", "-o", "jsonpath={.spec.template.spec.containers[0]}")).not.toContain("imagePullSecret");
    const invalid = await kubectlFails(
      "create",
      "-f",
      file(
        "bad2.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nosel, namespace: shop}\nspec:\n  template:\n    spec: {containers: [{name: a, image: b}]}\n",
      ),
    );
    expect(invalid).toContain("spec.selector: Required value");
  });
});
