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
import { deepEqual, isObj, nowRfc3339, type KubeObject, type Obj } from "./types.ts";

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

/**
 * Where a workload is in coming up, as the simulated cluster's clock sees it (kwok's stages with
 * a delay): `ready` once the delay since its current generation was first seen has passed;
 * `bad` (never ready) when {@link neverReady} says so.
 */
export interface Progress {
  ready: boolean;
  bad: boolean;
}

/** What the status controllers need to know about the rest of the cluster. */
export interface ClusterView {
  /** All Node objects. */
  nodes: KubeObject[];
  /** Whether a workload (or Pod) is ready yet; default: ready at once unless {@link neverReady}. */
  progress?: (obj: KubeObject) => Progress;
}

/** Annotation on an object: never ready ("true"), as if its image could not be pulled. */
export const NEVER_READY_ANNOTATION = "sim.flotilla.dev/never-ready";
/** Annotation on an object: its own delay before ready, in milliseconds (overrides the cluster's `readyDelayMs`). */
export const READY_DELAY_ANNOTATION = "sim.flotilla.dev/ready-delay";

/** The pod specs of a workload, a Pod or a CronJob's job template. */
function podSpecsOf(obj: KubeObject): Obj[] {
  const spec: Obj = isObj(obj.spec) ? obj.spec : {};
  const tmpl = (o: Obj): Obj | undefined => (isObj(o.template) && isObj(o.template.spec) ? o.template.spec : undefined);
  const out: Obj[] = [];
  if (obj.kind === "Pod") out.push(spec);
  const t = tmpl(spec);
  if (t) out.push(t);
  if (isObj(spec.jobTemplate) && isObj(spec.jobTemplate.spec)) {
    const j = tmpl(spec.jobTemplate.spec);
    if (j) out.push(j);
  }
  return out;
}

/** Whether an image names a bad image: its tag is `bad` or starts with `bad` (`nginx:bad`, `app:bad-1.2`), which never pulls. */
export function isBadImage(image: string): boolean {
  const noDigest = image.replace(/@.*$/, "");
  const colon = noDigest.lastIndexOf(":");
  return colon > noDigest.lastIndexOf("/") && noDigest.slice(colon + 1).startsWith("bad");
}

/**
 * Whether a workload, Pod or CronJob never becomes ready in the simulated cluster: annotation
 * {@link NEVER_READY_ANNOTATION} `"true"`, or a container (or init container) image that
 * {@link isBadImage} (its pods stay in `ImagePullBackOff`).
 */
export function neverReady(obj: KubeObject): boolean {
  if (obj.metadata.annotations?.[NEVER_READY_ANNOTATION] === "true") return true;
  return podSpecsOf(obj).some((ps) =>
    ["containers", "initContainers"].some(
      (f) => Array.isArray(ps[f]) && (ps[f] as unknown[]).some((c) => isObj(c) && typeof c.image === "string" && isBadImage(c.image)),
    ),
  );
}

/** The delay before `obj` is ready, in milliseconds: its {@link READY_DELAY_ANNOTATION} when a non-negative integer, else `fallback`. */
export function readyDelayOf(obj: KubeObject, fallback: number): number {
  const raw = obj.metadata.annotations?.[READY_DELAY_ANNOTATION];
  return raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : fallback;
}

/** A short stable hash of a pod template, for ControllerRevision-like names (`<name>-<hash>`). */
function templateHash(obj: KubeObject): string {
  const spec: Obj = isObj(obj.spec) ? obj.spec : {};
  const text = JSON.stringify(spec.template ?? {});
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16).padStart(8, "0").slice(0, 8);
}

/** `a` and `b` equal once condition and status timestamps are left out (so a status is not rewritten only for its times). */
function sameIgnoringTimes(a: unknown, b: unknown): boolean {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isObj(v)) return v;
    const out: Obj = {};
    for (const [k, x] of Object.entries(v)) if (!["lastTransitionTime", "lastUpdateTime", "startTime", "completionTime"].includes(k)) out[k] = strip(x);
    return out;
  };
  return deepEqual(strip(a), strip(b));
}

/**
 * The status the simulated controllers would write for `obj` of `group`/`kind`, or undefined when
 * the current status is already what they would write (so no write is needed). Workloads come up
 * as kwok's stages bring them: at once the controller observes the new generation with its pods
 * created and not ready; once {@link ClusterView.progress} says ready, every replica is ready,
 * updated and available (a Job completes); a {@link neverReady} workload stays not ready.
 */
export function desiredStatus(group: string, kind: string, obj: KubeObject, view: ClusterView): Obj | undefined {
  const status: Obj = isObj(obj.status) ? obj.status : {};
  const gen = obj.metadata.generation ?? 1;
  if (obj.metadata.deletionTimestamp && !(group === "apiextensions.k8s.io" && kind === "CustomResourceDefinition")) return undefined;
  const progress = (): Progress => view.progress?.(obj) ?? { ready: !neverReady(obj), bad: neverReady(obj) };
  const observed = status.observedGeneration;
  // The controller writes a new generation's status at once (pending or, when ready already,
  // done), and later turns its own pending status into done; a status someone else wrote for
  // the current generation is left alone, as before.
  const settle = (current: boolean, ready: () => boolean, pending: () => Obj, done: () => Obj): Obj | undefined => {
    if (!current) return ready() ? done() : pending();
    return ready() && sameIgnoringTimes(status, pending()) ? done() : undefined;
  };
  if (group === "apps" && kind === "Deployment") {
    const n = replicasOf(obj);
    const rs = `ReplicaSet "${obj.metadata.name}-${templateHash(obj)}"`;
    const shape = (r: number, conditions: Obj[]): Obj => ({
      observedGeneration: gen,
      ...counters({ replicas: n, updatedReplicas: n, readyReplicas: r, availableReplicas: r, unavailableReplicas: n - r }),
      conditions,
    });
    const at = { lastUpdateTime: nowRfc3339() };
    return settle(
      observed === gen,
      () => n === 0 || progress().ready,
      () =>
        shape(0, [
          condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", at),
          condition("Progressing", "True", "ReplicaSetUpdated", `${rs} is progressing.`, at),
        ]),
      () =>
        shape(n, [
          condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", at),
          condition("Progressing", "True", "NewReplicaSetAvailable", `${rs} has successfully progressed.`, at),
        ]),
    );
  }
  if (group === "apps" && (kind === "ReplicaSet" || kind === "StatefulSet")) {
    const n = replicasOf(obj);
    const revision = `${obj.metadata.name}-${templateHash(obj)}`;
    const shape = (r: number): Obj => {
      const base = counters({ replicas: n, readyReplicas: r, availableReplicas: r });
      if (kind === "ReplicaSet") return { observedGeneration: gen, ...base, ...counters({ fullyLabeledReplicas: n }) };
      const previous = typeof status.currentRevision === "string" ? status.currentRevision : revision;
      return {
        observedGeneration: gen,
        ...base,
        ...counters({ currentReplicas: r === n ? n : 0, updatedReplicas: n }),
        currentRevision: r === n ? revision : previous,
        updateRevision: revision,
        collisionCount: 0,
      };
    };
    return settle(
      observed === gen,
      () => n === 0 || progress().ready,
      () => shape(0),
      () => shape(n),
    );
  }
  if (group === "apps" && kind === "DaemonSet") {
    const n = view.nodes.length;
    const shape = (r: number): Obj => ({
      observedGeneration: gen,
      currentNumberScheduled: n,
      desiredNumberScheduled: n,
      numberMisscheduled: 0,
      numberReady: r,
      updatedNumberScheduled: n,
      numberAvailable: r,
      ...counters({ numberUnavailable: n - r }),
    });
    return settle(
      observed === gen && status.desiredNumberScheduled === n,
      () => n === 0 || progress().ready,
      () => shape(0),
      () => shape(n),
    );
  }
  if (group === "batch" && kind === "Job") {
    const conds = Array.isArray(status.conditions) ? status.conditions : [];
    if (conds.some((c) => isObj(c) && c.type === "Complete")) return undefined;
    const now = nowRfc3339();
    const startTime = typeof status.startTime === "string" ? status.startTime : now;
    if (!progress().ready) {
      const pending: Obj = { startTime, active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {} };
      return sameIgnoringTimes(status, pending) ? undefined : pending;
    }
    const { active: _active, ...rest } = status;
    return {
      ...rest,
      startTime,
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
    // Being deleted: apiextensions' finalizer controller says so while it deletes the resources.
    const terminating = Boolean(obj.metadata.deletionTimestamp);
    if (terminating) (want.conditions as Obj[]).push(condition("Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"));
    const hasTerminating = Array.isArray(status.conditions) && status.conditions.some((c) => isObj(c) && c.type === "Terminating");
    if (JSON.stringify(status.acceptedNames) === JSON.stringify(want.acceptedNames) && Array.isArray(status.conditions) && hasTerminating === terminating)
      return undefined;
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
    const p = progress();
    if (!p.ready) {
      const reason = p.bad ? "ImagePullBackOff" : "ContainerCreating";
      const want: Obj = {
        phase: "Pending",
        hostIP: "10.0.0.11",
        conditions: [
          { type: "PodScheduled", status: "True", lastTransitionTime: now },
          { type: "Ready", status: "False", reason: "ContainersNotReady", lastTransitionTime: now },
        ],
        containerStatuses: containers.map((c) => ({
          name: c.name,
          image: c.image,
          imageID: "",
          ready: false,
          started: false,
          restartCount: 0,
          state: { waiting: { reason, ...(p.bad ? { message: `Back-off pulling image ${JSON.stringify(c.image)}` } : {}) } },
        })),
      };
      return sameIgnoringTimes(status, want) ? undefined : want;
    }
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
