/**
 * The built-in Kubernetes kinds the hub stores as templates (src/kinds/builtin, issue 42):
 * ConfigMap, Service, PersistentVolumeClaim, LimitRange, ResourceQuota, Deployment, StatefulSet,
 * DaemonSet, Job, CronJob, Ingress, NetworkPolicy, PodDisruptionBudget and
 * HorizontalPodAutoscaler, each through create, get, list (kubectl's table), watch, update,
 * patch, the status subresource and delete; validation against Kubernetes' OpenAPI schemas
 * (unknown fields per `fieldValidation`, types, required fields, enums) and the kinds' own rules;
 * strategic merge patch and server-side apply merging lists by their keys; discovery and OpenAPI.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_KINDS } from "../../src/kinds/builtin/index.ts";
import { apiVersionOf, type KindDefinition } from "../../src/k8s/kind.ts";
import { call, createNamespaces, merge } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const NS = "templates";
const TABLE = { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } };
const SMP = { contentType: "application/strategic-merge-patch+json" };
const APPLY = "application/apply-patch+yaml";

const POD = (labels: Json = { app: "web" }) => ({
  metadata: { labels },
  spec: { containers: [{ name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }], env: [{ name: "A", value: "1" }] }] },
});
const JOB_POD = { spec: { restartPolicy: "Never", containers: [{ name: "run", image: "busybox:1.36", command: ["true"] }] } };

interface Case {
  kind: string;
  /** The kind-specific fields of a valid object. */
  fields: Json;
  /** `kubectl get`'s column names, Name first (priority 0). */
  columns: string[];
  /** A merge patch that changes the spec (the generation goes up). */
  specPatch: Json;
  /** Fields the stored object has after defaulting (a subset match). */
  defaulted?: Json;
  /** A status the `/status` subresource writes. */
  status?: Json;
  /** Bodies refused with 422 and the field among the causes. */
  invalid: { why: string; fields: Json; field: string }[];
}

const CASES: Case[] = [
  {
    kind: "ConfigMap",
    fields: { data: { "app.properties": "a=1" } },
    columns: ["Name", "Data", "Age"],
    specPatch: { data: { more: "2" } },
    invalid: [
      { why: "a key that is not a config key", fields: { data: { "bad key": "x" } }, field: "data[bad key]" },
      { why: "a key in data and binaryData", fields: { data: { k: "x" }, binaryData: { k: "eA==" } }, field: "data[k]" },
      { why: "a value that is not a string", fields: { data: { k: 1 } }, field: "data.k" },
    ],
  },
  {
    kind: "Service",
    fields: { spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80 }] } },
    columns: ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"],
    specPatch: { spec: { ports: [{ name: "http", port: 8080 }] } },
    defaulted: { spec: { type: "ClusterIP", sessionAffinity: "None", ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 80 }] } },
    status: { loadBalancer: { ingress: [{ ip: "10.0.0.1" }] } },
    invalid: [
      { why: "no ports", fields: { spec: { selector: { app: "web" } } }, field: "spec.ports" },
      { why: "a port out of range", fields: { spec: { ports: [{ port: 70000 }] } }, field: "spec.ports[0].port" },
      { why: "an unknown type", fields: { spec: { type: "Magic", ports: [{ port: 80 }] } }, field: "spec.type" },
      { why: "an unknown protocol", fields: { spec: { ports: [{ port: 80, protocol: "HTTP" }] } }, field: "spec.ports[0].protocol" },
      { why: "two unnamed ports", fields: { spec: { ports: [{ port: 80 }, { port: 81 }] } }, field: "spec.ports[0].name" },
    ],
  },
  {
    kind: "PersistentVolumeClaim",
    fields: { spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } },
    columns: ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"],
    specPatch: { spec: { resources: { requests: { storage: "2Gi" } } } },
    defaulted: { spec: { volumeMode: "Filesystem" } },
    status: { phase: "Bound", capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"] },
    invalid: [
      { why: "no access modes", fields: { spec: { resources: { requests: { storage: "1Gi" } } } }, field: "spec.accessModes" },
      {
        why: "a malformed quantity",
        fields: { spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "lots" } } } },
        field: "spec.resources.requests.storage",
      },
      {
        why: "an unknown access mode",
        fields: { spec: { accessModes: ["ReadWriteSometimes"], resources: { requests: { storage: "1Gi" } } } },
        field: "spec.accessModes[0]",
      },
    ],
  },
  {
    kind: "LimitRange",
    fields: { spec: { limits: [{ type: "Container", default: { cpu: "500m" }, defaultRequest: { cpu: "100m" } }] } },
    columns: ["Name", "Created At"],
    specPatch: { spec: { limits: [{ type: "Container", max: { memory: "1Gi" } }] } },
    invalid: [
      { why: "limits without a type", fields: { spec: { limits: [{ max: { cpu: "1" } }] } }, field: "spec.limits[0].type" },
      { why: "a malformed quantity", fields: { spec: { limits: [{ type: "Container", max: { cpu: "1 core" } }] } }, field: "spec.limits[0].max.cpu" },
    ],
  },
  {
    kind: "ResourceQuota",
    fields: { spec: { hard: { pods: "10", "requests.cpu": "4", "limits.cpu": "8" } } },
    columns: ["Name", "Age", "Request", "Limit"],
    specPatch: { spec: { hard: { pods: "20" } } },
    status: { hard: { pods: "10" }, used: { pods: "3" } },
    invalid: [{ why: "hard as a list", fields: { spec: { hard: ["pods"] } }, field: "spec.hard" }],
  },
  {
    kind: "Deployment",
    fields: { spec: { replicas: 3, selector: { matchLabels: { app: "web" } }, template: POD() } },
    columns: ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"],
    specPatch: { spec: { replicas: 5 } },
    defaulted: {
      spec: {
        replicas: 3,
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } },
        revisionHistoryLimit: 10,
        progressDeadlineSeconds: 600,
        template: {
          spec: {
            restartPolicy: "Always",
            dnsPolicy: "ClusterFirst",
            terminationGracePeriodSeconds: 30,
            containers: [{ imagePullPolicy: "IfNotPresent", terminationMessagePolicy: "File", ports: [{ containerPort: 80, protocol: "TCP" }] }],
          },
        },
      },
    },
    status: { observedGeneration: 1, replicas: 3, readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
    invalid: [
      { why: "no selector", fields: { spec: { template: POD() } }, field: "spec.selector" },
      {
        why: "a selector that does not match the template",
        fields: { spec: { selector: { matchLabels: { app: "db" } }, template: POD() } },
        field: "spec.template.metadata.labels",
      },
      {
        why: "no containers",
        fields: { spec: { selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [] } } } },
        field: "spec.template.spec.containers",
      },
      {
        why: "a container without an image",
        fields: {
          spec: { selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web" }] } } },
        },
        field: "spec.template.spec.containers[0].image",
      },
      {
        why: "a container without a name",
        fields: {
          spec: { selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ image: "nginx" }] } } },
        },
        field: "spec.template.spec.containers[0].name",
      },
      {
        why: "replicas as a string",
        fields: { spec: { replicas: "three", selector: { matchLabels: { app: "web" } }, template: POD() } },
        field: "spec.replicas",
      },
      { why: "negative replicas", fields: { spec: { replicas: -1, selector: { matchLabels: { app: "web" } }, template: POD() } }, field: "spec.replicas" },
      {
        why: "restartPolicy Never",
        fields: { spec: { selector: { matchLabels: { app: "web" } }, template: { ...POD(), spec: { ...POD().spec, restartPolicy: "Never" } } } },
        field: "spec.template.spec.restartPolicy",
      },
      {
        why: "an unknown imagePullPolicy",
        fields: {
          spec: {
            selector: { matchLabels: { app: "web" } },
            template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx", imagePullPolicy: "Sometimes" }] } },
          },
        },
        field: "spec.template.spec.containers[0].imagePullPolicy",
      },
    ],
  },
  {
    kind: "StatefulSet",
    fields: { spec: { serviceName: "db", replicas: 1, selector: { matchLabels: { app: "web" } }, template: POD() } },
    columns: ["Name", "Ready", "Age", "Containers", "Images"],
    specPatch: { spec: { replicas: 2 } },
    defaulted: { spec: { podManagementPolicy: "OrderedReady", updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } } } },
    status: { replicas: 1, readyReplicas: 1 },
    invalid: [
      {
        why: "a selector that does not match the template",
        fields: { spec: { selector: { matchLabels: { app: "db" } }, template: POD() } },
        field: "spec.template.metadata.labels",
      },
      {
        why: "an unknown podManagementPolicy",
        fields: { spec: { podManagementPolicy: "Random", selector: { matchLabels: { app: "web" } }, template: POD() } },
        field: "spec.podManagementPolicy",
      },
    ],
  },
  {
    kind: "DaemonSet",
    fields: { spec: { selector: { matchLabels: { app: "web" } }, template: POD() } },
    columns: ["Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers", "Images", "Selector"],
    specPatch: { spec: { minReadySeconds: 5 } },
    defaulted: { spec: { updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } } } },
    status: { currentNumberScheduled: 2, desiredNumberScheduled: 2, numberMisscheduled: 0, numberReady: 2 },
    invalid: [{ why: "an empty selector", fields: { spec: { selector: {}, template: POD() } }, field: "spec.selector" }],
  },
  {
    kind: "Job",
    fields: { spec: { template: JOB_POD } },
    columns: ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
    specPatch: { spec: { activeDeadlineSeconds: 60 } },
    defaulted: { spec: { completions: 1, parallelism: 1, backoffLimit: 6, completionMode: "NonIndexed" } },
    status: { active: 1, startTime: "2026-11-29T10:00:00Z" },
    invalid: [
      {
        why: "restartPolicy Always",
        fields: { spec: { template: { spec: { ...JOB_POD.spec, restartPolicy: "Always" } } } },
        field: "spec.template.spec.restartPolicy",
      },
      { why: "a selector that is not generated", fields: { spec: { selector: { matchLabels: { a: "b" } }, template: JOB_POD } }, field: "spec.selector" },
      { why: "negative parallelism", fields: { spec: { parallelism: -1, template: JOB_POD } }, field: "spec.parallelism" },
    ],
  },
  {
    kind: "CronJob",
    fields: { spec: { schedule: "*/5 * * * *", jobTemplate: { spec: { template: JOB_POD } } } },
    columns: ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"],
    specPatch: { spec: { schedule: "0 * * * *" } },
    defaulted: { spec: { concurrencyPolicy: "Allow", suspend: false, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 } },
    status: { lastScheduleTime: "2026-11-29T10:00:00Z" },
    invalid: [
      {
        why: "a schedule that is not cron",
        fields: { spec: { schedule: "every minute", jobTemplate: { spec: { template: JOB_POD } } } },
        field: "spec.schedule",
      },
      { why: "no job template", fields: { spec: { schedule: "* * * * *" } }, field: "spec.jobTemplate" },
      {
        why: "an unknown concurrencyPolicy",
        fields: { spec: { schedule: "* * * * *", concurrencyPolicy: "Sometimes", jobTemplate: { spec: { template: JOB_POD } } } },
        field: "spec.concurrencyPolicy",
      },
    ],
  },
  {
    kind: "Ingress",
    fields: {
      spec: {
        ingressClassName: "nginx",
        rules: [{ host: "web.example.com", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
      },
    },
    columns: ["Name", "Class", "Hosts", "Address", "Ports", "Age"],
    specPatch: { spec: { ingressClassName: "traefik" } },
    status: { loadBalancer: { ingress: [{ ip: "10.0.0.2" }] } },
    invalid: [
      {
        why: "a path without pathType",
        fields: { spec: { rules: [{ http: { paths: [{ path: "/", backend: { service: { name: "web", port: { number: 80 } } } }] } }] } },
        field: "spec.rules[0].http.paths[0].pathType",
      },
      {
        why: "a relative path",
        fields: { spec: { rules: [{ http: { paths: [{ path: "web", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] } },
        field: "spec.rules[0].http.paths[0].path",
      },
    ],
  },
  {
    kind: "NetworkPolicy",
    fields: { spec: { podSelector: { matchLabels: { app: "web" } }, ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 80 }] }] } },
    columns: ["Name", "Pod-Selector", "Age"],
    specPatch: { spec: { podSelector: { matchLabels: { app: "db" } } } },
    defaulted: { spec: { policyTypes: ["Ingress"], ingress: [{ ports: [{ port: 80, protocol: "TCP" }] }] } },
    invalid: [{ why: "an unknown policy type", fields: { spec: { podSelector: {}, policyTypes: ["Sideways"] } }, field: "spec.policyTypes[0]" }],
  },
  {
    kind: "PodDisruptionBudget",
    fields: { spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } } },
    columns: ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
    specPatch: { spec: { minAvailable: 2 } },
    status: { currentHealthy: 2, desiredHealthy: 1, disruptionsAllowed: 1, expectedPods: 2 },
    invalid: [
      { why: "minAvailable and maxUnavailable", fields: { spec: { minAvailable: 1, maxUnavailable: 1 } }, field: "spec" },
      { why: "a malformed percentage", fields: { spec: { maxUnavailable: "half" } }, field: "spec.maxUnavailable" },
    ],
  },
  {
    kind: "HorizontalPodAutoscaler",
    fields: { spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, minReplicas: 2, maxReplicas: 5 } },
    columns: ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
    specPatch: { spec: { maxReplicas: 10 } },
    defaulted: { spec: { metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }] } },
    status: { currentReplicas: 2, desiredReplicas: 2 },
    invalid: [
      {
        why: "maxReplicas below minReplicas",
        fields: { spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, minReplicas: 3, maxReplicas: 2 } },
        field: "spec.maxReplicas",
      },
      { why: "no maxReplicas", fields: { spec: { scaleTargetRef: { kind: "Deployment", name: "web" } } }, field: "spec.maxReplicas" },
    ],
  },
];

const defOf = (kind: string): KindDefinition => BUILTIN_KINDS.find((k) => k.kind === kind)!;
function collection(def: KindDefinition, ns = NS): string {
  return `${def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`}/namespaces/${ns}/${def.plural}`;
}
const object = (def: KindDefinition, name: string, fields: Json): Json => ({ apiVersion: apiVersionOf(def), kind: def.kind, metadata: { name }, ...fields });

/** The events of a watch answer (JSON lines; one event parses as one object). */
function events(body: unknown): Json[] {
  if (typeof body === "string")
    return body
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  return body ? [body as Json] : [];
}

beforeAll(() => createNamespaces(NS, "templates-fv", "templates-merge"));

describe("built-in kinds stored as templates", () => {
  it("covers every kind of src/kinds/builtin", () => {
    expect(CASES.map((c) => c.kind).sort()).toEqual(BUILTIN_KINDS.map((k) => k.kind).sort());
  });

  for (const c of CASES) {
    const def = defOf(c.kind);
    const name = `${c.kind.toLowerCase()}-a`;
    it(`${c.kind}: create, get, list as kubectl's table, watch, patch (generation), status, delete`, async () => {
      const coll = collection(def);
      const before = await call("GET", coll);
      expect(before.status).toBe(200);
      const rv = before.body.metadata.resourceVersion;

      const created = await call("POST", coll, object(def, name, { ...c.fields, ...(c.status ? { status: c.status } : {}) }));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toMatchObject({ apiVersion: apiVersionOf(def), kind: def.kind, metadata: { name, namespace: NS, generation: 1 } });
      if (c.defaulted) expect(created.body).toMatchObject(c.defaulted);
      // The hub invents no status, and a create's status is dropped for kinds with /status.
      if (def.hasStatus) expect(created.body.status).toBeUndefined();

      const got = await call("GET", `${coll}/${name}`);
      expect(got.status).toBe(200);
      expect(got.body.metadata.uid).toBe(created.body.metadata.uid);

      const table = await call("GET", coll, undefined, TABLE);
      expect(table.status).toBe(200);
      expect(table.body.columnDefinitions.map((col: Json) => col.name)).toEqual(c.columns);
      const row = table.body.rows.find((r: Json) => r.cells[0] === name);
      expect(row, JSON.stringify(table.body.rows)).toBeDefined();
      expect(row.cells).toHaveLength(c.columns.length);

      const watched = await call("GET", `${coll}?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
      expect(watched.status).toBe(200);
      expect(events(watched.body).find((e) => e.object?.metadata?.name === name)).toMatchObject({ type: "ADDED" });

      // A change of the spec bumps the generation; a status sent to the main resource is ignored.
      const patched = await call("PATCH", `${coll}/${name}`, { ...c.specPatch, ...(c.status ? { status: c.status } : {}) }, merge);
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(patched.body.metadata.generation).toBe(2);
      if (def.hasStatus) expect(patched.body.status).toBeUndefined();
      const labelled = await call("PATCH", `${coll}/${name}`, { metadata: { labels: { team: "a" } } }, merge);
      expect(labelled.body.metadata.generation).toBe(2);

      if (c.status) {
        const st = await call("PUT", `${coll}/${name}/status`, { ...labelled.body, status: c.status });
        expect(st.status, JSON.stringify(st.body)).toBe(200);
        expect(st.body.status).toMatchObject(c.status);
        expect(st.body.metadata.generation).toBe(2);
        expect(st.body.spec).toEqual(labelled.body.spec);
      } else if (!def.hasStatus) {
        expect((await call("GET", `${coll}/${name}/status`)).status).toBe(404);
      }

      // PUT of the whole object: the status stays what /status wrote.
      const current = (await call("GET", `${coll}/${name}`)).body;
      const put = await call("PUT", `${coll}/${name}`, {
        ...current,
        metadata: { ...current.metadata, annotations: { note: "x" } },
        ...(def.hasStatus ? { status: undefined } : {}),
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      if (c.status) expect(put.body.status).toMatchObject(c.status);
      // Deployment's strategy bumps the generation on a change of the annotations too (they are copied to ReplicaSets).
      expect(put.body.metadata.generation).toBe(c.kind === "Deployment" ? 3 : 2);

      const del = await call("DELETE", `${coll}/${name}`);
      expect(del.status).toBe(200);
      expect((await call("GET", `${coll}/${name}`)).status).toBe(404);
    });

    for (const bad of c.invalid) {
      it(`${c.kind}: refuses ${bad.why} (422 naming ${bad.field}), storing nothing`, async () => {
        const n = `bad-${c.invalid.indexOf(bad)}`;
        const r = await call("POST", collection(def), object(def, n, bad.fields));
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(r.body).toMatchObject({ kind: "Status", reason: "Invalid", code: 422 });
        expect(
          r.body.details.causes.map((x: Json) => x.field),
          JSON.stringify(r.body),
        ).toContain(bad.field);
        expect((await call("GET", `${collection(def)}/${n}`)).status).toBe(404);
      });
    }
  }

  it("validates names as upstream: a Service's is a DNS-1035 label, a CronJob's at most 52 characters", async () => {
    const svc = await call("POST", collection(defOf("Service")), object(defOf("Service"), "1web", { spec: { ports: [{ port: 80 }] } }));
    expect(svc.status).toBe(422);
    expect(svc.body.details.causes[0]).toMatchObject({ field: "metadata.name" });
    expect(svc.body.details.causes[0].message).toContain("DNS-1035 label");
    const dotted = await call("POST", collection(defOf("ConfigMap")), object(defOf("ConfigMap"), "app.config", {}));
    expect(dotted.status).toBe(201);
    const cj = defOf("CronJob");
    const long = await call("POST", collection(cj), object(cj, "c".repeat(53), CASES.find((x) => x.kind === "CronJob")!.fields));
    expect(long.status).toBe(422);
    expect(long.body.details.causes.map((x: Json) => x.field)).toContain("metadata.name");
  });

  it("generates a Job's selector and template labels from its UID, as the Job strategy does", async () => {
    const job = defOf("Job");
    const r = await call("POST", collection(job), object(job, "gen", { spec: { template: JOB_POD } }));
    expect(r.status).toBe(201);
    const uid = r.body.metadata.uid;
    expect(r.body.spec.selector).toEqual({ matchLabels: { "batch.kubernetes.io/controller-uid": uid } });
    expect(r.body.spec.template.metadata.labels).toMatchObject({
      "batch.kubernetes.io/controller-uid": uid,
      "controller-uid": uid,
      "job-name": "gen",
      "batch.kubernetes.io/job-name": "gen",
    });
    const changed = await call(
      "PATCH",
      `${collection(job)}/gen`,
      { spec: { template: { spec: { containers: [{ name: "run", image: "busybox:1.37" }] } } } },
      merge,
    );
    expect(changed.status).toBe(422);
    expect(changed.body.details.causes.map((x: Json) => x.field)).toContain("spec.template");
  });

  it("keeps a Deployment's selector immutable and an immutable ConfigMap's data", async () => {
    const d = defOf("Deployment");
    expect((await call("POST", collection(d), object(d, "fixed", CASES.find((x) => x.kind === "Deployment")!.fields))).status).toBe(201);
    const r = await call(
      "PATCH",
      `${collection(d)}/fixed`,
      { spec: { selector: { matchLabels: { app: "web", tier: "x" } }, template: { metadata: { labels: { tier: "x" } } } } },
      merge,
    );
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((x: Json) => x.field)).toContain("spec.selector");
    const cm = defOf("ConfigMap");
    expect((await call("POST", collection(cm), object(cm, "frozen", { data: { a: "1" }, immutable: true }))).status).toBe(201);
    const thaw = await call("PATCH", `${collection(cm)}/frozen`, { data: { a: "2" } }, merge);
    expect(thaw.status).toBe(422);
    expect(thaw.body.details.causes.map((x: Json) => x.field)).toContain("data");
  });
});

describe("unknown fields per fieldValidation (kube-apiserver's Strict, Warn, Ignore)", () => {
  const d = defOf("Deployment");
  const coll = collection(d, "templates-fv");
  const withUnknown = (name: string) => {
    const o = object(d, name, structuredClone(CASES.find((x) => x.kind === "Deployment")!.fields));
    o.spec.template.spec.containers[0].imagePullSecret = "typo";
    o.spec.bogus = 1;
    return o;
  };

  it("Strict (kubectl's default) refuses them with 400 naming each field, and stores nothing", async () => {
    const r = await call("POST", `${coll}?fieldValidation=Strict`, withUnknown("strict"));
    expect(r.status).toBe(400);
    expect(r.body.reason).toBe("BadRequest");
    expect(r.body.message).toMatch(/^strict decoding error: /);
    expect(r.body.message).toContain('unknown field "spec.bogus"');
    expect(r.body.message).toContain('unknown field "spec.template.spec.containers[0].imagePullSecret"');
    expect((await call("GET", `${coll}/strict`)).status).toBe(404);
  });

  it("Warn stores the object without them and says so in Warning headers", async () => {
    const r = await call("POST", `${coll}?fieldValidation=Warn`, withUnknown("warn"));
    expect(r.status).toBe(201);
    const warning = r.headers.get("warning") ?? "";
    expect(warning).toContain('unknown field \\"spec.bogus\\"');
    expect(warning).toContain("spec.template.spec.containers[0].imagePullSecret");
    expect(r.body.spec.bogus).toBeUndefined();
    expect(r.body.spec.template.spec.containers[0].imagePullSecret).toBeUndefined();
  });

  it("Ignore drops them silently", async () => {
    const r = await call("POST", `${coll}?fieldValidation=Ignore`, withUnknown("ignore"));
    expect(r.status).toBe(201);
    expect(r.headers.get("warning")).toBeNull();
    expect(r.body.spec.bogus).toBeUndefined();
  });
});

describe("list merging by the keys of Kubernetes' schemas", () => {
  const d = defOf("Deployment");
  const coll = collection(d, "templates-merge");

  it("a strategic merge patch (kubectl apply, edit, patch) merges containers by name and their env by name", async () => {
    expect((await call("POST", coll, object(d, "smp", CASES.find((x) => x.kind === "Deployment")!.fields))).status).toBe(201);
    const r = await call(
      "PATCH",
      `${coll}/smp`,
      {
        spec: {
          template: {
            spec: {
              containers: [
                { name: "web", image: "nginx:1.28", env: [{ name: "B", value: "2" }] },
                { name: "sidecar", image: "envoy:1" },
              ],
            },
          },
        },
      },
      SMP,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const containers = r.body.spec.template.spec.containers;
    expect(containers.map((c: Json) => c.name)).toEqual(["web", "sidecar"]);
    expect(containers[0]).toMatchObject({ image: "nginx:1.28", ports: [{ containerPort: 80 }] });
    expect(containers[0].env).toEqual([
      { name: "A", value: "1" },
      { name: "B", value: "2" },
    ]);
    const deleted = await call("PATCH", `${coll}/smp`, { spec: { template: { spec: { containers: [{ name: "sidecar", $patch: "delete" }] } } } }, SMP);
    expect(deleted.body.spec.template.spec.containers.map((c: Json) => c.name)).toEqual(["web"]);
  });

  it("server-side apply merges containers by name between two managers", async () => {
    const apply = (manager: string, containers: Json[]) =>
      call(
        "PATCH",
        `${coll}/ssa?fieldManager=${manager}`,
        JSON.stringify({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "ssa" },
          spec: { selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers } } },
        }),
        { contentType: APPLY },
      );
    const web = { name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }] };
    expect((await apply("team-a", [web])).status).toBe(201);
    // Applied again: the port without its protocol is the stored one (protocol defaults to TCP), not a second one.
    const again = await apply("team-a", [web]);
    expect(again.status).toBe(200);
    expect(again.body.spec.template.spec.containers[0].ports).toEqual([{ containerPort: 80, protocol: "TCP" }]);
    expect(again.body.metadata.generation).toBe(1);
    const r = await apply("team-b", [{ name: "sidecar", image: "envoy:1" }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.spec.template.spec.containers.map((c: Json) => c.name).sort()).toEqual(["sidecar", "web"]);
    const conflict = await apply("team-b", [
      { name: "sidecar", image: "envoy:1" },
      { name: "web", image: "nginx:1.28" },
    ]);
    expect(conflict.status).toBe(409);
  });
});

describe("discovery and OpenAPI of the built-in kinds", () => {
  it("lists each kind with its scope, verbs and short names in /api/v1 and /apis/<group>/<version>", async () => {
    const expected: Record<string, string[]> = {
      configmaps: ["cm"],
      services: ["svc"],
      persistentvolumeclaims: ["pvc"],
      limitranges: ["limits"],
      resourcequotas: ["quota"],
      deployments: ["deploy"],
      statefulsets: ["sts"],
      daemonsets: ["ds"],
      jobs: [],
      cronjobs: ["cj"],
      ingresses: ["ing"],
      networkpolicies: ["netpol"],
      poddisruptionbudgets: ["pdb"],
      horizontalpodautoscalers: ["hpa"],
    };
    for (const def of BUILTIN_KINDS) {
      const r = await call("GET", def.group ? `/apis/${def.group}/${def.version}` : "/api/v1");
      expect(r.status).toBe(200);
      const res = r.body.resources.find((x: Json) => x.name === def.plural);
      expect(res, def.plural).toMatchObject({ kind: def.kind, namespaced: true, singularName: def.singular });
      expect(res.shortNames ?? []).toEqual(expected[def.plural]);
      expect(res.verbs).toEqual(expect.arrayContaining(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]));
      // `kubectl get all` lists the kinds of category "all", as kube-apiserver's.
      expect(res.categories ?? [], def.plural).toEqual(
        ["services", "deployments", "statefulsets", "daemonsets", "jobs", "cronjobs", "horizontalpodautoscalers"].includes(def.plural) ? ["all"] : [],
      );
      const status = r.body.resources.find((x: Json) => x.name === `${def.plural}/status`);
      expect(!!status, `${def.plural}/status`).toBe(def.hasStatus);
    }
    const groups = await call("GET", "/apis");
    const names = groups.body.groups.map((g: Json) => g.name);
    for (const g of ["apps", "batch", "networking.k8s.io", "policy", "autoscaling"]) expect(names).toContain(g);
    expect(groups.body.groups.find((g: Json) => g.name === "autoscaling").versions.map((v: Json) => v.version)).toEqual(["v2"]);
  });

  it("documents a Deployment in /openapi/v3 as kube-apiserver does: descriptions, required fields, list keys, Kubernetes' type names", async () => {
    const r = await call("GET", "/openapi/v3/apis/apps/v1");
    expect(r.status).toBe(200);
    const schemas = r.body.components.schemas as Record<string, Json>;
    /** The schema a node refers to (`$ref`, or `allOf: [{$ref}]` with a description), else the node. */
    const deref = (node: Json): Json => {
      const target = node.$ref ?? node.allOf?.[0]?.$ref;
      if (!target) return node;
      const name = String(target).replace("#/components/schemas/", "");
      expect(schemas[name], name).toBeDefined();
      return schemas[name]!;
    };
    const deployment = Object.values(schemas).find((s) => s["x-kubernetes-group-version-kind"]?.[0]?.kind === "Deployment")!;
    expect(deployment).toBeDefined();
    expect(deployment.description).toContain("Deployment enables declarative updates for Pods and ReplicaSets");
    expect(deployment.properties.spec).toMatchObject({
      description: expect.stringContaining("Specification of the desired behavior of the Deployment."),
      allOf: [{ $ref: "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec" }],
    });
    const spec = deref(deployment.properties.spec);
    expect(spec.required).toEqual(expect.arrayContaining(["selector", "template"]));
    expect(spec.properties.replicas).toMatchObject({ type: "integer", format: "int32" });
    expect(deref(spec.properties.selector)).toBe(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]);
    const podSpec = deref(deref(spec.properties.template).properties.spec);
    const containers = podSpec.properties.containers;
    expect(containers).toMatchObject({
      type: "array",
      "x-kubernetes-patch-merge-key": "name",
      "x-kubernetes-patch-strategy": "merge",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
    });
    const container = deref(containers.items);
    expect(container.properties.image.description).toContain("Container image name");
    expect(container.required).toEqual(["name"]);
    expect(container.properties.imagePullPolicy.enum).toEqual(["Always", "IfNotPresent", "Never"]);
    expect(deref(container.properties.ports.items).properties.protocol.enum).toEqual(["SCTP", "TCP", "UDP"]);
    expect(deref(deref(spec.properties.strategy).properties.rollingUpdate).properties.maxSurge.allOf[0].$ref).toBe(
      "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    );
    const v2 = await call("GET", "/openapi/v2");
    expect(v2.status).toBe(200);
    const defs = Object.values(v2.body.definitions as Record<string, Json>);
    for (const def of BUILTIN_KINDS)
      expect(
        defs.some((s) => s["x-kubernetes-group-version-kind"]?.some((g: Json) => g.kind === def.kind && g.group === def.group)),
        def.kind,
      ).toBe(true);
  });
});
