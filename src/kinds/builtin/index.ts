/**
 * The built-in Kubernetes kinds an app is made of, stored on the hub as templates (issue 42:
 * objects a placement propagates to member clusters, as on KubeFleet's and Karmada's hubs):
 * core/v1 ConfigMap, Service, PersistentVolumeClaim, LimitRange, ResourceQuota; apps/v1
 * Deployment, StatefulSet, DaemonSet; batch/v1 Job, CronJob; networking.k8s.io/v1 Ingress,
 * NetworkPolicy; policy/v1 PodDisruptionBudget; autoscaling/v2 HorizontalPodAutoscaler
 * (ServiceAccount and Secret are src/kinds/serviceaccount.ts, src/kinds/secret.ts).
 *
 * Each is served as kube-apiserver serves it: its names, short names and scope (pkg/registry's
 * `ShortNames()` and `NamespaceScoped()`), its OpenAPI schema (src/kinds/builtin/schema.ts: unknown
 * fields, types, required fields, enums), its registry strategy (pkg/registry/<group>/<kind>/
 * strategy.go: the `/status` subresource of the kinds that have one, so a write to the main
 * resource keeps the stored status and `/status` writes only the status; `metadata.generation`
 * bumped on a change of the spec), the defaulting a user sees in what is stored
 * (pkg/apis/<group>/v1/defaults.go: replicas, strategies, pod template defaults, Service ports'
 * protocol and targetPort, a Job's generated selector), the validation users meet
 * (pkg/apis/<group>/validation: names, selectors that match their template, containers, ports,
 * immutable fields) and `kubectl get`'s columns (pkg/printers/internalversion/printers.go).
 *
 * Nothing runs them on the hub: no pods, no ReplicaSets, no endpoints, no cluster IPs; the hub
 * invents no status (a Deployment on the hub reads READY `0/3` until something writes its
 * status through `/status`).
 */
import { clock } from "../../clock.ts";
import type { StatusCause } from "../../k8s/errors.ts";
import type { KindDefinition, PrinterColumn } from "../../k8s/kind.ts";
import { isJsonObject, type JsonObject, type KubeObject } from "../../k8s/meta.ts";
import { matchesLabelSelector, validateLabelSelector, type LabelSelectorInput } from "../../k8s/labels.ts";
import { fieldDuplicate, fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, fieldTooLong, isDNS1123Label } from "../../k8s/validation.ts";
import { humanDuration } from "../../k8s/duration.ts";
import { configKeyErrors } from "../secret.ts";
import { containersOf, defaultPodTemplate, dropNulls, validatePodTemplate } from "./pods.ts";
import { builtinOpenAPI, builtinSchema } from "./schema.ts";

const AGE: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
const obj = (v: unknown): JsonObject | undefined => (isJsonObject(v) ? v : undefined);
const list = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isJsonObject) : []);
const specOf = (o: KubeObject): JsonObject => obj(o.spec) ?? {};
const statusOf = (o: KubeObject): JsonObject => obj(o.status) ?? {};
const num = (v: unknown): number => (typeof v === "number" ? v : 0);
const orNone = (s: string): string => (s === "" ? "<none>" : s);

/** A label selector as `kubectl get -o wide` prints it (metav1.FormatLabelSelector). */
function formatSelector(sel: unknown): string {
  const s = obj(sel);
  if (!s) return "<none>";
  const parts = Object.entries(obj(s.matchLabels) ?? {}).map(([k, v]) => `${k}=${String(v)}`);
  for (const e of list(s.matchExpressions)) {
    const values = Array.isArray(e.values) ? e.values.map(String) : [];
    if (e.operator === "In") parts.push(`${String(e.key)} in (${values.join(",")})`);
    else if (e.operator === "NotIn") parts.push(`${String(e.key)} notin (${values.join(",")})`);
    else if (e.operator === "Exists") parts.push(String(e.key));
    else parts.push(`!${String(e.key)}`);
  }
  return parts.length === 0 ? "<none>" : parts.join(",");
}

/** The CONTAINERS, IMAGES and SELECTOR columns (priority 1: `-o wide`) of a workload whose template is at `template`. */
function wideColumns(template: (o: KubeObject) => unknown, selector = true): PrinterColumn[] {
  const cols: PrinterColumn[] = [
    { name: "Containers", type: "string", jsonPath: ".spec.template.spec.containers[*].name", priority: 1, value: (o) => containersOf(template(o)).names },
    { name: "Images", type: "string", jsonPath: ".spec.template.spec.containers[*].image", priority: 1, value: (o) => containersOf(template(o)).images },
  ];
  if (selector) cols.push({ name: "Selector", type: "string", jsonPath: ".spec.selector", priority: 1, value: (o) => formatSelector(specOf(o).selector) });
  return cols;
}

const labelsOf = (template: unknown): Record<string, string> | undefined => obj(obj(obj(template)?.metadata)?.labels) as Record<string, string> | undefined;

/**
 * A workload's selector as apps/v1 validates it (ValidateDeploymentSpec and its kin): required,
 * not empty, valid, matching the template's labels; immutable after creation (apps/v1).
 */
function validateWorkloadSelector(o: KubeObject, old: KubeObject | undefined, what: string): StatusCause[] {
  const spec = specOf(o);
  const sel = spec.selector as LabelSelectorInput | undefined;
  const out: StatusCause[] = [];
  if (!isJsonObject(sel)) return [fieldRequired("spec.selector")];
  const empty = Object.keys(obj(sel.matchLabels) ?? {}).length === 0 && list(sel.matchExpressions).length === 0;
  if (empty) out.push(fieldInvalid("spec.selector", sel, `empty selector is invalid for ${what}`));
  const errs = validateLabelSelector(sel, "spec.selector");
  out.push(...errs);
  if (!empty && errs.length === 0 && !matchesLabelSelector(sel, labelsOf(spec.template) ?? {}))
    out.push(fieldInvalid("spec.template.metadata.labels", labelsOf(spec.template) ?? {}, "`selector` does not match template `labels`"));
  if (old && JSON.stringify(specOf(old).selector) !== JSON.stringify(sel)) out.push(fieldInvalid("spec.selector", sel, "field is immutable"));
  return out;
}

function nonNegative(v: unknown, field: string): StatusCause[] {
  return typeof v === "number" && v < 0 ? [fieldInvalid(field, v, "must be greater than or equal to 0")] : [];
}

/** The parts every kind here shares: the D1 store, the vendored schema (read on first use), nulls dropped. */
function kind(
  gvk: string,
  names: { plural: string; singular?: string; shortNames?: string[]; categories?: string[] },
  rest: Omit<Partial<KindDefinition>, "schema"> & { hasStatus: boolean },
): KindDefinition {
  const [group, version, kindName] = gvk.split("/") as [string, string, string];
  const defaults = rest.defaults;
  const def: KindDefinition = {
    group: group === "core" ? "" : group,
    version,
    kind: kindName,
    listKind: `${kindName}List`,
    plural: names.plural,
    singular: names.singular ?? kindName.toLowerCase(),
    shortNames: names.shortNames ?? [],
    ...(names.categories ? { categories: names.categories } : {}),
    namespaced: true,
    storage: "d1",
    get schema() {
      return builtinSchema(gvk);
    },
    openAPI: () => builtinOpenAPI(gvk),
    ...rest,
    defaults(o) {
      for (const [k, v] of Object.entries(o)) {
        if (k === "metadata") continue;
        if (v === null) delete o[k];
        else dropNulls(v);
      }
      defaults?.(o);
    },
  };
  return def;
}

// ---- core/v1 ---------------------------------------------------------------------------------

/** ConfigMap's total size limit (`MaxConfigMapSize`, 1 MiB of keys and values). */
const MAX_CONFIGMAP_BYTES = 1024 * 1024;

/** core/v1 ConfigMap (`cm`): keys valid config keys, unique across data and binaryData, at most 1 MiB; `immutable`. */
export const ConfigMapKind = kind(
  "core/v1/ConfigMap",
  { plural: "configmaps", shortNames: ["cm"] },
  {
    hasStatus: false,
    printerColumns: [
      { name: "Data", type: "integer", jsonPath: ".data", value: (o) => Object.keys(obj(o.data) ?? {}).length + Object.keys(obj(o.binaryData) ?? {}).length },
      AGE,
    ],
    validate(o, old) {
      const out: StatusCause[] = [];
      let size = 0;
      const data = obj(o.data) ?? {};
      const binary = obj(o.binaryData) ?? {};
      for (const [k, v] of Object.entries(data)) {
        for (const m of configKeyErrors(k)) out.push(fieldInvalid(`data[${k}]`, k, m));
        size += k.length + String(v).length;
      }
      for (const [k, v] of Object.entries(binary)) {
        for (const m of configKeyErrors(k)) out.push(fieldInvalid(`binaryData[${k}]`, k, m));
        if (k in data) out.push(fieldInvalid(`data[${k}]`, k, "duplicate of key present in binaryData"));
        size += k.length + Math.floor((String(v).length * 3) / 4);
      }
      if (size > MAX_CONFIGMAP_BYTES) out.push(fieldTooLong("", MAX_CONFIGMAP_BYTES));
      if (old?.immutable === true) {
        if (o.immutable !== true) out.push(fieldForbidden("immutable", "field is immutable when `immutable` is set"));
        if (JSON.stringify(old.data ?? {}) !== JSON.stringify(o.data ?? {})) out.push(fieldForbidden("data", "field is immutable when `immutable` is set"));
        if (JSON.stringify(old.binaryData ?? {}) !== JSON.stringify(o.binaryData ?? {}))
          out.push(fieldForbidden("binaryData", "field is immutable when `immutable` is set"));
      }
      return out;
    },
  },
);

const SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

function servicePorts(o: KubeObject): string {
  const ports = list(specOf(o).ports).map((p) => {
    const node = typeof p.nodePort === "number" && p.nodePort !== 0 ? `:${p.nodePort}` : "";
    return `${String(p.port)}${node}/${String(p.protocol ?? "TCP")}`;
  });
  return orNone(ports.join(","));
}

function externalIPs(o: KubeObject): string {
  const spec = specOf(o);
  const type = String(spec.type ?? "ClusterIP");
  const external = Array.isArray(spec.externalIPs) ? spec.externalIPs.map(String) : [];
  if (type === "ExternalName") return String(spec.externalName ?? "");
  if (type === "LoadBalancer") {
    const lb = loadBalancerAddresses(statusOf(o));
    const all = [...(lb ? lb.split(",") : []), ...external];
    return all.length ? all.join(",") : "<pending>";
  }
  return external.length ? external.join(",") : "<none>";
}

/**
 * core/v1 Service (`svc`): name a DNS-1035 label; type, ports (1-65535, names unique and required
 * when several, protocol TCP by default, targetPort the port by default), session affinity None.
 * The hub allocates no cluster IP and no node port (nothing runs them: a member cluster does).
 */
export const ServiceKind = kind(
  "core/v1/Service",
  { plural: "services", shortNames: ["svc"], categories: ["all"] },
  {
    hasStatus: true,
    nameIsDNS1035Label: true,
    printerColumns: [
      { name: "Type", type: "string", jsonPath: ".spec.type" },
      {
        name: "Cluster-IP",
        type: "string",
        jsonPath: ".spec.clusterIP",
        value: (o) => String((specOf(o).clusterIPs as unknown[] | undefined)?.[0] ?? "<none>"),
      },
      { name: "External-IP", type: "string", jsonPath: ".spec.externalIPs", value: externalIPs },
      { name: "Port(s)", type: "string", jsonPath: ".spec.ports", value: servicePorts },
      AGE,
      {
        name: "Selector",
        type: "string",
        jsonPath: ".spec.selector",
        priority: 1,
        value: (o) =>
          orNone(
            Object.entries(obj(specOf(o).selector) ?? {})
              .map(([k, v]) => `${k}=${String(v)}`)
              .join(","),
          ),
      },
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.type ??= "ClusterIP";
      if (spec.type !== "ExternalName") spec.sessionAffinity ??= "None";
      if (spec.type === "ClusterIP" || spec.type === "NodePort" || spec.type === "LoadBalancer") spec.internalTrafficPolicy ??= "Cluster";
      if (spec.type === "NodePort" || spec.type === "LoadBalancer") spec.externalTrafficPolicy ??= "Cluster";
      for (const p of list(spec.ports)) {
        p.protocol ??= "TCP";
        if (p.targetPort === undefined && typeof p.port === "number") p.targetPort = p.port;
      }
    },
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      const type = String(spec.type ?? "ClusterIP");
      if (!SERVICE_TYPES.includes(type)) out.push(fieldNotSupported("spec.type", type, SERVICE_TYPES));
      const ports = list(spec.ports);
      const headless = spec.clusterIP === "None";
      if (type !== "ExternalName" && !headless && ports.length === 0) out.push(fieldRequired("spec.ports"));
      if (type === "ExternalName" && (typeof spec.externalName !== "string" || spec.externalName === "")) out.push(fieldRequired("spec.externalName"));
      const names = new Set<string>();
      const keys = new Set<string>();
      ports.forEach((p, i) => {
        const at = `spec.ports[${i}]`;
        const name = typeof p.name === "string" ? p.name : "";
        if (ports.length > 1 && name === "") out.push(fieldRequired(`${at}.name`));
        if (name !== "") {
          for (const m of isDNS1123Label(name)) out.push(fieldInvalid(`${at}.name`, name, m));
          if (names.has(name)) out.push(fieldDuplicate(`${at}.name`, name));
          names.add(name);
        }
        if (typeof p.port !== "number" || p.port < 1 || p.port > 65535)
          out.push(fieldInvalid(`${at}.port`, p.port ?? 0, "must be between 1 and 65535, inclusive"));
        const key = `${String(p.port)}/${String(p.protocol ?? "TCP")}`;
        if (keys.has(key)) out.push(fieldDuplicate(at, { port: p.port, protocol: p.protocol ?? "TCP" }));
        keys.add(key);
        if (typeof p.targetPort === "number" && (p.targetPort < 1 || p.targetPort > 65535))
          out.push(fieldInvalid(`${at}.targetPort`, p.targetPort, "must be between 1 and 65535, inclusive"));
      });
      return out;
    },
  },
);

/** core/v1 PersistentVolumeClaim (`pvc`): access modes and a storage request required; the spec immutable but for its requests. */
export const PersistentVolumeClaimKind = kind(
  "core/v1/PersistentVolumeClaim",
  { plural: "persistentvolumeclaims", shortNames: ["pvc"] },
  {
    hasStatus: true,
    printerColumns: [
      {
        name: "Status",
        type: "string",
        jsonPath: ".status.phase",
        value: (o) => (o.metadata.deletionTimestamp ? "Terminating" : String(statusOf(o).phase ?? "")),
      },
      { name: "Volume", type: "string", jsonPath: ".spec.volumeName", value: (o) => String(specOf(o).volumeName ?? "") },
      // printPersistentVolumeClaim: capacity and access modes once bound (spec.volumeName), else empty.
      {
        name: "Capacity",
        type: "string",
        jsonPath: ".status.capacity.storage",
        value: (o) => (specOf(o).volumeName ? String(obj(statusOf(o).capacity)?.storage ?? "") : ""),
      },
      {
        name: "Access Modes",
        type: "string",
        jsonPath: ".status.accessModes",
        value: (o) => (specOf(o).volumeName ? accessModes(statusOf(o).accessModes) : ""),
      },
      {
        name: "StorageClass",
        type: "string",
        jsonPath: ".spec.storageClassName",
        value: (o) => String(specOf(o).storageClassName ?? o.metadata.annotations?.["volume.beta.kubernetes.io/storage-class"] ?? ""),
      },
      {
        name: "VolumeAttributesClass",
        type: "string",
        jsonPath: ".spec.volumeAttributesClassName",
        value: (o) => String(specOf(o).volumeAttributesClassName ?? "<unset>"),
      },
      AGE,
      { name: "VolumeMode", type: "string", jsonPath: ".spec.volumeMode", priority: 1, value: (o) => String(specOf(o).volumeMode ?? "<unset>") },
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.volumeMode ??= "Filesystem";
    },
    validate(o, old) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      if (!Array.isArray(spec.accessModes) || spec.accessModes.length === 0) out.push(fieldRequired("spec.accessModes", "at least 1 access mode is required"));
      const requests = obj(obj(spec.resources)?.requests);
      if (!requests || requests.storage === undefined) out.push(fieldRequired("spec.resources[storage]"));
      if (old) {
        const strip = (s: JsonObject) => JSON.stringify({ ...s, resources: undefined, volumeAttributesClassName: undefined, volumeName: undefined });
        if (strip(specOf(old)) !== strip(spec))
          out.push(fieldForbidden("spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"));
      }
      return out;
    },
  },
);

function accessModes(v: unknown): string {
  const short: Record<string, string> = { ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP" };
  return Array.isArray(v) ? v.map((m) => short[String(m)] ?? String(m)).join(",") : "";
}

/** core/v1 LimitRange (`limits`). */
export const LimitRangeKind = kind(
  "core/v1/LimitRange",
  { plural: "limitranges", shortNames: ["limits"] },
  { hasStatus: false, printerColumns: [{ name: "Created At", type: "string", jsonPath: ".metadata.creationTimestamp" }] },
);

function quotaColumn(o: KubeObject, prefix: "requests." | "limits."): string {
  const hard = obj(specOf(o).hard) ?? {};
  const used = obj(statusOf(o).used) ?? {};
  return Object.keys(hard)
    .filter((k) => (prefix === "limits." ? k.startsWith("limits.") : !k.startsWith("limits.")))
    .sort()
    .map((k) => `${k}: ${String(used[k] ?? "0")}/${String(hard[k])}`)
    .join(", ");
}

/** core/v1 ResourceQuota (`quota`): the hub counts no usage (status.used is whatever `/status` wrote). */
export const ResourceQuotaKind = kind(
  "core/v1/ResourceQuota",
  { plural: "resourcequotas", shortNames: ["quota"] },
  {
    hasStatus: true,
    printerColumns: [
      AGE,
      { name: "Request", type: "string", jsonPath: ".spec.hard", value: (o) => quotaColumn(o, "requests.") },
      { name: "Limit", type: "string", jsonPath: ".spec.hard", value: (o) => quotaColumn(o, "limits.") },
    ],
  },
);

// ---- apps/v1 ---------------------------------------------------------------------------------

/**
 * apps/v1 Deployment (`deploy`): defaults (replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit
 * 10, progressDeadlineSeconds 600, the pod template's), a selector that matches the template and
 * never changes, restart policy Always, a valid strategy; the generation bumped by a change of the
 * spec or of the annotations. `kubectl get`: READY UP-TO-DATE AVAILABLE AGE.
 */
export const DeploymentKind = kind(
  "apps/v1/Deployment",
  { plural: "deployments", shortNames: ["deploy"], categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Ready", type: "string", jsonPath: ".status.readyReplicas", value: (o) => `${num(statusOf(o).readyReplicas)}/${num(specOf(o).replicas)}` },
      { name: "Up-to-date", type: "integer", jsonPath: ".status.updatedReplicas", value: (o) => num(statusOf(o).updatedReplicas) },
      { name: "Available", type: "integer", jsonPath: ".status.availableReplicas", value: (o) => num(statusOf(o).availableReplicas) },
      AGE,
      ...wideColumns((o) => specOf(o).template),
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.replicas ??= 1;
      const strategy = (spec.strategy ??= {}) as JsonObject;
      strategy.type ??= "RollingUpdate";
      if (strategy.type === "RollingUpdate") {
        const ru = (strategy.rollingUpdate ??= {}) as JsonObject;
        ru.maxUnavailable ??= "25%";
        ru.maxSurge ??= "25%";
      }
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      defaultPodTemplate(spec.template);
    },
    // The Deployment strategy's PrepareForUpdate: a change of the annotations bumps the generation
    // too (they are copied to the ReplicaSets); a change of the spec does for every kind.
    prepareForUpdate(o, old) {
      if (JSON.stringify(o.metadata.annotations ?? {}) !== JSON.stringify(old.metadata.annotations ?? {}))
        o.metadata.generation = (old.metadata.generation ?? 1) + 1;
    },
    validate(o, old) {
      const spec = specOf(o);
      return [
        ...nonNegative(spec.replicas, "spec.replicas"),
        ...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"),
        ...nonNegative(spec.revisionHistoryLimit, "spec.revisionHistoryLimit"),
        ...validateWorkloadSelector(o, old, "deployment"),
        ...validatePodTemplate(spec.template, "spec.template", ["Always"]),
        ...validateDeploymentStrategy(obj(spec.strategy)),
      ];
    },
  },
);

/** ValidateDeploymentStrategy: Recreate or RollingUpdate, `rollingUpdate` only with RollingUpdate, not both bounds 0. */
function validateDeploymentStrategy(strategy: JsonObject | undefined): StatusCause[] {
  if (!strategy) return [];
  const type = strategy.type;
  if (type !== "Recreate" && type !== "RollingUpdate") return [fieldNotSupported("spec.strategy.type", type ?? "", ["Recreate", "RollingUpdate"])];
  const ru = obj(strategy.rollingUpdate);
  if (type === "Recreate" && ru) return [fieldForbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")];
  const zero = (v: unknown) => v === 0 || v === "0%";
  if (ru && zero(ru.maxUnavailable) && zero(ru.maxSurge))
    return [fieldInvalid("spec.strategy.rollingUpdate.maxUnavailable", ru.maxUnavailable, "may not be 0 when `maxSurge` is 0")];
  return [];
}

const STATEFULSET_MUTABLE = ["replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];

/** apps/v1 StatefulSet (`sts`): as a Deployment, and the spec fields upstream keeps immutable. `kubectl get`: READY AGE. */
export const StatefulSetKind = kind(
  "apps/v1/StatefulSet",
  { plural: "statefulsets", shortNames: ["sts"], categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Ready", type: "string", jsonPath: ".status.readyReplicas", value: (o) => `${num(statusOf(o).readyReplicas)}/${num(specOf(o).replicas)}` },
      AGE,
      ...wideColumns((o) => specOf(o).template, false),
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.replicas ??= 1;
      spec.podManagementPolicy ??= "OrderedReady";
      const strategy = (spec.updateStrategy ??= {}) as JsonObject;
      strategy.type ??= "RollingUpdate";
      if (strategy.type === "RollingUpdate") ((strategy.rollingUpdate ??= {}) as JsonObject).partition ??= 0;
      spec.revisionHistoryLimit ??= 10;
      const retention = (spec.persistentVolumeClaimRetentionPolicy ??= {}) as JsonObject;
      retention.whenDeleted ??= "Retain";
      retention.whenScaled ??= "Retain";
      defaultPodTemplate(spec.template);
      for (const t of list(spec.volumeClaimTemplates)) {
        const s = (t.spec ??= {}) as JsonObject;
        s.volumeMode ??= "Filesystem";
      }
    },
    validate(o, old) {
      const spec = specOf(o);
      const out = [
        ...nonNegative(spec.replicas, "spec.replicas"),
        ...validateWorkloadSelector(o, old, "statefulset"),
        ...validatePodTemplate(spec.template, "spec.template", ["Always"]),
      ];
      const policy = spec.podManagementPolicy;
      if (typeof policy === "string" && policy !== "OrderedReady" && policy !== "Parallel")
        out.push(fieldNotSupported("spec.podManagementPolicy", policy, ["OrderedReady", "Parallel"]));
      if (old) {
        const frozen = (s: JsonObject) =>
          JSON.stringify(Object.fromEntries(Object.entries(s).filter(([k]) => !STATEFULSET_MUTABLE.includes(k) && k !== "selector")));
        if (frozen(specOf(old)) !== frozen(spec))
          out.push(
            fieldForbidden(
              "spec",
              "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ),
          );
      }
      return out;
    },
  },
);

/** apps/v1 DaemonSet (`ds`): `kubectl get`: DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE. */
export const DaemonSetKind = kind(
  "apps/v1/DaemonSet",
  { plural: "daemonsets", shortNames: ["ds"], categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Desired", type: "integer", jsonPath: ".status.desiredNumberScheduled", value: (o) => num(statusOf(o).desiredNumberScheduled) },
      { name: "Current", type: "integer", jsonPath: ".status.currentNumberScheduled", value: (o) => num(statusOf(o).currentNumberScheduled) },
      { name: "Ready", type: "integer", jsonPath: ".status.numberReady", value: (o) => num(statusOf(o).numberReady) },
      { name: "Up-to-date", type: "integer", jsonPath: ".status.updatedNumberScheduled", value: (o) => num(statusOf(o).updatedNumberScheduled) },
      { name: "Available", type: "integer", jsonPath: ".status.numberAvailable", value: (o) => num(statusOf(o).numberAvailable) },
      {
        name: "Node Selector",
        type: "string",
        jsonPath: ".spec.template.spec.nodeSelector",
        value: (o) =>
          orNone(
            Object.entries(obj(obj(obj(specOf(o).template)?.spec)?.nodeSelector) ?? {})
              .map(([k, v]) => `${k}=${String(v)}`)
              .join(","),
          ),
      },
      AGE,
      ...wideColumns((o) => specOf(o).template),
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      const strategy = (spec.updateStrategy ??= {}) as JsonObject;
      strategy.type ??= "RollingUpdate";
      if (strategy.type === "RollingUpdate") {
        const ru = (strategy.rollingUpdate ??= {}) as JsonObject;
        ru.maxUnavailable ??= 1;
        ru.maxSurge ??= 0;
      }
      spec.revisionHistoryLimit ??= 10;
      defaultPodTemplate(spec.template);
    },
    validate(o, old) {
      const spec = specOf(o);
      return [...validateWorkloadSelector(o, old, "daemonset"), ...validatePodTemplate(spec.template, "spec.template", ["Always"])];
    },
  },
);

// ---- batch/v1 --------------------------------------------------------------------------------

const JOB_RESTART = ["OnFailure", "Never"];

/** The STATUS column of `kubectl get jobs` (printJob): the first of its conditions that holds, else Running. */
function jobStatus(o: KubeObject): string {
  const conds = list(statusOf(o).conditions).filter((c) => c.status === "True");
  const has = (t: string) => conds.some((c) => c.type === t);
  if (has("Complete")) return "Complete";
  if (has("Failed")) return "Failed";
  if (o.metadata.deletionTimestamp) return "Terminating";
  if (has("Suspended")) return "Suspended";
  if (has("FailureTarget")) return "FailureTarget";
  if (has("SuccessCriteriaMet")) return "SuccessCriteriaMet";
  return "Running";
}

/** The DURATION column of `kubectl get jobs`: from startTime to completionTime, or to now while it runs. */
function jobDuration(o: KubeObject): string {
  const start = Date.parse(String(statusOf(o).startTime ?? ""));
  const end = Date.parse(String(statusOf(o).completionTime ?? ""));
  if (Number.isNaN(start)) return "";
  return humanDuration((Number.isNaN(end) ? clock.now() : end) - start);
}

/** The COMPLETIONS column of `kubectl get jobs` (printJob). */
function jobCompletions(o: KubeObject): string {
  const spec = specOf(o);
  const succeeded = num(statusOf(o).succeeded);
  if (typeof spec.completions === "number") return `${succeeded}/${spec.completions}`;
  const parallelism = num(spec.parallelism);
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

/** SetDefaults_Job: completions and parallelism 1 when neither is set, parallelism 1, backoffLimit 6, NonIndexed; the pod template's. */
function defaultJobSpec(spec: JsonObject): void {
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= "NonIndexed";
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= "TerminatingOrFailed";
  defaultPodTemplate(spec.template);
}

function validateJobSpec(spec: JsonObject, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  for (const f of ["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"])
    out.push(...nonNegative(spec[f], `${path}.${f}`));
  out.push(...validatePodTemplate(spec.template, `${path}.template`, JOB_RESTART));
  return out;
}

/**
 * batch/v1 Job: defaults (parallelism 1, completions 1, backoffLimit 6, NonIndexed), restart
 * policy OnFailure or Never, the template immutable; unless `manualSelector`, the selector is
 * generated from the Job's UID and the template labelled with it (`batch.kubernetes.io/controller-uid`,
 * `controller-uid`, `batch.kubernetes.io/job-name`, `job-name`), as the Job strategy's
 * generateSelector does. `kubectl get`: STATUS COMPLETIONS DURATION AGE.
 */
export const JobKind = kind(
  "batch/v1/Job",
  { plural: "jobs", categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Status", type: "string", jsonPath: ".status.conditions", value: jobStatus },
      { name: "Completions", type: "string", jsonPath: ".status.succeeded", value: jobCompletions },
      { name: "Duration", type: "string", jsonPath: ".status.startTime", value: jobDuration },
      AGE,
      ...wideColumns((o) => specOf(o).template),
    ],
    defaults(o) {
      defaultJobSpec((o.spec ??= {}) as JsonObject);
    },
    validate(o, old) {
      const spec = specOf(o);
      const out = validateJobSpec(spec, "spec");
      if (old) {
        if (JSON.stringify(specOf(old).template) !== JSON.stringify(spec.template) && !old.metadata.deletionTimestamp)
          out.push(fieldInvalid("spec.template", spec.template ?? {}, "field is immutable"));
        if (JSON.stringify(specOf(old).selector) !== JSON.stringify(spec.selector))
          out.push(fieldInvalid("spec.selector", spec.selector ?? {}, "field is immutable"));
      } else if (spec.manualSelector === true) {
        const sel = spec.selector as LabelSelectorInput | undefined;
        const errs = validateLabelSelector(sel, "spec.selector");
        out.push(...errs);
        if (!isJsonObject(sel)) out.push(fieldRequired("spec.selector"));
        else if (errs.length === 0 && !matchesLabelSelector(sel, labelsOf(spec.template) ?? {}))
          out.push(fieldInvalid("spec.template.metadata.labels", labelsOf(spec.template) ?? {}, "`selector` does not match template `labels`"));
      } else if (spec.selector !== undefined) {
        out.push(fieldInvalid("spec.selector", spec.selector, "`selector` not auto-generated"));
      }
      return out;
    },
    async finalize(o, old) {
      if (old) return;
      const spec = specOf(o);
      if (spec.manualSelector === true) return;
      const template = (spec.template ??= {}) as JsonObject;
      const meta = (template.metadata ??= {}) as JsonObject;
      const labels = (meta.labels ??= {}) as Record<string, string>;
      const uid = o.metadata.uid;
      labels["batch.kubernetes.io/controller-uid"] ??= uid;
      labels["batch.kubernetes.io/job-name"] ??= o.metadata.name;
      labels["controller-uid"] ??= uid;
      labels["job-name"] ??= o.metadata.name;
      spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
    },
  },
);

const CRON_MACROS = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];
const CRON_FIELD = /^(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(\/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(\/[0-9]+)?)*$/;

/** Whether `s` parses as a standard cron schedule (five fields, or a macro; `TZ=`/`CRON_TZ=` is refused as upstream does). */
function cronErrors(s: string): string[] {
  if (s.includes("TZ")) return ["cannot use TZ or CRON_TZ in schedule, use timeZone field instead"];
  if (CRON_MACROS.includes(s) || /^@every \S+$/.test(s)) return [];
  const fields = s.trim().split(/\s+/);
  if (fields.length !== 5) return [`expected exactly 5 fields, found ${fields.length}: ${s}`];
  return fields.every((f) => CRON_FIELD.test(f)) ? [] : [`unparseable schedule: ${s}`];
}

/**
 * batch/v1 CronJob (`cj`): a schedule in cron syntax, the name at most 52 characters (the Jobs it
 * would make append 11), concurrencyPolicy Allow by default; its job template as a Job's.
 * `kubectl get`: SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE.
 */
export const CronJobKind = kind(
  "batch/v1/CronJob",
  { plural: "cronjobs", shortNames: ["cj"], categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Schedule", type: "string", jsonPath: ".spec.schedule" },
      { name: "Timezone", type: "string", jsonPath: ".spec.timeZone", value: (o) => String(specOf(o).timeZone ?? "<none>") },
      {
        name: "Suspend",
        type: "boolean",
        jsonPath: ".spec.suspend",
        value: (o) => (specOf(o).suspend === undefined ? "<unset>" : specOf(o).suspend === true ? "True" : "False"),
      },
      { name: "Active", type: "integer", jsonPath: ".status.active", value: (o) => list(statusOf(o).active).length },
      { name: "Last Schedule", type: "date", jsonPath: ".status.lastScheduleTime" },
      AGE,
      ...wideColumns((o) => obj(obj(specOf(o).jobTemplate)?.spec)?.template, false),
      {
        name: "Selector",
        type: "string",
        jsonPath: ".spec.jobTemplate.spec.selector",
        priority: 1,
        value: (o) => formatSelector(obj(obj(specOf(o).jobTemplate)?.spec)?.selector),
      },
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.concurrencyPolicy ??= "Allow";
      spec.suspend ??= false;
      spec.successfulJobsHistoryLimit ??= 3;
      spec.failedJobsHistoryLimit ??= 1;
      const jt = obj(spec.jobTemplate);
      if (jt) {
        const js = (jt.spec ??= {}) as JsonObject;
        // A CronJob's job template is defaulted as a Job's, less what the Job's own create sets.
        js.backoffLimit ??= 6;
        js.completionMode ??= "NonIndexed";
        js.suspend ??= false;
        js.podReplacementPolicy ??= "TerminatingOrFailed";
        defaultPodTemplate(js.template);
      }
    },
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      if (o.metadata.name.length > 52) out.push(fieldInvalid("metadata.name", o.metadata.name, "must be no more than 52 characters"));
      const schedule = spec.schedule;
      if (typeof schedule !== "string" || schedule === "") out.push(fieldRequired("spec.schedule"));
      else for (const m of cronErrors(schedule)) out.push(fieldInvalid("spec.schedule", schedule, m));
      const policy = spec.concurrencyPolicy;
      if (typeof policy === "string" && !["Allow", "Forbid", "Replace"].includes(policy))
        out.push(fieldNotSupported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]));
      for (const f of ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"]) out.push(...nonNegative(spec[f], `spec.${f}`));
      const js = obj(obj(spec.jobTemplate)?.spec);
      if (!js) out.push(fieldRequired("spec.jobTemplate.spec"));
      else out.push(...validateJobSpec(js, "spec.jobTemplate.spec"));
      return out;
    },
  },
);

// ---- networking.k8s.io/v1, policy/v1, autoscaling/v2 --------------------------------------------

/** The HOSTS column (printIngress's formatHosts): the first three hosts, then how many rules more. */
function ingressHosts(o: KubeObject): string {
  const rules = list(specOf(o).rules);
  const hosts: string[] = [];
  let more = false;
  for (const r of rules) {
    if (hosts.length === 3) more = true;
    if (!more && typeof r.host === "string" && r.host !== "") hosts.push(r.host);
  }
  if (hosts.length === 0) return "*";
  return more ? `${hosts.join(",")} + ${rules.length - 3} more...` : hosts.join(",");
}

/** A load balancer status as printers show it: each ingress point's IP, else hostname, sorted and unique. */
function loadBalancerAddresses(status: JsonObject): string {
  const set = new Set(
    list(obj(status.loadBalancer)?.ingress)
      .map((i) => String(i.ip || i.hostname || ""))
      .filter(Boolean),
  );
  return [...set].sort().join(",");
}

/** networking.k8s.io/v1 Ingress (`ing`): each rule's paths with a backend; `kubectl get`: CLASS HOSTS ADDRESS PORTS AGE. */
export const IngressKind = kind(
  "networking.k8s.io/v1/Ingress",
  { plural: "ingresses", shortNames: ["ing"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Class", type: "string", jsonPath: ".spec.ingressClassName", value: (o) => String(specOf(o).ingressClassName ?? "<none>") },
      { name: "Hosts", type: "string", jsonPath: ".spec.rules[*].host", value: ingressHosts },
      {
        name: "Address",
        type: "string",
        jsonPath: ".status.loadBalancer.ingress",
        value: (o) => loadBalancerAddresses(statusOf(o)),
      },
      { name: "Ports", type: "string", jsonPath: ".spec.tls", value: (o) => (list(specOf(o).tls).length > 0 ? "80, 443" : "80") },
      AGE,
    ],
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      if (list(spec.rules).length === 0 && !spec.defaultBackend)
        out.push(fieldInvalid("spec.rules", [], "either `defaultBackend` or `rules` must be specified"));
      list(spec.rules).forEach((r, i) => {
        list(obj(r.http)?.paths).forEach((p, j) => {
          const at = `spec.rules[${i}].http.paths[${j}]`;
          const type = p.pathType;
          if (type === undefined) out.push(fieldRequired(`${at}.pathType`, "pathType must be specified"));
          if (type !== "ImplementationSpecific" && typeof p.path === "string" && !p.path.startsWith("/"))
            out.push(fieldInvalid(`${at}.path`, p.path, "must be an absolute path"));
          const backend = obj(p.backend);
          if (backend && !backend.service && !backend.resource) out.push(fieldInvalid(`${at}.backend`, backend, "one backend must be specified"));
        });
      });
      return out;
    },
  },
);

/** networking.k8s.io/v1 NetworkPolicy (`netpol`): no status; `kubectl get`: POD-SELECTOR AGE. */
export const NetworkPolicyKind = kind(
  "networking.k8s.io/v1/NetworkPolicy",
  { plural: "networkpolicies", shortNames: ["netpol"] },
  {
    hasStatus: false,
    printerColumns: [{ name: "Pod-Selector", type: "string", jsonPath: ".spec.podSelector", value: (o) => formatSelector(specOf(o).podSelector) }, AGE],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      for (const rule of [...list(spec.ingress), ...list(spec.egress)]) for (const p of list(rule.ports)) p.protocol ??= "TCP";
      if (spec.policyTypes === undefined) spec.policyTypes = spec.egress !== undefined ? ["Ingress", "Egress"] : ["Ingress"];
    },
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      if (spec.podSelector !== undefined) out.push(...validateLabelSelector(spec.podSelector as LabelSelectorInput, "spec.podSelector"));
      const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : [];
      types.forEach((t, i) => {
        if (t !== "Ingress" && t !== "Egress") out.push(fieldNotSupported(`spec.policyTypes[${i}]`, t, ["Ingress", "Egress"]));
      });
      return out;
    },
  },
);

/** policy/v1 PodDisruptionBudget (`pdb`): minAvailable or maxUnavailable, not both; `kubectl get`: MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE. */
export const PodDisruptionBudgetKind = kind(
  "policy/v1/PodDisruptionBudget",
  { plural: "poddisruptionbudgets", shortNames: ["pdb"] },
  {
    hasStatus: true,
    printerColumns: [
      { name: "Min Available", type: "string", jsonPath: ".spec.minAvailable", value: (o) => String(specOf(o).minAvailable ?? "N/A") },
      { name: "Max Unavailable", type: "string", jsonPath: ".spec.maxUnavailable", value: (o) => String(specOf(o).maxUnavailable ?? "N/A") },
      { name: "Allowed Disruptions", type: "integer", jsonPath: ".status.disruptionsAllowed", value: (o) => num(statusOf(o).disruptionsAllowed) },
      AGE,
    ],
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined)
        out.push(fieldInvalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"));
      for (const f of ["minAvailable", "maxUnavailable"]) {
        const v = spec[f];
        if (typeof v === "number") out.push(...nonNegative(v, `spec.${f}`));
        if (typeof v === "string" && !/^[0-9]+%$/.test(v))
          out.push(
            fieldInvalid(
              `spec.${f}`,
              v,
              "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            ),
          );
      }
      if (spec.selector !== undefined) out.push(...validateLabelSelector(spec.selector as LabelSelectorInput, "spec.selector"));
      return out;
    },
  },
);

function hpaTargets(o: KubeObject): string {
  const current = list(statusOf(o).currentMetrics);
  const metrics = list(specOf(o).metrics);
  if (metrics.length === 0) return "<none>";
  return metrics
    .map((m, i) => {
      const res = obj(m.resource) ?? obj(m.containerResource);
      const target = obj(res?.target) ?? obj(obj(m.pods)?.target) ?? obj(obj(m.object)?.target) ?? obj(obj(m.external)?.target) ?? {};
      const want = target.averageUtilization !== undefined ? `${String(target.averageUtilization)}%` : String(target.averageValue ?? target.value ?? "");
      const cur = obj(obj(current[i]?.resource)?.current);
      const have = cur?.averageUtilization !== undefined ? `${String(cur.averageUtilization)}%` : "<unknown>";
      const name = res?.name ? `${String(res.name)}: ` : "";
      return `${name}${have}/${want}`;
    })
    .join(", ");
}

/** autoscaling/v2 HorizontalPodAutoscaler (`hpa`): minReplicas 1 by default, at most maxReplicas. `kubectl get`: REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE. */
export const HorizontalPodAutoscalerKind = kind(
  "autoscaling/v2/HorizontalPodAutoscaler",
  { plural: "horizontalpodautoscalers", shortNames: ["hpa"], categories: ["all"] },
  {
    hasStatus: true,
    printerColumns: [
      {
        name: "Reference",
        type: "string",
        jsonPath: ".spec.scaleTargetRef",
        value: (o) => `${String(obj(specOf(o).scaleTargetRef)?.kind ?? "")}/${String(obj(specOf(o).scaleTargetRef)?.name ?? "")}`,
      },
      { name: "Targets", type: "string", jsonPath: ".spec.metrics", value: hpaTargets },
      { name: "MinPods", type: "string", jsonPath: ".spec.minReplicas", value: (o) => String(specOf(o).minReplicas ?? "<unset>") },
      { name: "MaxPods", type: "integer", jsonPath: ".spec.maxReplicas", value: (o) => num(specOf(o).maxReplicas) },
      { name: "Replicas", type: "integer", jsonPath: ".status.currentReplicas", value: (o) => num(statusOf(o).currentReplicas) },
      AGE,
    ],
    defaults(o) {
      const spec = (o.spec ??= {}) as JsonObject;
      spec.minReplicas ??= 1;
      if (spec.metrics === undefined) spec.metrics = [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }];
    },
    validate(o) {
      const spec = specOf(o);
      const out: StatusCause[] = [];
      const ref = obj(spec.scaleTargetRef);
      if (!ref?.kind) out.push(fieldRequired("spec.scaleTargetRef.kind"));
      if (!ref?.name) out.push(fieldRequired("spec.scaleTargetRef.name"));
      const min = spec.minReplicas;
      const max = spec.maxReplicas;
      if (typeof min === "number" && min < 1) out.push(fieldInvalid("spec.minReplicas", min, "must be greater than or equal to 1"));
      if (typeof max === "number" && max < 1) out.push(fieldInvalid("spec.maxReplicas", max, "must be greater than 0"));
      if (typeof min === "number" && typeof max === "number" && max < min)
        out.push(fieldInvalid("spec.maxReplicas", max, "must be greater than or equal to `minReplicas`"));
      return out;
    },
  },
);

/** The kinds of this module, in the order discovery lists them. */
export const BUILTIN_KINDS: KindDefinition[] = [
  ConfigMapKind,
  ServiceKind,
  PersistentVolumeClaimKind,
  LimitRangeKind,
  ResourceQuotaKind,
  DeploymentKind,
  StatefulSetKind,
  DaemonSetKind,
  JobKind,
  CronJobKind,
  IngressKind,
  NetworkPolicyKind,
  PodDisruptionBudgetKind,
  HorizontalPodAutoscalerKind,
];

/** The API groups of these kinds besides the core group (they take strategic merge patches, as kube-apiserver's built-in groups do). */
export const BUILTIN_GROUPS: ReadonlySet<string> = new Set(BUILTIN_KINDS.map((k) => k.group).filter((g) => g !== ""));
