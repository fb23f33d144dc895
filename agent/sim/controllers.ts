/**
 * What kube-controller-manager, the scheduler and the kubelets would do, reduced to synchronous
 * functions the simulated API server runs inside each write:
 *
 * - first-start seeding: the four system namespaces, Nodes, the ClusterProperty CRD and properties;
 * - create-time defaulting done by kube-apiserver itself (Namespace phase/label, Secret type and
 *   `stringData`, Service `clusterIP`);
 * - status controllers: Deployment / ReplicaSet / StatefulSet report `spec.replicas` ready,
 *   DaemonSet reports one ready pod per Node (like the real controller it also counts cordoned
 *   Nodes, since DaemonSet pods tolerate `node.kubernetes.io/unschedulable`), Job completes at once,
 *   CRDs become Established, Pods are bound to a Node with `spec.unschedulable != true` and run.
 */
import { randomUUID } from "node:crypto";
import { isObj, nowRfc3339, type KubeObject, type Obj } from "./types.ts";

/** Per-node capacity of a simulated Node (Kubernetes quantity strings). */
export const NODE_CAPACITY = { cpu: "4", memory: "16Gi", pods: "110", "ephemeral-storage": "100Gi" };
/** Per-node allocatable of a simulated Node (capacity minus system reservations). */
export const NODE_ALLOCATABLE = { cpu: "3800m", memory: "15Gi", pods: "110", "ephemeral-storage": "95Gi" };

/** The name of the `i`-th simulated node (1-based): `sim-node-1`, ... */
export function nodeName(i: number): string {
  return `sim-node-${i}`;
}

function baseMeta(name: string, namespace?: string): KubeObject["metadata"] {
  const m: KubeObject["metadata"] = { name, uid: randomUUID(), resourceVersion: "", creationTimestamp: nowRfc3339() };
  if (namespace) m.namespace = namespace;
  return m;
}

/** A Namespace object named `name`, Active, with a fresh UUID v4 uid. */
export function namespaceObject(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { ...baseMeta(name), labels: { "kubernetes.io/metadata.name": name } },
    spec: { finalizers: ["kubernetes"] },
    status: { phase: "Active" },
  };
}

/** The Node `sim-node-<i>` (1-based) with the standard capacity/allocatable, Ready, reporting `kubeletVersion`. */
export function nodeObject(i: number, kubeletVersion: string): KubeObject {
  const name = nodeName(i);
  const now = nowRfc3339();
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      ...baseMeta(name),
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
      },
    },
    spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
    status: {
      capacity: { ...NODE_CAPACITY },
      allocatable: { ...NODE_ALLOCATABLE },
      conditions: [
        {
          type: "MemoryPressure",
          status: "False",
          reason: "KubeletHasSufficientMemory",
          message: "kubelet has sufficient memory available",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        {
          type: "DiskPressure",
          status: "False",
          reason: "KubeletHasNoDiskPressure",
          message: "kubelet has no disk pressure",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        {
          type: "PIDPressure",
          status: "False",
          reason: "KubeletHasSufficientPID",
          message: "kubelet has sufficient PID available",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status", lastHeartbeatTime: now, lastTransitionTime: now },
      ],
      addresses: [
        { type: "InternalIP", address: `10.0.0.${10 + i}` },
        { type: "Hostname", address: name },
      ],
      nodeInfo: {
        kubeletVersion,
        kubeProxyVersion: kubeletVersion,
        containerRuntimeVersion: "containerd://1.7.22",
        kernelVersion: "6.1.0-sim",
        osImage: "Simulated Linux",
        operatingSystem: "linux",
        architecture: "amd64",
        machineID: randomUUID().replace(/-/g, ""),
        systemUUID: randomUUID(),
        bootID: randomUUID(),
      },
    },
  };
}

/** The `clusterproperties.about.k8s.io` CRD as published by kubernetes-sigs/about-api (v1alpha1 served, v1beta1 storage). */
export function clusterPropertyCrd(): KubeObject {
  const schema = {
    type: "object",
    description:
      "ClusterProperty is a resource provides a way to store identification related, cluster scoped information for multi-cluster tools while creating flexibility for implementations.",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec: { type: "object", required: ["value"], properties: { value: { type: "string", minLength: 1, description: "ClusterProperty value" } } },
      status: { type: "object" },
    },
    required: ["spec"],
  };
  const version = (name: string, storage: boolean): Obj => ({
    name,
    served: true,
    storage,
    schema: { openAPIV3Schema: schema },
    subresources: { status: {} },
    additionalPrinterColumns: [
      { name: "value", type: "string", jsonPath: ".spec.value" },
      { name: "age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ],
  });
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { ...baseMeta("clusterproperties.about.k8s.io"), generation: 1 },
    spec: {
      group: "about.k8s.io",
      names: {
        kind: "ClusterProperty",
        listKind: "ClusterPropertyList",
        plural: "clusterproperties",
        singular: "clusterproperty",
        categories: ["multicluster"],
      },
      scope: "Cluster",
      versions: [version("v1alpha1", false), version("v1beta1", true)],
    },
  };
}

/**
 * The `clusterclaims.cluster.open-cluster-management.io` CRD as OCM's klusterlet installs it on a
 * managed cluster: cluster-scoped `ClusterClaim` (`v1alpha1`, short name `cc`), `spec.value` a
 * string of 1–1024 characters.
 */
export function clusterClaimCrd(): KubeObject {
  const schema = {
    type: "object",
    description: "ClusterClaim represents cluster information that a managed cluster claims.",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec: { type: "object", properties: { value: { type: "string", minLength: 1, maxLength: 1024, description: "Value is a claim-dependent string" } } },
    },
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { ...baseMeta("clusterclaims.cluster.open-cluster-management.io"), generation: 1 },
    spec: {
      group: "cluster.open-cluster-management.io",
      names: { kind: "ClusterClaim", listKind: "ClusterClaimList", plural: "clusterclaims", singular: "clusterclaim", shortNames: ["cc"] },
      scope: "Cluster",
      versions: [{ name: "v1alpha1", served: true, storage: true, schema: { openAPIV3Schema: schema } }],
    },
  };
}

/** A ClusterProperty (about.k8s.io/v1beta1) named `name` with `spec.value = value`. */
export function clusterPropertyObject(name: string, value: string): KubeObject {
  return { apiVersion: "about.k8s.io/v1beta1", kind: "ClusterProperty", metadata: { ...baseMeta(name), generation: 1 }, spec: { value } };
}

let serviceIpCounter = 10;

/**
 * Defaults kube-apiserver applies when an object is created (mutates `obj`): Namespace label and
 * phase, Secret `type: Opaque` and `stringData` folded into base64 `data`, Service `clusterIP`.
 */
export function applyCreateDefaults(kind: string, group: string, obj: KubeObject): void {
  if (group !== "") return;
  if (kind === "Namespace") {
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), "kubernetes.io/metadata.name": obj.metadata.name };
    obj.spec = { finalizers: ["kubernetes"], ...(isObj(obj.spec) ? obj.spec : {}) };
    obj.status = { phase: "Active" };
  }
  if (kind === "Secret" || kind === "ConfigMap") normaliseData(kind, obj);
  if (kind === "Service") {
    const spec: Obj = isObj(obj.spec) ? obj.spec : {};
    if (spec.type === undefined) spec.type = "ClusterIP";
    if (spec.clusterIP === undefined && spec.type !== "ExternalName") {
      const n = serviceIpCounter++;
      spec.clusterIP = `10.96.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
      spec.clusterIPs = [spec.clusterIP];
    }
    if (spec.sessionAffinity === undefined) spec.sessionAffinity = "None";
    obj.spec = spec;
  }
}

/** Secret: defaults `type` to Opaque and folds `stringData` into base64 `data` (done on every write, as the Secret strategy does). */
export function normaliseData(kind: string, obj: KubeObject): void {
  if (kind !== "Secret") return;
  if (obj.type === undefined) obj.type = "Opaque";
  if (isObj(obj.stringData)) {
    const data: Obj = isObj(obj.data) ? obj.data : {};
    for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v), "utf8").toString("base64");
    obj.data = data;
    delete obj.stringData;
  }
}

function replicasOf(obj: KubeObject): number {
  const spec = isObj(obj.spec) ? obj.spec : {};
  return typeof spec.replicas === "number" ? spec.replicas : 1;
}

/** Sets only the non-zero counters, as Kubernetes' `omitempty` int32 status fields serialise. */
function counters(fields: Record<string, number>): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(fields)) if (v !== 0) out[k] = v;
  return out;
}

function condition(type: string, status: string, reason: string, message: string, extra: Obj = {}): Obj {
  const now = nowRfc3339();
  return { type, status, lastTransitionTime: now, reason, message, ...extra };
}

/** What the status controllers need to know about the rest of the cluster. */
export interface ClusterView {
  /** All Node objects. */
  nodes: KubeObject[];
}

/**
 * The status the simulated controllers would write for `obj` of `group`/`kind`, or undefined when
 * the current status is already what they would write (so no write is needed).
 */
export function desiredStatus(group: string, kind: string, obj: KubeObject, view: ClusterView): Obj | undefined {
  const status: Obj = isObj(obj.status) ? obj.status : {};
  const gen = obj.metadata.generation ?? 1;
  const observed = status.observedGeneration;
  if (obj.metadata.deletionTimestamp) return undefined;
  if (group === "apps" && kind === "Deployment") {
    if (observed === gen) return undefined;
    const n = replicasOf(obj);
    return {
      observedGeneration: gen,
      ...counters({ replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n }),
      conditions: [
        condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", { lastUpdateTime: nowRfc3339() }),
        condition("Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "${obj.metadata.name}-sim" has successfully progressed.`, {
          lastUpdateTime: nowRfc3339(),
        }),
      ],
    };
  }
  if (group === "apps" && (kind === "ReplicaSet" || kind === "StatefulSet")) {
    if (observed === gen) return undefined;
    const n = replicasOf(obj);
    const base = counters({ replicas: n, readyReplicas: n, availableReplicas: n });
    if (kind === "ReplicaSet") return { observedGeneration: gen, ...base, ...counters({ fullyLabeledReplicas: n }) };
    return { observedGeneration: gen, ...base, ...counters({ currentReplicas: n, updatedReplicas: n }), collisionCount: 0 };
  }
  if (group === "apps" && kind === "DaemonSet") {
    const n = view.nodes.length;
    if (observed === gen && status.desiredNumberScheduled === n) return undefined;
    return {
      observedGeneration: gen,
      currentNumberScheduled: n,
      desiredNumberScheduled: n,
      numberMisscheduled: 0,
      numberReady: n,
      updatedNumberScheduled: n,
      numberAvailable: n,
    };
  }
  if (group === "batch" && kind === "Job") {
    const conds = Array.isArray(status.conditions) ? status.conditions : [];
    if (conds.some((c) => isObj(c) && c.type === "Complete")) return undefined;
    const now = nowRfc3339();
    return {
      ...status,
      startTime: typeof status.startTime === "string" ? status.startTime : now,
      completionTime: now,
      succeeded: 1,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
      conditions: [
        condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
      ],
    };
  }
  if (group === "apiextensions.k8s.io" && kind === "CustomResourceDefinition") {
    const spec = isObj(obj.spec) ? obj.spec : {};
    const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObj) : [];
    const want: Obj = {
      acceptedNames: spec.names ?? {},
      storedVersions: versions.filter((v) => v.storage === true).map((v) => v.name),
      conditions: [
        condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
      ],
    };
    if (JSON.stringify(status.acceptedNames) === JSON.stringify(want.acceptedNames) && Array.isArray(status.conditions)) return undefined;
    return want;
  }
  if (group === "" && kind === "Pod") {
    const spec: Obj = isObj(obj.spec) ? obj.spec : {};
    if (status.phase === "Running" || status.phase === "Succeeded" || status.phase === "Failed") return undefined;
    const schedulable = view.nodes.filter((n) => !(isObj(n.spec) && n.spec.unschedulable === true));
    const bound = typeof spec.nodeName === "string" && spec.nodeName !== "";
    if (!bound && schedulable.length === 0) {
      if (status.phase === "Pending") return undefined;
      return {
        phase: "Pending",
        conditions: [
          condition("PodScheduled", "False", "Unschedulable", `0/${view.nodes.length} nodes are available: ${view.nodes.length} node(s) were unschedulable.`),
        ],
      };
    }
    const now = nowRfc3339();
    const containers = Array.isArray(spec.containers) ? spec.containers.filter(isObj) : [];
    return {
      phase: "Running",
      hostIP: "10.0.0.11",
      podIP: `10.244.1.${(Number.parseInt(obj.metadata.uid.slice(0, 2), 16) % 250) + 2}`,
      startTime: now,
      conditions: ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map((t) => ({ type: t, status: "True", lastTransitionTime: now })),
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: c.image,
        imageID: "",
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
    };
  }
  return undefined;
}

/**
 * The Node a new Pod is bound to (what the scheduler does): round-robin over Nodes whose
 * `spec.unschedulable` is not true, by pod uid. Undefined when the Pod is already bound or no
 * Node is schedulable.
 */
export function scheduleNode(pod: KubeObject, nodes: KubeObject[]): string | undefined {
  const spec: Obj = isObj(pod.spec) ? pod.spec : {};
  if (typeof spec.nodeName === "string" && spec.nodeName) return undefined;
  const ok = nodes.filter((n) => !(isObj(n.spec) && n.spec.unschedulable === true));
  if (ok.length === 0) return undefined;
  const idx = Number.parseInt(pod.metadata.uid.slice(0, 8), 16) % ok.length;
  return ok[idx]?.metadata.name;
}

function setDefault(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

function objAt(o: Obj, key: string): Obj {
  if (!isObj(o[key])) o[key] = {};
  return o[key] as Obj;
}

function podSpecDefaults(spec: Obj): void {
  setDefault(spec, "restartPolicy", "Always");
  setDefault(spec, "dnsPolicy", "ClusterFirst");
  setDefault(spec, "schedulerName", "default-scheduler");
  setDefault(spec, "terminationGracePeriodSeconds", 30);
  setDefault(spec, "securityContext", {});
  for (const field of ["containers", "initContainers"]) {
    const list = spec[field];
    if (!Array.isArray(list)) continue;
    for (const c of list.filter(isObj)) {
      const image = typeof c.image === "string" ? c.image : "";
      const tagged = /:[^/]+$/.test(image.replace(/@.*$/, "")) && !image.endsWith(":latest");
      setDefault(c, "imagePullPolicy", tagged || image.includes("@") ? "IfNotPresent" : "Always");
      setDefault(c, "terminationMessagePath", "/dev/termination-log");
      setDefault(c, "terminationMessagePolicy", "File");
      setDefault(c, "resources", {});
      if (Array.isArray(c.ports)) for (const p of c.ports.filter(isObj)) setDefault(p, "protocol", "TCP");
    }
  }
}

function templateDefaults(spec: Obj): void {
  podSpecDefaults(objAt(objAt(spec, "template"), "spec"));
}

/**
 * The defaults kube-apiserver's decoders fill on every write (a subset of `SetDefaults_*`):
 * Deployment/DaemonSet/StatefulSet/ReplicaSet/Job/CronJob specs and their pod templates, Pods,
 * Service ports. Mutates `obj`; fields already set are left alone.
 */
export function applyWriteDefaults(group: string, kind: string, obj: KubeObject): void {
  if (!isObj(obj.spec)) {
    if (!["Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "Pod", "Service"].includes(kind)) return;
    obj.spec = {};
  }
  const spec = obj.spec as Obj;
  const key = `${group}/${kind}`;
  switch (key) {
    case "apps/Deployment":
      setDefault(spec, "replicas", 1);
      setDefault(spec, "revisionHistoryLimit", 10);
      setDefault(spec, "progressDeadlineSeconds", 600);
      setDefault(spec, "strategy", { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } });
      templateDefaults(spec);
      break;
    case "apps/DaemonSet":
      setDefault(spec, "revisionHistoryLimit", 10);
      setDefault(spec, "updateStrategy", { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } });
      templateDefaults(spec);
      break;
    case "apps/StatefulSet":
      setDefault(spec, "replicas", 1);
      setDefault(spec, "revisionHistoryLimit", 10);
      setDefault(spec, "podManagementPolicy", "OrderedReady");
      setDefault(spec, "updateStrategy", { type: "RollingUpdate", rollingUpdate: { partition: 0 } });
      templateDefaults(spec);
      break;
    case "apps/ReplicaSet":
      setDefault(spec, "replicas", 1);
      templateDefaults(spec);
      break;
    case "batch/Job":
      setDefault(spec, "parallelism", 1);
      setDefault(spec, "completions", 1);
      setDefault(spec, "backoffLimit", 6);
      setDefault(spec, "completionMode", "NonIndexed");
      setDefault(spec, "suspend", false);
      templateDefaults(spec);
      break;
    case "/Pod":
      podSpecDefaults(spec);
      break;
    case "/Service":
      if (Array.isArray(spec.ports)) {
        for (const p of spec.ports.filter(isObj)) {
          setDefault(p, "protocol", "TCP");
          setDefault(p, "targetPort", p.port);
        }
      }
      break;
  }
}
