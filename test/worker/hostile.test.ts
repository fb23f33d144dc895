/**
 * The standing hostile-input suite (issue 10, "bad input, all of it 4xx with a Status"): several
 * hundred generated and hand-written requests across every served kind and verb, the agent API
 * and the webhook endpoint. Every case must be answered with a 4xx Kubernetes Status whose code
 * is the HTTP status (with the offending field among its causes for field errors), and must leave
 * D1 exactly as it was (and, on the agent paths, the cluster object as it reads back).
 *
 * Wrong types, out-of-range numbers, overlong strings and bad enum values are derived from each
 * kind's zod schema (spec and top-level fields for create, update, merge patch and apply; status
 * for the status subresource), and from the agent protocol's schemas.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { HeartbeatSchema, RegisterSchema, RotateKeySchema } from "../../src/agent-api/protocol.ts";
import { MAX_NESTING_DEPTH } from "../../src/k8s/decode.ts";
import { apiVersionOf, type KindDefinition } from "../../src/k8s/kind.ts";
import { KINDS } from "../../src/kinds/index.ts";
import { BUILTIN_GROUPS, BUILTIN_KINDS } from "../../src/kinds/builtin/index.ts";
import { decodesProtobuf } from "../../src/api/protobuf.ts";
import { agentKeys, call, createNamespaces, createToken, register, snapshot, type AgentKeys, type CallOptions } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
type Path = (string | number)[];

/** Namespace of the namespaced kinds; the cluster's own namespace holds its works and scores. */
const NS = "hostile";
const CLUSTER = "hv";
const HOOK_KEY = "s3cret";

const MERGE = "application/merge-patch+json";
const APPLY = "application/apply-patch+yaml";

interface Case {
  name: string;
  method: string;
  /** The path, or a function of the fixture (e.g. the receiver's webhook path). */
  path: string | (() => string);
  body?: unknown | (() => unknown);
  opts?: CallOptions | (() => CallOptions | Promise<CallOptions>);
  status: number;
  reason: string;
  /** A field the Status must name in `details.causes`. */
  field?: string;
  /** An agent call: the cluster object must also read back unchanged. */
  agent?: boolean;
}

const cases: Case[] = [];
const add = (c: Case) => cases.push(c);

// ---------------------------------------------------------------------------------------------
// Kinds, their paths and valid objects
// ---------------------------------------------------------------------------------------------

/** A version served by conversion from the stored version of the same group (add-ons' v1beta1): its rows are the stored version's. */
const aliasVersion = (k: KindDefinition) => k.conversion !== undefined && k.conversion.storage.group === k.group;
const byKind = (kind: string) => KINDS.find((k) => kindName(k) === kind && !k.viewOf && !aliasVersion(k))!;
/** A kind's name in the cases: its kind, with its group when another group serves the same kind (events.k8s.io's Event). */
function kindName(def: KindDefinition): string {
  // Karmada's ResourceBinding and ClusterResourceBinding share KubeFleet's kind names: the later one is qualified by its group.
  const first = KINDS.find((k) => k.kind === def.kind && !k.conversion && !k.viewOf);
  return def.conversion || (first !== undefined && first !== def && !def.viewOf) ? `${def.kind}.${def.group}` : def.kind;
}
/** The kinds stored and served with the generic verbs (the review kinds are answered, not stored: their own cases below). */
const STORED = KINDS.filter((k) => !k.createOnly && !k.viewOf && !aliasVersion(k));
const RBAC_GROUP = "rbac.authorization.k8s.io";
/** kube-apiserver takes strategic merge patches for its built-in kinds (core, RBAC, events.k8s.io, apps, batch, ...). */
const strategic = (def: KindDefinition) => def.group === "" || def.group === RBAC_GROUP || def.group === "events.k8s.io" || BUILTIN_GROUPS.has(def.group);
const nsOf = (def: KindDefinition) => (def.kind === "ManifestWork" || def.kind === "AddOnPlacementScore" ? CLUSTER : NS);
function collection(def: KindDefinition, namespace = nsOf(def)): string {
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  return def.namespaced ? `${base}/namespaces/${namespace}/${def.plural}` : `${base}/${def.plural}`;
}

/** The object of each kind the update, patch, delete and status cases aim at (created in beforeAll). */
const FIXTURE: Record<string, string> = {
  ManagedCluster: CLUSTER,
  ManagedClusterSet: "hset",
  ManagedClusterSetBinding: "hset",
  Placement: "hp",
  PlacementDecision: "hp-decision-1",
  AddOnPlacementScore: "hscore",
  ManifestWork: "hw",
  ManifestWorkReplicaSet: "hrs",
  BootstrapToken: "", // its generated name, set in beforeAll
  WebhookReceiver: "hook",
  Secret: "hook",
  Namespace: "hns",
  Role: "hrole",
  ClusterRole: "hcrole",
  RoleBinding: "hrb",
  ClusterRoleBinding: "hcrb",
  ServiceAccount: "hsa",
  ClusterManagementAddOn: "hcma",
  ManagedClusterAddOn: "hcma",
  AddOnDeploymentConfig: "hadc",
  AddOnTemplate: "htemplate",
  Policy: "hplc",
  PlacementBinding: "hpb",
  PolicySet: "hps",
  Event: "hev",
  "Event.events.k8s.io": "hev1",
  // The built-in kinds stored as templates (src/kinds/builtin).
  ConfigMap: "hcm",
  Service: "hsvc",
  PersistentVolumeClaim: "hpvc",
  LimitRange: "hlimits",
  ResourceQuota: "hquota",
  Deployment: "hdeploy",
  StatefulSet: "hsts",
  DaemonSet: "hds",
  Job: "hjob",
  CronJob: "hcj",
  Ingress: "hing",
  NetworkPolicy: "hnetpol",
  PodDisruptionBudget: "hpdb",
  HorizontalPodAutoscaler: "hhpa",
  ClusterResourcePlacement: "hcrp",
  ResourcePlacement: "hrp",
  ClusterResourceEnvelope: "hcre",
  ResourceEnvelope: "hre",
  CustomResourceDefinition: "hcrds.hostile.example.com",
  PropagationPolicy: "hpp",
  ClusterPropagationPolicy: "hcpp",
  ClusterResourceOverride: "hcro",
  ResourceOverride: "hro",
  OverridePolicy: "hop",
  ClusterOverridePolicy: "hcop",
  ClusterStagedUpdateStrategy: "hcsus",
  StagedUpdateStrategy: "hsus",
  ClusterStagedUpdateRun: "hcsur",
  StagedUpdateRun: "hsur",
  ClusterApprovalRequest: "hcar",
  ApprovalRequest: "har",
  ClusterResourcePlacementEviction: "hcrpe",
  ClusterResourcePlacementDisruptionBudget: "hcrpdb",
};
const fixtureName = (def: KindDefinition) => FIXTURE[kindName(def)]!;
const member = (def: KindDefinition) => `${collection(def)}/${fixtureName(def)}`;

const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" }, data: { a: "1" } };

const POD_TEMPLATE = { metadata: { labels: { app: "h" } }, spec: { containers: [{ name: "c", image: "nginx:1.27" }] } };
const JOB_POD_TEMPLATE = { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox:1.36" }] } };
/** The built-in kinds stored as templates: their schemas are Kubernetes' (deep), so the derived cases go less deep. */
const isBuiltinTemplate = (def: KindDefinition) => BUILTIN_KINDS.includes(def);

/** The kind-specific part of a valid object (everything but apiVersion, kind and metadata). */
function validFields(def: KindDefinition, name: string): Json {
  switch (def.kind) {
    case "ManagedCluster":
      return { spec: { hubAcceptsClient: true } };
    case "ManagedClusterSet":
      return { spec: { clusterSelector: { selectorType: "ExclusiveClusterSetLabel" } } };
    case "ManagedClusterSetBinding":
      return { spec: { clusterSet: name || "hset" } };
    case "Placement":
      return { spec: { numberOfClusters: 1 } };
    case "ManifestWork":
      return { spec: { workload: { manifests: [configMap] } } };
    case "ManifestWorkReplicaSet":
      return { spec: { placementRefs: [{ name: "hp" }], manifestWorkTemplate: { workload: { manifests: [configMap] } } } };
    case "AddOnTemplate":
      return { spec: { addonName: "hcma", agentSpec: { workload: { manifests: [configMap] } } } };
    case "BootstrapToken":
      return { spec: { ttlSeconds: 600, description: "hostile" } };
    case "WebhookReceiver":
      return {
        spec: {
          type: "generic",
          secretRef: { name: "hook" },
          target: { apiVersion: "cluster.open-cluster-management.io/v1beta1", kind: "Placement", name: "hp" },
          action: { type: "MergePatch", patch: { spec: { numberOfClusters: "{{ .count }}" } } },
        },
      };
    case "Secret":
      return { type: "Opaque", stringData: { token: HOOK_KEY } };
    case "Role":
    case "ClusterRole":
      return { rules: [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }] };
    case "Event":
      return def.conversion
        ? {
            eventTime: "2026-11-26T10:00:00.000000Z",
            reportingController: "hostile",
            reportingInstance: "h-1",
            action: "Test",
            reason: "Tested",
            regarding: { kind: "Pod", name: "p", namespace: NS },
            note: "n",
            type: "Normal",
          }
        : { involvedObject: { kind: "Pod", name: "p", namespace: NS }, reason: "Tested", message: "m", type: "Normal" };
    case "RoleBinding":
    case "ClusterRoleBinding":
      return { roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: "view" }, subjects: [{ kind: "User", apiGroup: RBAC_GROUP, name: "hostile" }] };
    case "Policy":
      return {
        spec: {
          disabled: false,
          remediationAction: "inform",
          "policy-templates": [
            {
              objectDefinition: {
                apiVersion: "policy.open-cluster-management.io/v1",
                kind: "ConfigurationPolicy",
                metadata: { name: "hostile" },
                spec: {
                  "object-templates": [{ complianceType: "musthave", objectDefinition: { apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } } }],
                },
              },
            },
          ],
        },
      };
    case "PlacementBinding":
      return {
        placementRef: { apiGroup: "cluster.open-cluster-management.io", kind: "Placement", name: "hp" },
        subjects: [{ apiGroup: "policy.open-cluster-management.io", kind: "Policy", name: "hplc" }],
      };
    case "PolicySet":
      return { spec: { policies: ["hplc"] } };
    case "ConfigMap":
      return { data: { a: "1" } };
    case "Service":
      return { spec: { selector: { app: "h" }, ports: [{ port: 80 }] } };
    case "PersistentVolumeClaim":
      return { spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } };
    case "LimitRange":
      return { spec: { limits: [{ type: "Container", default: { cpu: "500m" } }] } };
    case "ResourceQuota":
      return { spec: { hard: { pods: "10" } } };
    case "Deployment":
    case "DaemonSet":
      return { spec: { selector: { matchLabels: { app: "h" } }, template: POD_TEMPLATE } };
    case "StatefulSet":
      return { spec: { serviceName: "h", selector: { matchLabels: { app: "h" } }, template: POD_TEMPLATE } };
    case "Job":
      return { spec: { template: JOB_POD_TEMPLATE } };
    case "CronJob":
      return { spec: { schedule: "*/5 * * * *", jobTemplate: { spec: { template: JOB_POD_TEMPLATE } } } };
    case "Ingress":
      return {
        spec: {
          rules: [{ host: "h.example.com", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "h", port: { number: 80 } } } }] } }],
        },
      };
    case "NetworkPolicy":
      return { spec: { podSelector: { matchLabels: { app: "h" } }, policyTypes: ["Ingress"] } };
    case "PodDisruptionBudget":
      return { spec: { minAvailable: 1, selector: { matchLabels: { app: "h" } } } };
    case "HorizontalPodAutoscaler":
      return { spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "h" }, minReplicas: 1, maxReplicas: 3 } };
    // KubeFleet's placements, placing nowhere (PickFixed without names): the cases change nothing they select.
    case "ClusterResourcePlacement":
      return {
        spec: {
          resourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "hns", selectionScope: "NamespaceOnly" }],
          policy: { placementType: "PickFixed" },
        },
      };
    case "ResourcePlacement":
      return { spec: { resourceSelectors: [{ group: "", version: "v1", kind: "Secret", name: "hook" }], policy: { placementType: "PickFixed" } } };
    case "ClusterResourceEnvelope":
    case "ResourceEnvelope":
      return { data: { cm: configMap } };
    case "CustomResourceDefinition": {
      // A CRD's name is <plural>.<group>: the plural and group come from the name.
      const dot = name.indexOf(".");
      const plural = dot > 0 ? name.slice(0, dot) : name || "hcrds";
      const group = dot > 0 ? name.slice(dot + 1) : "hostile.example.com";
      return {
        spec: {
          group,
          names: { plural, kind: `K${plural}` },
          scope: "Namespaced",
          versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: CR_SCHEMA } }],
        },
      };
    }
    // Karmada's policies, selecting nothing that exists and placing nowhere: the cases change nothing.
    case "PropagationPolicy":
      return {
        spec: {
          resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: "absent-for-hostile" }],
          placement: { clusterAffinity: { clusterNames: ["nowhere"] } },
        },
      };
    case "ClusterPropagationPolicy":
      return {
        spec: {
          resourceSelectors: [{ apiVersion: "v1", kind: "Namespace", name: "absent-for-hostile" }],
          placement: { clusterAffinity: { clusterNames: ["nowhere"] } },
        },
      };
    // KubeFleet's overrides, each selecting an object of its own name (one override per object).
    case "ClusterResourceOverride":
      return {
        spec: {
          clusterResourceSelectors: [{ group: RBAC_GROUP, version: "v1", kind: "ClusterRole", name: `${name}-role` }],
          policy: {
            overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/h", value: "h" }] }],
          },
        },
      };
    case "ResourceOverride":
      return {
        spec: {
          resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: `${name}-app` }],
          policy: {
            overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/h", value: "h" }] }],
          },
        },
      };
    // Karmada's override policies, each selecting an object of its own name that does not exist.
    case "OverridePolicy":
    case "ClusterOverridePolicy":
      return {
        spec: {
          resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", name: `${name}-absent`, ...(def.kind === "OverridePolicy" ? { namespace: NS } : {}) }],
          overrideRules: [{ targetCluster: { clusterNames: ["nowhere"] }, overriders: { labelsOverrider: [{ operator: "add", value: { h: "h" } }] } }],
        },
      };
    // KubeFleet's staged update runs: a strategy of one stage; a run of a placement that does not
    // exist (its initialization fails once, before the cases: beforeAll waits for it); an approval
    // request of a run that does not exist.
    case "ClusterStagedUpdateStrategy":
    case "StagedUpdateStrategy":
      return { spec: { stages: [{ name: "one" }] } };
    case "ClusterStagedUpdateRun":
    case "StagedUpdateRun":
      return { spec: { placementName: "absent-for-hostile", stagedRolloutStrategyName: "absent-for-hostile" } };
    case "ClusterApprovalRequest":
    case "ApprovalRequest":
      return { spec: { parentStageRollout: "absent-for-hostile", targetStage: "one" } };
    // KubeFleet's evictions: one of a placement that does not exist (decided invalid once, before
    // the cases: beforeAll waits for it); a budget of one that does not exist.
    case "ClusterResourcePlacementEviction":
      return { spec: { placementName: "absent-for-hostile", clusterName: "nowhere" } };
    case "ClusterResourcePlacementDisruptionBudget":
      return { spec: { minAvailable: 1 } };
    default:
      return {};
  }
}

/** The schema of the fixture CRD's custom resources (`hcrds.hostile.example.com`). */
const CR_SCHEMA = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: { size: { type: "integer", minimum: 0 }, color: { type: "string", enum: ["red", "blue"] } },
      "x-kubernetes-validations": [{ rule: "!has(self.size) || self.size < 100", message: "size must be below 100" }],
    },
  },
};

const valid = (def: KindDefinition, name: string): Json => ({ apiVersion: apiVersionOf(def), kind: def.kind, metadata: { name }, ...validFields(def, name) });

/** Names for creates: six lowercase alphanumerics, valid for every kind (BootstrapToken IDs included), unique per case. */
let nameCounter = 0;
const freshName = () => `h${(nameCounter++).toString(36).padStart(5, "0")}`;

const nest = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
/** JSON text of `obj` with `"spec"` (or another top-level key) replaced by a value nested `n` levels. */
function deepBody(obj: Json, key: string, n: number): string {
  return JSON.stringify({ ...obj, [key]: "__DEEP__" }).replace('"__DEEP__"', nest(n));
}

/** JSON text of `obj` with a second `metadata.name` (a duplicate key). */
function duplicateName(obj: Json): string {
  return JSON.stringify(obj).replace('"metadata":{', '"metadata":{"name":"dup-first",');
}

// ---------------------------------------------------------------------------------------------
// Wrong values derived from zod schemas
// ---------------------------------------------------------------------------------------------

interface ZodInternals {
  _zod: {
    def: {
      type: string;
      innerType?: z.ZodType;
      shape?: Record<string, z.ZodType>;
      element?: z.ZodType;
      valueType?: z.ZodType;
      entries?: Record<string, unknown>;
      values?: unknown[];
      options?: z.ZodType[];
      checks?: { _zod: { def: Json } }[];
    };
  };
}
const defOf = (s: z.ZodType) => (s as unknown as ZodInternals)._zod.def;

function unwrap(s: z.ZodType): z.ZodType {
  let x = s;
  while (["optional", "nullable", "default", "readonly"].includes(defOf(x).type)) x = defOf(x).innerType!;
  return x;
}

/** Values of the wrong type or out of the schema's bounds, each with a label for the case name. */
function wrongValues(schema: z.ZodType): { label: string; value: unknown }[] {
  const d = defOf(unwrap(schema));
  const checks = (d.checks ?? []).map((c) => c._zod.def);
  const out: { label: string; value: unknown }[] = [];
  switch (d.type) {
    case "string":
      out.push({ label: "a number", value: 42 }, { label: "an object", value: { a: "b" } });
      for (const c of checks) {
        if (c.check === "max_length") out.push({ label: `${c.maximum + 1} characters`, value: "x".repeat(c.maximum + 1) });
        if (c.check === "min_length" && c.minimum > 0) out.push({ label: "an empty string", value: "" });
        if (c.check === "string_format" && c.format === "regex") out.push({ label: "a string not matching its pattern", value: "!@#" });
      }
      break;
    case "number":
      out.push({ label: "a string", value: "1" }, { label: "a boolean", value: true });
      for (const c of checks) {
        if (c.check === "number_format") out.push({ label: "a fraction", value: 1.5 });
        if (c.check === "greater_than") out.push({ label: "below its minimum", value: c.value - 1 });
        if (c.check === "less_than") out.push({ label: "above its maximum", value: c.value + 1 });
      }
      break;
    case "boolean":
      out.push({ label: "a string", value: "true" }, { label: "a number", value: 1 });
      break;
    case "array":
      out.push({ label: "an object", value: { a: 1 } }, { label: "a string", value: "x" });
      break;
    case "object":
    case "record":
      out.push({ label: "an array", value: [] }, { label: "a string", value: "x" });
      break;
    case "enum":
      out.push({ label: "an unknown enum value", value: "NotAValue" }, { label: "a number", value: 7 });
      break;
    case "literal":
      out.push({ label: "another literal", value: `not-${String(d.values?.[0])}` });
      break;
    case "union": {
      const types = (d.options ?? []).map((o) => defOf(unwrap(o)).type);
      out.push(types.includes("boolean") ? { label: "an array", value: [1] } : { label: "a boolean", value: true });
      out.push({ label: "an object", value: { a: 1 } });
      break;
    }
    default:
      break;
  }
  return out;
}

/** Every field path under `schema` (at most `maxLen` segments), each with its schema. Arrays are entered at index 0, records at key `k`. */
function fieldsOf(schema: z.ZodType, prefix: Path, maxLen: number): { path: Path; schema: z.ZodType }[] {
  const out: { path: Path; schema: z.ZodType }[] = [];
  const visit = (s: z.ZodType, path: Path) => {
    if (path.length > maxLen) return;
    if (path.length > prefix.length) out.push({ path, schema: s });
    const d = defOf(unwrap(s));
    if (d.type === "object") for (const [k, v] of Object.entries(d.shape ?? {})) visit(v, [...path, k]);
    else if (d.type === "array" && d.element) visit(d.element, [...path, 0]);
    else if (d.type === "record" && d.valueType) visit(d.valueType, [...path, "k"]);
  };
  visit(schema, prefix);
  return out;
}

function fieldPathOf(path: Path): string {
  let out = "";
  for (const seg of path) out += typeof seg === "number" ? `[${seg}]` : out ? `.${seg}` : seg;
  return out;
}

/** A copy of `base` with `value` at `path`, creating (or replacing) containers on the way. */
function setAt(base: unknown, path: Path, value: unknown): Json {
  const root = structuredClone(base) as Json;
  let cur: Json = root;
  path.forEach((seg, i) => {
    if (i === path.length - 1) {
      cur[seg as string] = value;
      return;
    }
    const wantArray = typeof path[i + 1] === "number";
    const next = cur[seg as string];
    if (wantArray ? !Array.isArray(next) : next === null || typeof next !== "object" || Array.isArray(next)) cur[seg as string] = wantArray ? [] : {};
    cur = cur[seg as string];
  });
  return root;
}

const shapeOf = (def: KindDefinition) => defOf(unwrap(def.schema)).shape ?? {};

// ---------------------------------------------------------------------------------------------
// Cases on every kind: paths, queries, credentials
// ---------------------------------------------------------------------------------------------

const BAD_ESCAPES = ["%E0%A4%A", "%zz", "a%C0%AFb", "%ED%A0%80", "%"];

for (const def of STORED) {
  const coll = collection(def);
  const k = kindName(def);
  for (const esc of BAD_ESCAPES)
    add({ name: `${k}: GET a name with the malformed escape ${esc}`, method: "GET", path: `${coll}/${esc}`, status: 400, reason: "BadRequest" });
  add({ name: `${k}: DELETE a name with a malformed escape`, method: "DELETE", path: `${coll}/%E0%A4%A`, status: 400, reason: "BadRequest" });
  add({ name: `${k}: PUT a name with a malformed escape`, method: "PUT", path: `${coll}/%ff`, body: valid(def, "x"), status: 400, reason: "BadRequest" });
  add({ name: `${k}: a malformed escape in the query`, method: "GET", path: `${coll}?labelSelector=%E0%A4%A`, status: 400, reason: "BadRequest" });
  add({
    name: `${k}: a 9 KiB labelSelector`,
    method: "GET",
    path: `${coll}?labelSelector=a%3D${"b".repeat(9 * 1024)}`,
    status: 414,
    reason: "RequestURITooLong",
  });
  add({ name: `${k}: a 9 KiB name`, method: "GET", path: `${coll}/${"a".repeat(9 * 1024)}`, status: 414, reason: "RequestURITooLong" });
  add({ name: `${k}: GET an absent object`, method: "GET", path: `${coll}/absent`, status: 404, reason: "NotFound" });
  add({ name: `${k}: an unknown subresource`, method: "GET", path: `${coll}/${fixtureName(def) || "x"}/scale`, status: 404, reason: "NotFound" });
  add({ name: `${k}: a path past the subresource`, method: "GET", path: `${coll}/x/status/extra`, status: 404, reason: "NotFound" });
  if (!def.hasStatus)
    add({ name: `${k}: the status subresource of a kind without one`, method: "GET", path: `${coll}/x/status`, status: 404, reason: "NotFound" });
  if (def.namespaced) {
    add({ name: `${k}: a namespace with a malformed escape`, method: "GET", path: collection(def, "%E0%A4%A"), status: 400, reason: "BadRequest" });
    add({ name: `${k}: an invalid namespace`, method: "GET", path: collection(def, "Bad_NS"), status: 400, reason: "BadRequest", field: "metadata.namespace" });
    add({
      name: `${k}: a 64-character namespace`,
      method: "POST",
      path: collection(def, "n".repeat(64)),
      body: valid(def, freshName()),
      status: 400,
      reason: "BadRequest",
      field: "metadata.namespace",
    });
  } else {
    add({
      name: `${k}: a cluster-scoped kind under a namespace`,
      method: "GET",
      path: coll.replace(`/${def.plural}`, `/namespaces/${NS}/${def.plural}/x`),
      status: 404,
      reason: "NotFound",
    });
  }
  add({ name: `${k}: list without a credential`, method: "GET", path: coll, opts: { token: null }, status: 401, reason: "Unauthorized" });
  add({
    name: `${k}: create with a wrong admin token`,
    method: "POST",
    path: coll,
    body: valid(def, freshName()),
    // A wrong token of its own per kind: failed authentications are also limited per credential
    // (50 a minute), and the hub serves more kinds than that.
    opts: { token: `not-the-admin-token-${k}` },
    status: 401,
    reason: "Unauthorized",
  });
  for (const sel of ["a in (b", "!", "=b", "a in b", "Bad Key=x", "a=b=c", "a notin", "x,", "a=" + "v".repeat(64)]) {
    add({
      name: `${k}: labelSelector ${JSON.stringify(sel)}`,
      method: "GET",
      path: `${coll}?labelSelector=${encodeURIComponent(sel)}`,
      status: 400,
      reason: "BadRequest",
      field: "labelSelector",
    });
  }
  for (const sel of ["spec.foo=bar", "metadata.uid=1", "nonsense"]) {
    add({
      name: `${k}: fieldSelector ${JSON.stringify(sel)}`,
      method: "GET",
      path: `${coll}?fieldSelector=${encodeURIComponent(sel)}`,
      status: 400,
      reason: "BadRequest",
      field: "fieldSelector",
    });
  }
  for (const limit of ["-1", "abc", "1.5"])
    add({ name: `${k}: limit=${limit}`, method: "GET", path: `${coll}?limit=${limit}`, status: 400, reason: "BadRequest", field: "limit" });
  for (const token of ["!!!", btoa(JSON.stringify({ start: 7 }))]) {
    add({
      name: `${k}: continue=${token}`,
      method: "GET",
      path: `${coll}?continue=${encodeURIComponent(token)}`,
      status: 400,
      reason: "BadRequest",
      field: "continue",
    });
  }
  for (const rv of ["abc", "-5"])
    add({
      name: `${k}: watch from resourceVersion ${rv}`,
      method: "GET",
      path: `${coll}?watch=true&resourceVersion=${rv}`,
      status: 400,
      reason: "BadRequest",
      field: "resourceVersion",
    });
  // A computed kind (a cluster's Lease) serves no watch: its own case, below.
  if (def.computed) add({ name: `${k}: watch (not served)`, method: "GET", path: `${coll}?watch=true`, status: 405, reason: "MethodNotAllowed" });
  for (const t of def.computed ? [] : ["-1", "soon"])
    add({
      name: `${k}: watch with timeoutSeconds ${t}`,
      method: "GET",
      path: `${coll}?watch=true&timeoutSeconds=${t}`,
      status: 400,
      reason: "BadRequest",
      field: "timeoutSeconds",
    });
}

// ---------------------------------------------------------------------------------------------
// Writes on every writable kind: bodies, content types, options, metadata
// ---------------------------------------------------------------------------------------------

for (const def of KINDS.filter((d) => d.systemOwned && !d.viewOf)) {
  const coll = collection(def);
  add({
    name: `${kindName(def)}: create (written by the hub only)`,
    method: "POST",
    path: coll,
    body: valid(def, freshName()),
    status: 405,
    reason: "MethodNotAllowed",
  });
  add({
    name: `${kindName(def)}: update (written by the hub only)`,
    method: "PUT",
    path: `${coll}/x`,
    body: valid(def, "x"),
    status: 405,
    reason: "MethodNotAllowed",
  });
  add({
    name: `${kindName(def)}: merge patch (written by the hub only)`,
    method: "PATCH",
    path: `${coll}/x`,
    body: {},
    opts: { contentType: MERGE },
    status: 405,
    reason: "MethodNotAllowed",
  });
  add({ name: `${kindName(def)}: delete (written by the hub only)`, method: "DELETE", path: `${coll}/x`, status: 405, reason: "MethodNotAllowed" });
}

for (const def of STORED.filter((d) => !d.systemOwned)) {
  const coll = collection(def);
  const k = kindName(def);
  const create = (name: string, body: unknown, status: number, reason: string, field?: string, opts?: CallOptions) =>
    add({ name: `${k}: create with ${name}`, method: "POST", path: coll, body, opts, status, reason, field });
  const raw = (text: string): CallOptions => ({ raw: text });

  // Bodies that are not an object of the kind.
  create("a body that is not JSON", undefined, 400, "BadRequest", undefined, raw("{not json"));
  create("an empty body", undefined, 400, "BadRequest", undefined, raw(""));
  create("a truncated body", undefined, 400, "BadRequest", undefined, raw(JSON.stringify(valid(def, freshName())).slice(0, 20)));
  for (const [label, body] of [
    ["an array", [1, 2]],
    ["null", null],
    ["a string", "x"],
    ["a number", 42],
    ["true", true],
  ] as const) {
    create(`${label} as the body`, undefined, 400, "BadRequest", undefined, raw(JSON.stringify(body)));
  }
  create("the wrong apiVersion", { ...valid(def, freshName()), apiVersion: "v9" }, 400, "BadRequest", "apiVersion");
  create("the wrong kind", { ...valid(def, freshName()), kind: "Pod" }, 400, "BadRequest", "kind");
  create("an unknown top-level field", { ...valid(def, freshName()), bogus: 1 }, 400, "BadRequest", "bogus");
  create("an unknown metadata field", setAt(valid(def, freshName()), ["metadata", "bogus"], 1), 400, "BadRequest", "metadata.bogus");
  create("an unknown field under Strict", { ...valid(def, freshName()), bogus: 1 }, 400, "BadRequest", "bogus", { contentType: "application/json" });
  create("a duplicate key", undefined, 400, "BadRequest", "metadata.name", raw(duplicateName(valid(def, freshName()))));
  create(
    `a body nested ${MAX_NESTING_DEPTH + 1} levels`,
    undefined,
    400,
    "BadRequest",
    undefined,
    raw(deepBody(valid(def, freshName()), "metadata", MAX_NESTING_DEPTH)),
  );
  create("a body nested 10,000 levels", undefined, 400, "BadRequest", undefined, raw(deepBody(valid(def, freshName()), "spec", 10_000)));
  create("a 4 MiB body", setAt(valid(def, freshName()), ["metadata", "annotations", "big"], "x".repeat(4 * 1024 * 1024)), 413, "RequestEntityTooLarge");
  create("a text/plain body", valid(def, freshName()), 415, "UnsupportedMediaType", undefined, { contentType: "text/plain" });
  create("a YAML body of another kind", "apiVersion: example.com/v9\nkind: Pod\nmetadata:\n  name: x\n", 400, "BadRequest", "apiVersion", {
    contentType: "application/yaml",
  });
  create("a YAML body that is not YAML", undefined, 400, "BadRequest", undefined, { contentType: "application/yaml", raw: "metadata: [1, 2\n" });
  // The core kinds take Kubernetes' protobuf encoding (kubectl's typed clients send it): a body that is not it is 400.
  if (decodesProtobuf(apiVersionOf(def), def.kind))
    create("a protobuf body without the envelope", "x", 400, "BadRequest", undefined, { contentType: "application/vnd.kubernetes.protobuf" });
  else create("a protobuf body", "x", 415, "UnsupportedMediaType", undefined, { contentType: "application/vnd.kubernetes.protobuf" });
  add({
    name: `${k}: create with fieldValidation=Lenient`,
    method: "POST",
    path: `${coll}?fieldValidation=Lenient`,
    body: valid(def, freshName()),
    status: 400,
    reason: "BadRequest",
    field: "fieldValidation",
  });
  add({
    name: `${k}: create with dryRun=Some`,
    method: "POST",
    path: `${coll}?dryRun=Some`,
    body: valid(def, freshName()),
    status: 400,
    reason: "BadRequest",
    field: "dryRun",
  });
  add({ name: `${k}: POST to a named object`, method: "POST", path: `${coll}/x`, body: valid(def, "x"), status: 405, reason: "MethodNotAllowed" });
  create("a resourceVersion", setAt(valid(def, freshName()), ["metadata", "resourceVersion"], "5"), 400, "BadRequest", "metadata.resourceVersion");
  if (def.namespaced)
    create("another namespace in the body", setAt(valid(def, freshName()), ["metadata", "namespace"], "elsewhere"), 400, "BadRequest", "metadata.namespace");

  // metadata of the wrong type, and its fields.
  for (const [label, value] of [
    ["an array", []],
    ["a string", "x"],
    ["a number", 7],
    ["true", true],
  ] as const) {
    create(`metadata as ${label}`, { ...valid(def, "x"), metadata: value }, 422, "Invalid", "metadata");
  }
  const metaCases: [string, Path, unknown, string][] = [
    ["a numeric name", ["metadata", "name"], 42, "metadata.name"],
    ["an array name", ["metadata", "name"], ["a"], "metadata.name"],
    ["labels as an array", ["metadata", "labels"], [], "metadata.labels"],
    ["labels as a string", ["metadata", "labels"], "a=b", "metadata.labels"],
    ["a numeric label value", ["metadata", "labels", "k"], 1, "metadata.labels.k"],
    ["an object label value", ["metadata", "labels", "k"], {}, "metadata.labels.k"],
    ["a null label value", ["metadata", "labels", "k"], null, "metadata.labels.k"],
    ["an invalid label key", ["metadata", "labels", "bad key"], "v", "metadata.labels"],
    ["an invalid label value", ["metadata", "labels", "k"], "-bad-", "metadata.labels"],
    ["a 64-character label value", ["metadata", "labels", "k"], "v".repeat(64), "metadata.labels"],
    ["annotations as an array", ["metadata", "annotations"], [], "metadata.annotations"],
    ["a boolean annotation value", ["metadata", "annotations", "k"], true, "metadata.annotations.k"],
    ["an invalid annotation key", ["metadata", "annotations", "a/b/c"], "v", "metadata.annotations"],
    ["annotations over 256 KiB", ["metadata", "annotations", "big"], "x".repeat(300 * 1024), "metadata.annotations"],
    ["finalizers as a string", ["metadata", "finalizers"], "x", "metadata.finalizers"],
    ["a numeric finalizer", ["metadata", "finalizers"], [1], "metadata.finalizers[0]"],
    ["an empty owner reference", ["metadata", "ownerReferences"], [{}], "metadata.ownerReferences[0].apiVersion"],
    ["a numeric generateName", ["metadata", "generateName"], 5, "metadata.generateName"],
    ["a string generation", ["metadata", "generation"], "1", "metadata.generation"],
  ];
  for (const [label, path, value, field] of metaCases) create(label, setAt(valid(def, freshName()), path, value), 422, "Invalid", field);
  // RBAC names need only be path segments (Kubernetes' ValidateRBACName): "system:discovery" is one.
  const badNames: (readonly [string, string])[] =
    def.group === RBAC_GROUP
      ? [
          ["a slash in the name", "a/b"],
          ["a percent sign in the name", "a%b"],
          ["the name ..", ".."],
          ["an empty name", ""],
        ]
      : [
          ["an uppercase name", "Bad"],
          ["a 254-character name", "a".repeat(254)],
          ["a leading dash", "-abcde"],
          ["an underscore", "a_bcde"],
          ["an empty name", ""],
        ];
  for (const [label, name] of badNames) {
    // A BootstrapToken without a name gets a generated one (its create answer carries it).
    if (!(def.kind === "BootstrapToken" && name === "")) create(label, valid(def, name), 422, "Invalid", "metadata.name");
  }

  // Update, merge patch, apply and delete of the fixture object.
  const obj = () => member(def);
  add({ name: `${k}: update with a body that is not JSON`, method: "PUT", path: obj, opts: raw("{nope"), status: 400, reason: "BadRequest" });
  add({ name: `${k}: update with an array body`, method: "PUT", path: obj, body: [], status: 400, reason: "BadRequest" });
  add({
    name: `${k}: update with the wrong kind`,
    method: "PUT",
    path: obj,
    body: () => ({ ...current(def), kind: "Pod" }),
    status: 400,
    reason: "BadRequest",
    field: "kind",
  });
  add({
    name: `${k}: update with metadata as an array`,
    method: "PUT",
    path: obj,
    body: () => ({ ...current(def), metadata: [] }),
    status: 422,
    reason: "Invalid",
    field: "metadata",
  });
  add({
    name: `${k}: update with another name`,
    method: "PUT",
    path: obj,
    body: () => setAt(current(def), ["metadata", "name"], "someone-else"),
    status: 400,
    reason: "BadRequest",
    field: "metadata.name",
  });
  add({
    name: `${k}: update with a stale resourceVersion`,
    method: "PUT",
    path: obj,
    body: () => setAt(current(def), ["metadata", "resourceVersion"], "1"),
    status: 409,
    reason: "Conflict",
  });
  add({
    name: `${k}: update with a duplicate key`,
    method: "PUT",
    path: obj,
    opts: () => raw(duplicateName(current(def))),
    status: 400,
    reason: "BadRequest",
    field: "metadata.name",
  });
  add({
    name: `${k}: update nested 10,000 levels`,
    method: "PUT",
    path: obj,
    opts: () => raw(deepBody(current(def), "spec", 10_000)),
    status: 400,
    reason: "BadRequest",
  });
  add({ name: `${k}: update of an absent object`, method: "PUT", path: `${coll}/absent`, body: valid(def, "absent"), status: 404, reason: "NotFound" });
  const patch = (name: string, body: unknown, status: number, reason: string, field?: string, opts: CallOptions = { contentType: MERGE }, path = obj) =>
    add({ name: `${k}: merge patch with ${name}`, method: "PATCH", path, body, opts, status, reason, field });
  patch("an array", [], 400, "BadRequest");
  patch("a string", "x", 400, "BadRequest", undefined, { contentType: MERGE, raw: '"x"' });
  patch("null", undefined, 400, "BadRequest", undefined, { contentType: MERGE, raw: "null" });
  patch("a body that is not JSON", undefined, 400, "BadRequest", undefined, { contentType: MERGE, raw: "{" });
  patch("metadata as an array", { metadata: [] }, 422, "Invalid", "metadata");
  patch("a numeric label value", { metadata: { labels: { k: 1 } } }, 422, "Invalid", "metadata.labels.k");
  patch("another name", { metadata: { name: "someone-else" } }, 400, "BadRequest", "metadata.name");
  patch("a stale resourceVersion", { metadata: { resourceVersion: "1" } }, 409, "Conflict");
  patch("a duplicate key", undefined, 400, "BadRequest", "metadata.labels.a", { contentType: MERGE, raw: '{"metadata":{"labels":{"a":"1","a":"2"}}}' });
  patch("a value nested 10,000 levels", undefined, 400, "BadRequest", undefined, { contentType: MERGE, raw: `{"metadata":{"labels":${nest(10_000)}}}` });
  patch("force=true", { metadata: {} }, 400, "BadRequest", "force", { contentType: MERGE }, () => `${obj()}?force=true`);
  patch("an unknown field", { bogus: 1 }, 400, "BadRequest", "bogus");
  patch("a 4 MiB body", { metadata: { annotations: { big: "x".repeat(4 * 1024 * 1024) } } }, 413, "RequestEntityTooLarge");
  patch("an absent object", { metadata: {} }, 404, "NotFound", undefined, { contentType: MERGE }, () => `${coll}/absent`);
  // The core kinds take strategic merge patches (as kube-apiserver's built-in kinds), which must be objects.
  for (const contentType of [...(strategic(def) ? [] : ["application/strategic-merge-patch+json"]), "application/json", "text/plain"]) {
    add({
      name: `${k}: PATCH as ${contentType}`,
      method: "PATCH",
      path: obj,
      body: [{ op: "add", path: "/metadata/labels", value: {} }],
      opts: { contentType },
      status: 415,
      reason: "UnsupportedMediaType",
    });
  }
  if (strategic(def))
    add({
      name: `${k}: a strategic merge patch that is an array`,
      method: "PATCH",
      path: obj,
      body: [{ op: "add", path: "/metadata/labels", value: {} }],
      opts: { contentType: "application/strategic-merge-patch+json" },
      status: 400,
      reason: "BadRequest",
    });
  const jsonPatch = (name: string, body: unknown, status: number, field?: string) =>
    add({
      name: `${k}: JSON patch ${name}`,
      method: "PATCH",
      path: obj,
      body,
      opts: { contentType: "application/json-patch+json" },
      status,
      reason: status === 400 ? "BadRequest" : "Invalid",
      field,
    });
  jsonPatch("that is an object", { op: "add", path: "/metadata/labels", value: {} }, 400);
  jsonPatch(
    "whose test fails",
    [
      { op: "add", path: "/metadata/labels", value: { a: "1" } },
      { op: "test", path: "/metadata/name", value: "someone-else" },
    ],
    422,
  );
  jsonPatch("with an unknown op", [{ op: "merge", path: "/metadata" }], 422, "patch[0].op");
  jsonPatch("into __proto__", [{ op: "add", path: "/__proto__/polluted", value: true }], 422);
  jsonPatch("removing what is not there", [{ op: "remove", path: "/spec/absent/deeper" }], 422);
  add({
    name: `${k}: PATCH without a content type`,
    method: "PATCH",
    path: obj,
    body: {},
    opts: { headers: { "content-type": "" } },
    status: 415,
    reason: "UnsupportedMediaType",
  });
  const apply = (name: string, text: string | (() => string), status: number, reason: string, field?: string, query = "?fieldManager=hostile") =>
    add({
      name: `${k}: apply with ${name}`,
      method: "PATCH",
      path: () => `${obj()}${query}`,
      opts: () => ({ contentType: APPLY, raw: typeof text === "function" ? text() : text }),
      status,
      reason,
      field,
    });
  const head = () => `apiVersion: ${apiVersionOf(def)}\nkind: ${def.kind}\nmetadata:\n  name: ${JSON.stringify(fixtureName(def))}\n`;
  apply("no fieldManager", () => head(), 422, "Invalid", "fieldManager", "");
  apply("the wrong kind", () => head().replace(`kind: ${def.kind}`, "kind: Pod"), 400, "BadRequest", "apiVersion");
  apply("malformed YAML", () => `${head()}spec: [1, 2\n`, 400, "BadRequest");
  apply("a cyclic alias", () => `${head().replace("metadata:", "metadata: &m")}  labels: *m\n`, 400, "BadRequest");
  apply(
    "aliases nested past the limit",
    () => `${head()}spec:\n  a: &a [1]\n${Array.from({ length: 60 }, (_, i) => `  b${i}: &b${i} [[${i === 0 ? "*a" : `*b${i - 1}`}]]`).join("\n")}\n`,
    400,
    "BadRequest",
  );
  apply(
    `flow collections nested ${MAX_NESTING_DEPTH + 1} levels`,
    () => `${head()}spec: ${"[".repeat(MAX_NESTING_DEPTH)}1${"]".repeat(MAX_NESTING_DEPTH)}\n`,
    400,
    "BadRequest",
  );
  apply("a duplicate key", () => `${head()}  labels:\n    a: "1"\n    a: "2"\n`, 400, "BadRequest", "metadata.labels.a");
  apply("managedFields", () => `${head()}  managedFields: [{}]\n`, 400, "BadRequest", "metadata.managedFields");
  apply("another name", () => head().replace(JSON.stringify(fixtureName(def)), "someone-else"), 400, "BadRequest", "metadata.name");
  apply("metadata as a list", () => `apiVersion: ${apiVersionOf(def)}\nkind: ${def.kind}\nmetadata: [1]\n`, 422, "Invalid", "metadata");
  apply("a document list", () => `${head()}---\n${head()}`, 400, "BadRequest");
  add({ name: `${k}: delete with DeleteOptions that are not JSON`, method: "DELETE", path: obj, opts: raw("{"), status: 400, reason: "BadRequest" });
  add({ name: `${k}: delete with an array of DeleteOptions`, method: "DELETE", path: obj, body: [], status: 400, reason: "BadRequest" });
  add({
    name: `${k}: delete with preconditions as a string`,
    method: "DELETE",
    path: obj,
    body: { preconditions: "none" },
    status: 400,
    reason: "BadRequest",
    field: "preconditions",
  });
  add({
    name: `${k}: delete with a numeric uid precondition`,
    method: "DELETE",
    path: obj,
    body: { preconditions: { uid: 5 } },
    status: 400,
    reason: "BadRequest",
    field: "preconditions.uid",
  });
  add({
    name: `${k}: delete with a uid precondition of another object`,
    method: "DELETE",
    path: obj,
    body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid: "nope" } },
    status: 409,
    reason: "Conflict",
  });
  add({
    name: `${k}: delete with a stale resourceVersion precondition`,
    method: "DELETE",
    path: obj,
    body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { resourceVersion: "1" } },
    status: 409,
    reason: "Conflict",
  });
  add({
    name: `${k}: delete with duplicate DeleteOptions keys`,
    method: "DELETE",
    path: obj,
    opts: raw('{"preconditions":{"uid":"a","uid":"b"}}'),
    status: 400,
    reason: "BadRequest",
    field: "preconditions.uid",
  });
  add({
    name: `${k}: delete with DeleteOptions nested 10,000 levels`,
    method: "DELETE",
    path: obj,
    opts: raw(nest(10_000)),
    status: 400,
    reason: "BadRequest",
  });
  add({ name: `${k}: delete of an absent object`, method: "DELETE", path: `${coll}/absent`, status: 404, reason: "NotFound" });
  if (def.hasStatus)
    add({ name: `${k}: DELETE on the status subresource`, method: "DELETE", path: () => `${obj()}/status`, status: 405, reason: "MethodNotAllowed" });
}

// Schema-derived: every field of every section (spec, data, type...) with wrong values, on create,
// merge patch, and (for the fields right under a section) update and apply.
for (const def of STORED.filter((d) => !d.systemOwned)) {
  const coll = collection(def);
  for (const [section, sectionSchema] of Object.entries(shapeOf(def))) {
    if (["apiVersion", "kind", "metadata", "status"].includes(section)) continue;
    for (const { label, value } of wrongValues(sectionSchema)) {
      add({
        name: `${kindName(def)}: create with ${section} as ${label}`,
        method: "POST",
        path: coll,
        body: { ...valid(def, freshName()), [section]: value },
        status: 422,
        reason: "Invalid",
        field: section,
      });
    }
    for (const { path, schema } of fieldsOf(sectionSchema, [section], isBuiltinTemplate(def) ? 3 : 4)) {
      const field = fieldPathOf(path);
      wrongValues(schema).forEach(({ label, value }, i) => {
        add({
          name: `${kindName(def)}: create with ${field} as ${label}`,
          method: "POST",
          path: coll,
          body: setAt(valid(def, freshName()), path, value),
          status: 422,
          reason: "Invalid",
          field,
        });
        if (i === 0)
          add({
            name: `${kindName(def)}: merge patch of ${field} to ${label}`,
            method: "PATCH",
            path: () => member(def),
            body: setAt({}, path, value),
            opts: { contentType: MERGE },
            status: 422,
            reason: "Invalid",
            field,
          });
        if (path.length === 2) {
          add({
            name: `${kindName(def)}: update with ${field} as ${label}`,
            method: "PUT",
            path: () => member(def),
            body: () => setAt(current(def), path, value),
            status: 422,
            reason: "Invalid",
            field,
          });
          add({
            name: `${kindName(def)}: apply with ${field} as ${label}`,
            method: "PATCH",
            path: () => `${member(def)}?fieldManager=hostile`,
            // JSON is YAML: the apply body as kubectl sends it.
            opts: () => ({
              contentType: APPLY,
              raw: JSON.stringify(setAt({ apiVersion: apiVersionOf(def), kind: def.kind, metadata: { name: fixtureName(def) } }, path, value)),
            }),
            status: 422,
            reason: "Invalid",
            field,
          });
        }
      });
    }
  }
  // The status subresource: every status field with wrong values, by update and by merge patch.
  const statusSchema = shapeOf(def).status;
  if (!def.hasStatus || !statusSchema) continue;
  for (const { path, schema } of fieldsOf(statusSchema, ["status"], isBuiltinTemplate(def) ? 2 : 3)) {
    const field = fieldPathOf(path);
    wrongValues(schema).forEach(({ label, value }, i) => {
      add({
        name: `${kindName(def)}: status update with ${field} as ${label}`,
        method: "PUT",
        path: () => `${member(def)}/status`,
        body: () => setAt(current(def), path, value),
        status: 422,
        reason: "Invalid",
        field,
      });
      if (i === 0)
        add({
          name: `${kindName(def)}: status merge patch of ${field} to ${label}`,
          method: "PATCH",
          path: () => `${member(def)}/status`,
          body: setAt({}, path, value),
          opts: { contentType: MERGE },
          status: 422,
          reason: "Invalid",
          field,
        });
    });
  }
  add({
    name: `${kindName(def)}: status update with status as an array`,
    method: "PUT",
    path: () => `${member(def)}/status`,
    body: () => ({ ...current(def), status: [] }),
    status: 422,
    reason: "Invalid",
    field: "status",
  });
  add({
    name: `${kindName(def)}: status update with an unknown status field`,
    method: "PUT",
    path: () => `${member(def)}/status`,
    body: () => setAt(current(def), ["status", "bogus"], 1),
    status: 400,
    reason: "BadRequest",
    field: "status.bogus",
  });
}

// The review kinds (answered, not stored): create only, with Kubernetes' validation.
for (const def of KINDS.filter((d) => d.createOnly)) {
  const coll = collection(def);
  const k = def.kind;
  const body = { apiVersion: apiVersionOf(def), kind: k, ...(def.group === "authorization.k8s.io" ? { spec: {} } : {}) };
  add({ name: `${k}: GET the collection`, method: "GET", path: coll, status: 405, reason: "MethodNotAllowed" });
  add({ name: `${k}: GET an object`, method: "GET", path: `${coll}/x`, status: 405, reason: "MethodNotAllowed" });
  add({ name: `${k}: PUT an object`, method: "PUT", path: `${coll}/x`, body, status: 405, reason: "MethodNotAllowed" });
  add({ name: `${k}: DELETE the collection`, method: "DELETE", path: coll, status: 405, reason: "MethodNotAllowed" });
  add({ name: `${k}: POST to a named object`, method: "POST", path: `${coll}/x`, body, status: 405, reason: "MethodNotAllowed" });
  add({ name: `${k}: create without a credential`, method: "POST", path: coll, body, opts: { token: null }, status: 401, reason: "Unauthorized" });
  add({ name: `${k}: create with a body that is not JSON`, method: "POST", path: coll, opts: { raw: "{nope" }, status: 400, reason: "BadRequest" });
  add({ name: `${k}: create with an array body`, method: "POST", path: coll, body: [], status: 400, reason: "BadRequest" });
  add({
    name: `${k}: create with the wrong kind`,
    method: "POST",
    path: coll,
    body: { ...body, kind: "Pod" },
    status: 400,
    reason: "BadRequest",
    field: "kind",
  });
  add({
    name: `${k}: create with an unknown field`,
    method: "POST",
    path: coll,
    body: { ...body, bogus: 1 },
    status: 400,
    reason: "BadRequest",
    field: "bogus",
  });
  add({
    name: `${k}: create with a duplicate key`,
    method: "POST",
    path: coll,
    opts: { raw: `{"kind":"${k}","kind":"${k}"}` },
    status: 400,
    reason: "BadRequest",
    field: "kind",
  });
  add({
    name: `${k}: create nested 10,000 levels`,
    method: "POST",
    path: coll,
    opts: { raw: deepBody(body, "metadata", 10_000) },
    status: 400,
    reason: "BadRequest",
  });
  add({
    name: `${k}: create with a name`,
    method: "POST",
    path: coll,
    body: { ...body, metadata: { name: "x" } },
    status: 422,
    reason: "Invalid",
    field: "metadata",
  });
  add({
    name: `${k}: create with metadata as an array`,
    method: "POST",
    path: coll,
    body: { ...body, metadata: [] },
    status: 422,
    reason: "Invalid",
    field: "metadata",
  });
  add({ name: `${k}: a text/plain body`, method: "POST", path: coll, body, opts: { contentType: "text/plain" }, status: 415, reason: "UnsupportedMediaType" });
  add({
    name: `${k}: a protobuf body without the envelope`,
    method: "POST",
    path: coll,
    body: "x",
    opts: { contentType: "application/vnd.kubernetes.protobuf" },
    status: 400,
    reason: "BadRequest",
  });
  add({
    name: `${k}: a 4 MiB body`,
    method: "POST",
    path: coll,
    body: { ...body, pad: "x".repeat(4 * 1024 * 1024) },
    status: 413,
    reason: "RequestEntityTooLarge",
  });
  if (k === "SelfSubjectAccessReview" || k === "SubjectAccessReview") {
    const subject = k === "SubjectAccessReview" ? { user: "u" } : {};
    add({
      name: `${k}: neither kind of attributes`,
      method: "POST",
      path: coll,
      body: { ...body, spec: subject },
      status: 422,
      reason: "Invalid",
      field: "spec.resourceAttributes",
    });
    add({
      name: `${k}: both kinds of attributes`,
      method: "POST",
      path: coll,
      body: { ...body, spec: { ...subject, resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/x", verb: "get" } } },
      status: 422,
      reason: "Invalid",
      field: "spec.nonResourceAttributes",
    });
    add({
      name: `${k}: attributes as a string`,
      method: "POST",
      path: coll,
      body: { ...body, spec: { ...subject, resourceAttributes: "get" } },
      status: 422,
      reason: "Invalid",
      field: "spec.resourceAttributes",
    });
    add({
      name: `${k}: a numeric verb`,
      method: "POST",
      path: coll,
      body: { ...body, spec: { ...subject, resourceAttributes: { verb: 1 } } },
      status: 422,
      reason: "Invalid",
      field: "spec.resourceAttributes.verb",
    });
  }
  if (k === "SelfSubjectRulesReview") add({ name: `${k}: no namespace`, method: "POST", path: coll, body, status: 400, reason: "BadRequest" });
  if (k === "SubjectAccessReview")
    add({
      name: `${k}: neither user nor groups`,
      method: "POST",
      path: coll,
      body: { ...body, spec: { resourceAttributes: { verb: "get" } } },
      status: 422,
      reason: "Invalid",
      field: "spec.user",
    });
}

// Kind-specific rules beyond types.
add({
  name: "BootstrapToken: an ID that is not six characters",
  method: "POST",
  path: collection(byKind("BootstrapToken")),
  body: valid(byKind("BootstrapToken"), "abcdefg"),
  status: 422,
  reason: "Invalid",
  field: "metadata.name",
});
add({
  name: "BootstrapToken: a changed spec",
  method: "PATCH",
  path: () => member(byKind("BootstrapToken")),
  body: { spec: { ttlSeconds: 5 } },
  opts: { contentType: MERGE },
  status: 400,
  reason: "BadRequest",
  field: "spec",
});
add({
  name: "ManagedClusterSetBinding: a clusterSet other than its name",
  method: "POST",
  path: collection(byKind("ManagedClusterSetBinding")),
  body: setAt(valid(byKind("ManagedClusterSetBinding"), "hb1"), ["spec", "clusterSet"], "other"),
  status: 422,
  reason: "Invalid",
  field: "spec.clusterSet",
});
add({
  name: "ManifestWork: no manifests",
  method: "POST",
  path: collection(byKind("ManifestWork")),
  body: setAt(valid(byKind("ManifestWork"), "hw1"), ["spec", "workload", "manifests"], []),
  status: 422,
  reason: "Invalid",
  field: "spec.workload.manifests",
});
add({
  name: "ManifestWork: a manifest without a kind",
  method: "POST",
  path: collection(byKind("ManifestWork")),
  body: setAt(valid(byKind("ManifestWork"), "hw2"), ["spec", "workload", "manifests"], [{ apiVersion: "v1", metadata: { name: "x" } }]),
  status: 422,
  reason: "Invalid",
  field: "spec.workload.manifests[0].kind",
});
add({
  name: "ManifestWork: manifests over 500 KiB",
  method: "POST",
  path: collection(byKind("ManifestWork")),
  body: setAt(valid(byKind("ManifestWork"), "hw3"), ["spec", "workload", "manifests", 0, "data", "big"], "x".repeat(600 * 1024)),
  status: 422,
  reason: "Invalid",
  field: "spec.workload",
});
add({
  name: "ManifestWorkReplicaSet: no placementRefs",
  method: "POST",
  path: collection(byKind("ManifestWorkReplicaSet")),
  body: setAt(valid(byKind("ManifestWorkReplicaSet"), "hr1"), ["spec", "placementRefs"], []),
  status: 422,
  reason: "Invalid",
  field: "spec.placementRefs",
});
add({
  name: "ManifestWorkReplicaSet: duplicate placementRefs",
  method: "POST",
  path: collection(byKind("ManifestWorkReplicaSet")),
  body: setAt(valid(byKind("ManifestWorkReplicaSet"), "hr2"), ["spec", "placementRefs"], [{ name: "a" }, { name: "a" }]),
  status: 422,
  reason: "Invalid",
  field: "spec.placementRefs[1].name",
});
add({
  name: "ManagedCluster: a client-set taint timeAdded",
  method: "POST",
  path: collection(byKind("ManagedCluster")),
  body: setAt(valid(byKind("ManagedCluster"), "hm1"), ["spec", "taints"], [{ key: "k", effect: "NoSelect", timeAdded: "2026-01-01T00:00:00Z" }]),
  status: 400,
  reason: "BadRequest",
  field: "spec.taints[0].timeAdded",
});
add({
  name: "ManagedCluster: an http client URL",
  method: "POST",
  path: collection(byKind("ManagedCluster")),
  body: setAt(valid(byKind("ManagedCluster"), "hm2"), ["spec", "managedClusterClientConfigs"], [{ url: "http://x" }]),
  status: 422,
  reason: "Invalid",
  field: "spec.managedClusterClientConfigs[0].url",
});
add({
  name: "Secret: data that is not base64",
  method: "POST",
  path: collection(byKind("Secret")),
  body: { ...valid(byKind("Secret"), "hs1"), data: { a: "%%%" } },
  status: 422,
  reason: "Invalid",
  field: "data[a]",
});
add({
  name: "Secret: a type change",
  method: "PATCH",
  path: () => member(byKind("Secret")),
  body: { type: "kubernetes.io/tls" },
  opts: { contentType: MERGE },
  status: 422,
  reason: "Invalid",
  field: "type",
});
const tokenPath = () => `${member(byKind("ServiceAccount"))}/token`;
const tokenRequest = (spec: Json, metadata: Json = {}) => ({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata, spec });
add({
  name: "ServiceAccount: token for 59 seconds",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({ expirationSeconds: 59 }),
  status: 422,
  reason: "Invalid",
  field: "spec.expirationSeconds",
});
add({
  name: "ServiceAccount: token for more than 2^32 seconds",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({ expirationSeconds: 2 ** 33 }),
  status: 422,
  reason: "Invalid",
  field: "spec.expirationSeconds",
});
add({
  name: "ServiceAccount: token with expirationSeconds as a string",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({ expirationSeconds: "1h" }),
  status: 422,
  reason: "Invalid",
  field: "spec.expirationSeconds",
});
add({
  name: "ServiceAccount: token with audiences as a string",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({ audiences: "vault" }),
  status: 422,
  reason: "Invalid",
  field: "spec.audiences",
});
add({
  name: "ServiceAccount: token bound to an object",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({ boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p" } }),
  status: 422,
  reason: "Invalid",
  field: "spec.boundObjectRef",
});
add({
  name: "ServiceAccount: token naming another ServiceAccount",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({}, { name: "other" }),
  status: 422,
  reason: "Invalid",
  field: "metadata.name",
});
add({
  name: "ServiceAccount: token naming another namespace",
  method: "POST",
  path: tokenPath,
  body: tokenRequest({}, { namespace: "other" }),
  status: 422,
  reason: "Invalid",
  field: "metadata.namespace",
});
add({
  name: "ServiceAccount: token for a ServiceAccount that does not exist",
  method: "POST",
  path: `${collection(byKind("ServiceAccount"))}/nobody/token`,
  body: tokenRequest({}),
  status: 404,
  reason: "NotFound",
});
add({ name: "ServiceAccount: token with PUT", method: "PUT", path: tokenPath, body: tokenRequest({}), status: 405, reason: "MethodNotAllowed" });
add({
  name: "ServiceAccount: token with a YAML-less text body",
  method: "POST",
  path: tokenPath,
  body: "not json",
  opts: { contentType: "text/plain" },
  status: 415,
  reason: "UnsupportedMediaType",
});
add({ name: "ServiceAccount: token with a malformed JSON body", method: "POST", path: tokenPath, body: '{"spec":', status: 400, reason: "BadRequest" });
add({
  name: "WebhookReceiver: an unsupported target",
  method: "POST",
  path: collection(byKind("WebhookReceiver")),
  body: setAt(valid(byKind("WebhookReceiver"), "hr3"), ["spec", "target", "kind"], "Deployment"),
  status: 422,
  reason: "Invalid",
  field: "spec.target",
});
add({
  name: "WebhookReceiver: a template in a JSON Patch path",
  method: "POST",
  path: collection(byKind("WebhookReceiver")),
  body: setAt(valid(byKind("WebhookReceiver"), "hr4"), ["spec", "action"], { type: "JSONPatch", patch: [{ op: "add", path: "/spec/{{ .x }}", value: 1 }] }),
  status: 422,
  reason: "Invalid",
  field: "spec.action.patch[0].path",
});

// ---------------------------------------------------------------------------------------------
// Custom resources (of the fixture CRD) and CRDs the hub refuses
// ---------------------------------------------------------------------------------------------

const CRS = `/apis/hostile.example.com/v1/namespaces/${NS}/hcrds`;
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const cr = (spec: unknown, extra: Json = {}) => ({ apiVersion: "hostile.example.com/v1", kind: "Khcrds", metadata: { name: freshName() }, spec, ...extra });
const crCases: [string, string, string, unknown, CallOptions | undefined, number, string, string | undefined][] = [
  ["a wrong type", "POST", CRS, cr({ size: "big" }), undefined, 422, "Invalid", "spec.size"],
  ["a value outside its enum", "POST", CRS, cr({ color: "green" }), undefined, 422, "Invalid", "spec.color"],
  ["a value below its minimum", "POST", CRS, cr({ size: -1 }), undefined, 422, "Invalid", "spec.size"],
  ["a failed x-kubernetes-validations rule", "POST", CRS, cr({ size: 200 }), undefined, 422, "Invalid", "spec"],
  ["an unknown field under Strict", "POST", CRS, cr({ size: 1, bogus: 1 }), undefined, 400, "BadRequest", "spec.bogus"],
  ["an unknown top-level field", "POST", CRS, cr({ size: 1 }, { bogus: 1 }), undefined, 400, "BadRequest", "bogus"],
  ["the wrong apiVersion", "POST", CRS, { ...cr({}), apiVersion: "hostile.example.com/v9" }, undefined, 400, "BadRequest", "apiVersion"],
  ["the wrong kind", "POST", CRS, { ...cr({}), kind: "Other" }, undefined, 400, "BadRequest", "kind"],
  ["spec as a string", "POST", CRS, cr("x"), undefined, 422, "Invalid", "spec"],
  ["a merge patch with a wrong type", "PATCH", `${CRS}/hcr`, { spec: { size: "x" } }, { contentType: MERGE }, 422, "Invalid", "spec.size"],
  ["a merge patch failing its rule", "PATCH", `${CRS}/hcr`, { spec: { size: 1000 } }, { contentType: MERGE }, 422, "Invalid", "spec"],
  ["a status subresource it does not declare", "PUT", `${CRS}/hcr/status`, cr({}), undefined, 404, "NotFound", undefined],
  ["a scale subresource it does not declare", "GET", `${CRS}/hcr/scale`, undefined, undefined, 404, "NotFound", undefined],
  ["a version it does not serve", "POST", `/apis/hostile.example.com/v2/namespaces/${NS}/hcrds`, cr({}), undefined, 404, "NotFound", undefined],
];
for (const [label, method, path, body, opts, status, reason, field] of crCases)
  add({ name: `custom resource: ${label}`, method, path, body, opts, status, reason, field });

// A placement's dry run for one cluster (the `render` subresource, src/api/placement-render.ts) and
// overrides naming a ManifestWorkReplicaSet (docs/overrides.md): 4xx, nothing written.
const FLEET_V1 = "/apis/placement.kubernetes-fleet.io/v1";
const ADDON_V1A1 = "/apis/addon.open-cluster-management.io/v1alpha1";
const renderCases: [string, string, string, unknown, number, string, string | undefined][] = [
  ["render without a cluster", "GET", `${FLEET_V1}/clusterresourceplacements/hcrp/render`, undefined, 400, "BadRequest", "cluster"],
  ["render with an empty cluster", "GET", `${FLEET_V1}/clusterresourceplacements/hcrp/render?cluster=`, undefined, 400, "BadRequest", "cluster"],
  [
    "render for a cluster that does not exist",
    "GET",
    `${FLEET_V1}/clusterresourceplacements/hcrp/render?cluster=absent`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "render for a cluster name that is no name",
    "GET",
    `${FLEET_V1}/clusterresourceplacements/hcrp/render?cluster=%00%2F..`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "render of a placement that does not exist",
    "GET",
    `${FLEET_V1}/clusterresourceplacements/absent/render?cluster=${CLUSTER}`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "render of a ResourcePlacement in another namespace",
    "GET",
    `${FLEET_V1}/namespaces/default/resourceplacements/hrp/render?cluster=${CLUSTER}`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  ["render written with PUT", "PUT", `${FLEET_V1}/namespaces/${NS}/resourceplacements/hrp/render?cluster=${CLUSTER}`, {}, 405, "MethodNotAllowed", undefined],
  ["render deleted", "DELETE", `${FLEET_V1}/clusterresourceplacements/hcrp/render?cluster=${CLUSTER}`, undefined, 405, "MethodNotAllowed", undefined],
  ["render of a collection", "GET", `${FLEET_V1}/clusterresourceplacements/render`, undefined, 404, "NotFound", undefined],
  ["render below render", "GET", `${FLEET_V1}/clusterresourceplacements/hcrp/render/x?cluster=${CLUSTER}`, undefined, 404, "NotFound", undefined],
  // A template add-on's dry run (src/addons/dry-run.ts): the same answers.
  ["an add-on's render without a cluster", "GET", `${ADDON_V1A1}/clustermanagementaddons/hcma/render`, undefined, 400, "BadRequest", "cluster"],
  [
    "an add-on's render for a cluster name that is no name",
    "GET",
    `${ADDON_V1A1}/clustermanagementaddons/hcma/render?cluster=%00%2F..`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "render of an add-on that does not exist",
    "GET",
    `${ADDON_V1A1}/clustermanagementaddons/absent/render?cluster=${CLUSTER}`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "a ManagedClusterAddOn's render for another cluster",
    "GET",
    `${ADDON_V1A1}/namespaces/${CLUSTER}/managedclusteraddons/hmca/render?cluster=other`,
    undefined,
    400,
    "BadRequest",
    "cluster",
  ],
  [
    "a ManagedClusterAddOn's render in a namespace that is no name",
    "GET",
    `${ADDON_V1A1}/namespaces/%00/managedclusteraddons/hmca/render`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
  [
    "an add-on's render written with PUT",
    "PUT",
    `${ADDON_V1A1}/clustermanagementaddons/hcma/render?cluster=${CLUSTER}`,
    {},
    405,
    "MethodNotAllowed",
    undefined,
  ],
  [
    "a ClusterResourceOverride naming a ManifestWorkReplicaSet",
    "POST",
    `${FLEET_V1}/clusterresourceoverrides`,
    {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverride",
      metadata: { name: "hcro-mwrs" },
      spec: {
        placement: { name: "web", scope: "ManifestWorkReplicaSet" },
        clusterResourceSelectors: [{ group: "", version: "v1", kind: "Namespace", name: "hcro-mwrs-ns" }],
        policy: {
          overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/h", value: "h" }] }],
        },
      },
    },
    422,
    "Invalid",
    undefined,
  ],
  [
    "a ResourceOverride of a ManifestWorkReplicaSet with a status path",
    "POST",
    `${FLEET_V1}/namespaces/${NS}/resourceoverrides`,
    {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "hro-mwrs" },
      spec: {
        placement: { name: "web", scope: "ManifestWorkReplicaSet" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "web" }],
        policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/status/x", value: "h" }] }] },
      },
    },
    422,
    "Invalid",
    undefined,
  ],
  [
    "a ResourceOverride naming a template add-on",
    "POST",
    `${FLEET_V1}/namespaces/${NS}/resourceoverrides`,
    {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ResourceOverride",
      metadata: { name: "hro-addon" },
      spec: {
        placement: { name: "hello", scope: "ClusterManagementAddOn" },
        resourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "hello-agent" }],
        policy: {
          overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "add", path: "/metadata/labels/h", value: "h" }] }],
        },
      },
    },
    422,
    "Invalid",
    undefined,
  ],
  [
    "a ClusterResourceOverride of a template add-on with a kind path",
    "POST",
    `${FLEET_V1}/clusterresourceoverrides`,
    {
      apiVersion: "placement.kubernetes-fleet.io/v1",
      kind: "ClusterResourceOverride",
      metadata: { name: "hcro-addon" },
      spec: {
        placement: { name: "hello", scope: "ClusterManagementAddOn" },
        clusterResourceSelectors: [{ group: "apps", version: "v1", kind: "Deployment", name: "hello-agent" }],
        policy: { overrideRules: [{ clusterSelector: { clusterSelectorTerms: [] }, jsonPatchOverrides: [{ op: "replace", path: "/kind", value: "Pod" }] }] },
      },
    },
    422,
    "Invalid",
    undefined,
  ],
  [
    "render of a ManifestWorkReplicaSet without a cluster",
    "GET",
    `/apis/work.open-cluster-management.io/v1alpha1/namespaces/${NS}/manifestworkreplicasets/hmwrs/render`,
    undefined,
    400,
    "BadRequest",
    undefined,
  ],
  [
    "render of a ManifestWorkReplicaSet written with PATCH",
    "PATCH",
    `/apis/work.open-cluster-management.io/v1alpha1/namespaces/${NS}/manifestworkreplicasets/hmwrs/render?cluster=${CLUSTER}`,
    {},
    405,
    "MethodNotAllowed",
    undefined,
  ],
  [
    "render of a ManifestWork",
    "GET",
    `/apis/work.open-cluster-management.io/v1/namespaces/${CLUSTER}/manifestworks/hw/render?cluster=${CLUSTER}`,
    undefined,
    404,
    "NotFound",
    undefined,
  ],
];
for (const [label, method, path, body, status, reason, field] of renderCases)
  add({ name: `fleet: ${label}`, method, path, ...(body !== undefined ? { body } : {}), status, reason, field });

// KubeFleet's evictions and budgets (docs/kubefleet.md "Evictions, budgets, drain"): the CRDs' rules
// and the webhooks' checks, each a 422 naming the field; never a 5xx.
const EVICTIONS = "/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacementevictions";
const BUDGETS = "/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacementdisruptionbudgets";
const eviction = (name: string, spec: Json) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1beta1",
  kind: "ClusterResourcePlacementEviction",
  metadata: { name },
  spec,
});
const budget = (name: string, spec: Json) => ({
  apiVersion: "placement.kubernetes-fleet.io/v1beta1",
  kind: "ClusterResourcePlacementDisruptionBudget",
  metadata: { name },
  spec,
});
const evictionCases: [string, string, string, unknown, string | undefined][] = [
  ["budget with both fields", "POST", BUDGETS, budget("hb1", { maxUnavailable: 1, minAvailable: 1 }), "spec"],
  ["budget with a negative minAvailable", "POST", BUDGETS, budget("hb2", { minAvailable: -1 }), "spec.minAvailable"],
  ["budget with maxUnavailable 101%", "POST", BUDGETS, budget("hb3", { maxUnavailable: "101%" }), "spec.maxUnavailable"],
  ["budget with a number as a string", "POST", BUDGETS, budget("hb4", { maxUnavailable: "2" }), "spec.maxUnavailable"],
  ["budget with a fraction", "POST", BUDGETS, budget("hb5", { minAvailable: 1.5 }), "spec.minAvailable"],
  ["budget patched to both fields", "PATCH", `${BUDGETS}/hcrpdb`, { spec: { maxUnavailable: "10%" } }, "spec"],
  ["eviction without clusterName", "POST", EVICTIONS, eviction("he1", { placementName: "x" }), "spec.clusterName"],
  ["eviction with an overlong placementName", "POST", EVICTIONS, eviction("he2", { placementName: "p".repeat(256), clusterName: "c" }), "spec.placementName"],
  ["eviction of a PickFixed placement (the webhook)", "POST", EVICTIONS, eviction("he3", { placementName: "hcrp", clusterName: "hv" }), "spec"],
  ["eviction's clusterName changed", "PATCH", `${EVICTIONS}/hcrpe`, { spec: { clusterName: "elsewhere" } }, "spec.clusterName"],
  ["eviction's placementName changed", "PATCH", `${EVICTIONS}/hcrpe`, { spec: { placementName: "other" } }, "spec.placementName"],
];
for (const [label, method, path, body, field] of evictionCases)
  add({
    name: `eviction: ${label}`,
    method,
    path,
    body,
    ...(method === "PATCH" ? { opts: { contentType: MERGE } } : {}),
    status: 422,
    reason: "Invalid",
    field,
  });

const crd = (name: string, spec: Json, metadata: Json = {}) => {
  const base = valid(byKind("CustomResourceDefinition"), name);
  return { ...base, metadata: { ...base.metadata, ...metadata }, spec: { ...base.spec, ...spec } };
};
const version = (schema: unknown, extra: Json = {}) => ({ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema }, ...extra });
const crdCases: [string, unknown, number, string, string | undefined][] = [
  ["conversion strategy Webhook", crd("hw1s.hostile.example.com", { conversion: { strategy: "Webhook" } }), 422, "Invalid", "spec.conversion.strategy"],
  [
    "a group and plural the hub serves",
    crd("managedclusters.cluster.open-cluster-management.io", { names: { plural: "managedclusters", kind: "ManagedCluster" } }),
    422,
    "Invalid",
    "spec.names.plural",
  ],
  [
    "a schema that is not structural",
    crd("hw2s.hostile.example.com", { versions: [version({ type: "object", properties: { spec: { properties: { a: { type: "string" } } } } })] }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
  ],
  [
    "a schema that is not an object at the root",
    crd("hw3s.hostile.example.com", { versions: [version({ type: "string" })] }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema.type",
  ],
  [
    "no schema",
    crd("hw4s.hostile.example.com", { versions: [{ name: "v1", served: true, storage: true }] }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema",
  ],
  [
    "two storage versions",
    crd("hw5s.hostile.example.com", { versions: [version(CR_SCHEMA), version(CR_SCHEMA, { name: "v2" })] }),
    422,
    "Invalid",
    "spec.versions",
  ],
  ["a name that is not plural.group", crd("other.hostile.example.com", { names: { plural: "hw6s", kind: "Hw6" } }), 422, "Invalid", "metadata.name"],
  [
    "a rule that does not compile",
    crd("hw7s.hostile.example.com", { versions: [version({ type: "object", "x-kubernetes-validations": [{ rule: "self.a >" }] })] }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule",
  ],
  [
    "a pattern that backtracks exponentially",
    crd("hw8s.hostile.example.com", { versions: [version({ type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } } })] }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema.properties[a].pattern",
  ],
  ["an unknown key in a schema", crd("hw9s.hostile.example.com", { versions: [version({ type: "object", bogus: 1 })] }), 400, "BadRequest", undefined],
  [
    "a protected group without approval",
    crd("hws.hostile.k8s.io", { group: "hostile.k8s.io", names: { plural: "hws", kind: "Hw" } }),
    422,
    "Invalid",
    "metadata.annotations[api-approved.kubernetes.io]",
  ],
  ["a scope that is neither", crd("hw10s.hostile.example.com", { names: { plural: "hw10s", kind: "Hw10" }, scope: "Galaxy" }), 422, "Invalid", "spec.scope"],
  ["a group without a dot", crd("hw11s.hostile", { group: "hostile", names: { plural: "hw11s", kind: "Hw11" } }), 422, "Invalid", "spec.group"],
  [
    "kind and listKind the same",
    crd("hw12s.hostile.example.com", { names: { plural: "hw12s", kind: "Hw12", listKind: "Hw12" } }),
    422,
    "Invalid",
    "spec.names.listKind",
  ],
  [
    "a default that fails its schema",
    crd("hw13s.hostile.example.com", {
      names: { plural: "hw13s", kind: "Hw13" },
      versions: [version({ type: "object", properties: { a: { type: "integer", default: "x" } } })],
    }),
    422,
    "Invalid",
    "spec.versions[0].schema.openAPIV3Schema.properties[a].default",
  ],
  [
    "a printer column of an unknown type",
    crd("hw14s.hostile.example.com", {
      names: { plural: "hw14s", kind: "Hw14" },
      versions: [version(CR_SCHEMA, { additionalPrinterColumns: [{ name: "X", type: "color", jsonPath: ".spec.color" }] })],
    }),
    422,
    "Invalid",
    "spec.versions[0].additionalPrinterColumns[0].type",
  ],
];
for (const [label, body, status, reason, field] of crdCases) add({ name: `CRD: ${label}`, method: "POST", path: CRDS, body, status, reason, field });

// ---------------------------------------------------------------------------------------------
// The agent API
// ---------------------------------------------------------------------------------------------

let keys: AgentKeys;
let bootstrap: string;
/** Some other valid P-256 public key (set in beforeAll). */
let sampleKey: Json;
const AGENT = `/agent/v1/clusters/${CLUSTER}`;
const signed = async (extra: CallOptions = {}): Promise<CallOptions> => ({ ...extra, token: await keys.sign(CLUSTER) });
const agentCase = (c: Omit<Case, "agent" | "opts"> & { opts?: CallOptions; unsigned?: boolean }) =>
  add({ ...c, agent: true, opts: c.unsigned ? c.opts : () => signed(c.opts) });

for (const esc of BAD_ESCAPES.slice(0, 3)) {
  agentCase({
    name: `agent: heartbeat for a cluster named ${esc}`,
    method: "POST",
    path: `/agent/v1/clusters/${esc}/heartbeat`,
    body: { healthy: true },
    status: 400,
    reason: "BadRequest",
  });
  agentCase({ name: `agent: works of a cluster named ${esc}`, method: "GET", path: `/agent/v1/clusters/${esc}/works`, status: 400, reason: "BadRequest" });
}
agentCase({
  name: "agent: a 9 KiB work name",
  method: "PUT",
  path: `${AGENT}/works/${"w".repeat(9 * 1024)}/status`,
  body: {},
  status: 414,
  reason: "RequestURITooLong",
});
agentCase({ name: "agent: an unknown agent path", method: "GET", path: `${AGENT}/secrets`, status: 404, reason: "NotFound" });
agentCase({ name: "agent: GET on register", method: "GET", path: "/agent/v1/register", status: 404, reason: "NotFound" });
for (const [label, opts] of [
  ["no credential", { token: null }],
  ["a token that is not a JWT", { token: "garbage" }],
  ["the admin token", {}],
  ["a bootstrap token", { token: "abcdef.0123456789abcdef" }],
] as [string, CallOptions][]) {
  agentCase({
    name: `agent: heartbeat with ${label}`,
    method: "POST",
    path: `${AGENT}/heartbeat`,
    body: { healthy: false },
    opts,
    unsigned: true,
    status: 401,
    reason: "Unauthorized",
  });
  agentCase({ name: `agent: works with ${label}`, method: "GET", path: `${AGENT}/works`, opts, unsigned: true, status: 401, reason: "Unauthorized" });
}
add({
  name: "agent: heartbeat signed by an unknown key",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: false },
  agent: true,
  opts: async () => ({ token: await (await agentKeys()).sign(CLUSTER) }),
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "agent: heartbeat with an expired token",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: false },
  agent: true,
  opts: async () => ({ token: await keys.sign(CLUSTER, { iatOffsetSeconds: -600 }) }),
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "agent: heartbeat with a token for another audience",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: false },
  agent: true,
  opts: async () => ({ token: await keys.sign(CLUSTER, { aud: "kubernetes" }) }),
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "agent: heartbeat with a token living 10 minutes",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: false },
  agent: true,
  opts: async () => ({ token: await keys.sign(CLUSTER, { lifetimeSeconds: 600 }) }),
  status: 401,
  reason: "Unauthorized",
});

// Heartbeats: bodies.
agentCase({ name: "agent: heartbeat that is not JSON", method: "POST", path: `${AGENT}/heartbeat`, opts: { raw: "{" }, status: 400, reason: "BadRequest" });
agentCase({ name: "agent: an empty heartbeat", method: "POST", path: `${AGENT}/heartbeat`, opts: { raw: "" }, status: 400, reason: "BadRequest" });
agentCase({ name: "agent: heartbeat as an array", method: "POST", path: `${AGENT}/heartbeat`, body: [true], status: 422, reason: "Invalid" });
agentCase({ name: "agent: heartbeat without healthy", method: "POST", path: `${AGENT}/heartbeat`, body: {}, status: 422, reason: "Invalid", field: "healthy" });
agentCase({
  name: "agent: heartbeat with an unknown field",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: true, hubAcceptsClient: true },
  status: 400,
  reason: "BadRequest",
  field: "hubAcceptsClient",
});
agentCase({
  name: "agent: heartbeat with a duplicate key",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  opts: { raw: '{"healthy":true,"healthy":false}' },
  status: 400,
  reason: "BadRequest",
  field: "healthy",
});
agentCase({
  name: "agent: heartbeat nested 10,000 levels",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  opts: { raw: `{"healthy":true,"capacity":${nest(10_000)}}` },
  status: 400,
  reason: "BadRequest",
});
agentCase({
  name: "agent: a 300 KiB heartbeat",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: true, healthMessage: "x".repeat(300 * 1024) },
  status: 413,
  reason: "RequestEntityTooLarge",
});
agentCase({
  name: "agent: 65 cluster claims",
  method: "POST",
  path: `${AGENT}/heartbeat`,
  body: { healthy: true, clusterClaims: Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, value: "v" })) },
  status: 422,
  reason: "Invalid",
  field: "clusterClaims",
});
for (const { path, schema } of fieldsOf(HeartbeatSchema, [], 3)) {
  const field = fieldPathOf(path);
  for (const { label, value } of wrongValues(schema)) {
    agentCase({
      name: `agent: heartbeat with ${field} as ${label}`,
      method: "POST",
      path: `${AGENT}/heartbeat`,
      body: setAt({ healthy: true }, path, value),
      status: 422,
      reason: "Invalid",
      field,
    });
  }
}

// Works: the long-poll's parameter and status reports.
for (const w of ["-1", "56", "abc", "1.5"]) {
  agentCase({
    name: `agent: works with waitSeconds=${w}`,
    method: "GET",
    path: `${AGENT}/works?waitSeconds=${w}`,
    status: 400,
    reason: "BadRequest",
    field: "waitSeconds",
  });
}
const report = (status: unknown) => () => ({ uid: currentObjects.ManifestWork!.metadata.uid, status });
agentCase({
  name: "agent: work status that is not JSON",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  opts: { raw: "{" },
  status: 400,
  reason: "BadRequest",
});
agentCase({
  name: "agent: work status without a uid",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: { status: {} },
  status: 422,
  reason: "Invalid",
  field: "uid",
});
agentCase({
  name: "agent: work status with a numeric uid",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: { uid: 1, status: {} },
  status: 422,
  reason: "Invalid",
  field: "uid",
});
agentCase({
  name: "agent: work status as an array",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: () => ({ uid: currentObjects.ManifestWork!.metadata.uid, status: [] }),
  status: 422,
  reason: "Invalid",
  field: "status",
});
agentCase({
  name: "agent: work status with an unknown field",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: () => ({ uid: currentObjects.ManifestWork!.metadata.uid, status: {}, extra: 1 }),
  status: 400,
  reason: "BadRequest",
  field: "extra",
});
agentCase({
  name: "agent: work status of another incarnation",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: { uid: "00000000-0000-0000-0000-000000000000", status: {} },
  status: 409,
  reason: "Conflict",
});
agentCase({
  name: "agent: status of an absent work",
  method: "PUT",
  path: `${AGENT}/works/absent/status`,
  body: { uid: "x", status: {} },
  status: 404,
  reason: "NotFound",
});
agentCase({
  name: "agent: work status with a duplicate key",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  opts: { raw: '{"uid":"a","uid":"b","status":{}}' },
  status: 400,
  reason: "BadRequest",
  field: "uid",
});
agentCase({
  name: "agent: work status nested 10,000 levels",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  opts: { raw: `{"uid":"a","status":${nest(10_000)}}` },
  status: 400,
  reason: "BadRequest",
});
agentCase({
  name: "agent: a 2 MiB work status",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: { uid: "a", status: { big: "x".repeat(2 * 1024 * 1024) } },
  status: 413,
  reason: "RequestEntityTooLarge",
});
agentCase({
  name: "agent: work status with an unknown status field",
  method: "PUT",
  path: `${AGENT}/works/hw/status`,
  body: report({ bogus: 1 }),
  status: 400,
  reason: "BadRequest",
  field: "status.bogus",
});
for (const { path, schema } of fieldsOf(byKind("ManifestWork").schema, [], 4).filter((f) => f.path[0] === "status" && f.path.length > 1)) {
  const field = fieldPathOf(path);
  for (const { label, value } of wrongValues(schema).slice(0, 1)) {
    agentCase({
      name: `agent: work status with ${field} as ${label}`,
      method: "PUT",
      path: `${AGENT}/works/hw/status`,
      body: report(setAt({}, path.slice(1), value)),
      status: 422,
      reason: "Invalid",
      field,
    });
  }
}

// Leave and key rotation: only bad bodies (a valid one would act).
agentCase({ name: "agent: left with a field", method: "POST", path: `${AGENT}/left`, body: { now: true }, status: 400, reason: "BadRequest", field: "now" });
agentCase({ name: "agent: left that is not JSON", method: "POST", path: `${AGENT}/left`, opts: { raw: "[" }, status: 400, reason: "BadRequest" });
agentCase({ name: "agent: left nested 10,000 levels", method: "POST", path: `${AGENT}/left`, opts: { raw: nest(10_000) }, status: 400, reason: "BadRequest" });
agentCase({
  name: "agent: rotate-key without a key",
  method: "POST",
  path: `${AGENT}/rotate-key`,
  body: {},
  status: 422,
  reason: "Invalid",
  field: "publicKey",
});
agentCase({
  name: "agent: rotate-key with a private key",
  method: "POST",
  path: `${AGENT}/rotate-key`,
  body: () => ({ publicKey: { ...sampleKey, d: "secret" }, proof: "proof" }),
  status: 400,
  reason: "BadRequest",
  field: "publicKey.d",
});
agentCase({
  name: "agent: rotate-key with a duplicate key",
  method: "POST",
  path: `${AGENT}/rotate-key`,
  opts: { raw: '{"publicKey":{"kty":"EC","kty":"EC","crv":"P-256","x":"a","y":"b"}}' },
  status: 400,
  reason: "BadRequest",
  field: "publicKey.kty",
});
for (const { path, schema } of fieldsOf(RotateKeySchema, [], 2)) {
  const field = fieldPathOf(path);
  for (const { label, value } of wrongValues(schema)) {
    agentCase({
      name: `agent: rotate-key with ${field} as ${label}`,
      method: "POST",
      path: `${AGENT}/rotate-key`,
      body: () => setAt({ publicKey: sampleKey, proof: "proof" }, path, value),
      status: 422,
      reason: "Invalid",
      field,
    });
  }
}

// Registration: credentials first, then the body.
/** A registration valid in shape (a real public key; the proof is checked after the body, so any string passes the schema). */
const registration = (name: string) => ({ clusterName: name, clusterId: `id-${name}`, publicKey: sampleKey, proof: "proof" });
const withBootstrap =
  (extra: CallOptions = {}) =>
  () => ({ ...extra, token: bootstrap });
add({
  name: "register: no bootstrap token",
  method: "POST",
  path: "/agent/v1/register",
  body: () => registration("r1"),
  opts: { token: null },
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "register: a malformed bootstrap token",
  method: "POST",
  path: "/agent/v1/register",
  body: () => registration("r1"),
  opts: { token: "abc.def" },
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "register: an unknown bootstrap token",
  method: "POST",
  path: "/agent/v1/register",
  body: () => registration("r1"),
  opts: { token: "zzzzzz.0123456789abcdef" },
  status: 401,
  reason: "Unauthorized",
});
add({
  name: "register: a bootstrap token with a wrong secret",
  method: "POST",
  path: "/agent/v1/register",
  body: () => registration("r1"),
  opts: () => ({ token: `${bootstrap.split(".")[0]}.0000000000000000` }),
  status: 401,
  reason: "Unauthorized",
});
add({ name: "register: the admin token", method: "POST", path: "/agent/v1/register", body: () => registration("r1"), status: 401, reason: "Unauthorized" });
add({
  name: "register: a body that is not JSON",
  method: "POST",
  path: "/agent/v1/register",
  opts: withBootstrap({ raw: "{" }),
  status: 400,
  reason: "BadRequest",
});
add({
  name: "register: a duplicate key",
  method: "POST",
  path: "/agent/v1/register",
  opts: () => withBootstrap({ raw: JSON.stringify(registration("r2")).replace('{"clusterName":', '{"clusterName":"first","clusterName":') })(),
  status: 400,
  reason: "BadRequest",
  field: "clusterName",
});
add({
  name: "register: nested 10,000 levels",
  method: "POST",
  path: "/agent/v1/register",
  opts: withBootstrap({ raw: `{"clusterName":"r3","clusterId":"i","publicKey":${nest(10_000)}}` }),
  status: 400,
  reason: "BadRequest",
});
add({
  name: "register: a 300 KiB body",
  method: "POST",
  path: "/agent/v1/register",
  body: () => ({ ...registration("r4"), clusterId: "x".repeat(300 * 1024) }),
  opts: withBootstrap(),
  status: 413,
  reason: "RequestEntityTooLarge",
});
add({
  name: "register: an invalid cluster name",
  method: "POST",
  path: "/agent/v1/register",
  body: () => registration("Not_Valid"),
  opts: withBootstrap(),
  status: 422,
  reason: "Invalid",
  field: "clusterName",
});
add({
  name: "register: a private key",
  method: "POST",
  path: "/agent/v1/register",
  body: () => setAt(registration("r5"), ["publicKey", "d"], "secret"),
  opts: withBootstrap(),
  status: 400,
  reason: "BadRequest",
  field: "publicKey.d",
});
add({
  name: "register: an unknown field",
  method: "POST",
  path: "/agent/v1/register",
  body: () => ({ ...registration("r6"), accepted: true }),
  opts: withBootstrap(),
  status: 400,
  reason: "BadRequest",
  field: "accepted",
});
add({
  name: "register: 65 claims",
  method: "POST",
  path: "/agent/v1/register",
  body: () => ({ ...registration("r7"), claims: Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, value: "v" })) }),
  opts: withBootstrap(),
  status: 422,
  reason: "Invalid",
  field: "claims",
});
for (const { path, schema } of fieldsOf(RegisterSchema, [], 3)) {
  const field = fieldPathOf(path);
  for (const { label, value } of wrongValues(schema)) {
    const name = freshName();
    add({
      name: `register: ${field} as ${label}`,
      method: "POST",
      path: "/agent/v1/register",
      body: () => setAt(registration(name), path, value),
      opts: withBootstrap(),
      status: 422,
      reason: "Invalid",
      field,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Karmada's policies: what is not built, and Karmada's webhook checks (docs/karmada.md)
// ---------------------------------------------------------------------------------------------

for (const kind of ["PropagationPolicy", "ClusterPropagationPolicy"]) {
  const sel = [{ apiVersion: "v1", kind: "ConfigMap", name: "absent-for-hostile", ...(kind === "PropagationPolicy" ? { namespace: NS } : {}) }];
  const karmadaCases: [string, Json, string][] = [
    ["replicaScheduling {} (Divided by default)", { placement: { replicaScheduling: {} } }, "spec.placement.replicaScheduling.replicaSchedulingType"],
    [
      "replicaScheduling Divided",
      { placement: { replicaScheduling: { replicaSchedulingType: "Divided" } } },
      "spec.placement.replicaScheduling.replicaSchedulingType",
    ],
    [
      "static weights",
      { placement: { replicaScheduling: { replicaSchedulingType: "Duplicated", weightPreference: { dynamicWeight: "AvailableReplicas" } } } },
      "spec.placement.replicaScheduling.weightPreference",
    ],
    ["clusterAffinities", { placement: { clusterAffinities: [{ affinityName: "a" }] } }, "spec.placement.clusterAffinities"],
    [
      "spreadByField zone",
      { placement: { spreadConstraints: [{ spreadByField: "cluster" }, { spreadByField: "zone" }] } },
      "spec.placement.spreadConstraints[1].spreadByField",
    ],
    ["spreadByLabel", { placement: { spreadConstraints: [{ spreadByLabel: "rack" }] } }, "spec.placement.spreadConstraints[0].spreadByLabel"],
    ["propagateDeps", { propagateDeps: true }, "spec.propagateDeps"],
    ["association", { association: true }, "spec.association"],
    ["failover", { failover: { application: { decisionConditions: { tolerationSeconds: 10 } } } }, "spec.failover"],
    ["conflictResolution Overwrite", { conflictResolution: "Overwrite" }, "spec.conflictResolution"],
    ["dependentOverrides", { dependentOverrides: ["o"] }, "spec.dependentOverrides"],
    ["activationPreference Lazy", { activationPreference: "Lazy" }, "spec.activationPreference"],
    ["suspension", { suspension: { dispatching: true } }, "spec.suspension"],
    ["schedulePriority", { schedulePriority: { priorityClassSource: "KubePriorityClass", priorityClassName: "p" } }, "spec.schedulePriority"],
    ["workloadAffinity", { placement: { workloadAffinity: { antiAffinity: { groupByLabelKey: "app" } } } }, "spec.placement.workloadAffinity"],
    ["another scheduler", { schedulerName: "other" }, "spec.schedulerName"],
    [
      "a fieldSelector key other than provider/region/zone",
      { placement: { clusterAffinity: { fieldSelector: { matchExpressions: [{ key: "os", operator: "In", values: ["linux"] }] } } } },
      "spec.placement.clusterAffinity.fieldSelector",
    ],
    [
      "a fieldSelector operator Exists",
      { placement: { clusterAffinity: { fieldSelector: { matchExpressions: [{ key: "region", operator: "Exists" }] } } } },
      "spec.placement.clusterAffinity.fieldSelector",
    ],
    [
      "a toleration operator Gt",
      { placement: { clusterTolerations: [{ key: "k", operator: "Gt", value: "1" }] } },
      "spec.placement.clusterTolerations[0].operator",
    ],
    ["maxGroups below minGroups", { placement: { spreadConstraints: [{ maxGroups: 1, minGroups: 3 }] } }, "spec.placement.spreadConstraints[0]"],
    [
      "preemption Always with an unnamed selector",
      { preemption: "Always", resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", ...(kind === "PropagationPolicy" ? { namespace: NS } : {}) }] },
      "spec.resourceSelectors[0].name",
    ],
  ];
  if (kind === "PropagationPolicy")
    karmadaCases.push([
      "a selector of another namespace",
      { resourceSelectors: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "elsewhere" }] },
      "spec.resourceSelectors[0].namespace",
    ]);
  for (const [label, spec, field] of karmadaCases) {
    const def = byKind(kind);
    add({
      name: `${kind}: karmada ${label}`,
      method: "POST",
      path: collection(def),
      body: () => {
        const v = valid(def, freshName());
        return { ...v, spec: { ...(v.spec as Json), resourceSelectors: sel, ...spec } };
      },
      status: 422,
      reason: "Invalid",
      field,
    });
  }
  add({
    name: `${kind}: karmada permanent-id label changed`,
    method: "PATCH",
    path: () => member(byKind(kind)),
    body: {
      metadata: {
        labels: { [kind === "PropagationPolicy" ? "propagationpolicy.karmada.io/permanent-id" : "clusterpropagationpolicy.karmada.io/permanent-id"]: "mine" },
      },
    },
    opts: { contentType: MERGE },
    status: 422,
    reason: "Invalid",
  });
}

// ---------------------------------------------------------------------------------------------
// The webhook endpoint
// ---------------------------------------------------------------------------------------------

let hookPath = "";
async function hmacHex(body: string, key = HOOK_KEY): Promise<string> {
  const k = await crypto.subtle.importKey("raw", new TextEncoder().encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = await crypto.subtle.sign("HMAC", k, new TextEncoder().encode(body));
  return [...new Uint8Array(sig)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
/** A delivery to the fixture receiver: `body` signed (or not), with a delivery ID (or not). */
const delivery =
  (body: string, o: { sign?: boolean | string; id?: string | null; contentType?: string } = {}) =>
  async (): Promise<CallOptions> => {
    const headers: Record<string, string> = {};
    if (o.sign !== false) headers["X-Signature-256"] = typeof o.sign === "string" ? o.sign : `sha256=${await hmacHex(body)}`;
    if (o.id !== null) headers["X-Delivery-Id"] = o.id ?? crypto.randomUUID();
    return { token: null, raw: body, headers, contentType: o.contentType ?? "application/json" };
  };
const hook = (name: string, opts: () => Promise<CallOptions>, status: number, reason: string, field?: string) =>
  add({ name: `webhook: ${name}`, method: "POST", path: () => hookPath, opts, status, reason, field });

for (const esc of BAD_ESCAPES)
  add({
    name: `webhook: a hook path with the malformed escape ${esc}`,
    method: "POST",
    path: `/hooks/${esc}`,
    body: {},
    opts: { token: null },
    status: 400,
    reason: "BadRequest",
  });
add({ name: "webhook: an unknown hook", method: "POST", path: `/hooks/${"0".repeat(64)}`, body: {}, opts: { token: null }, status: 404, reason: "NotFound" });
add({
  name: "webhook: a hook ID that is not hex",
  method: "POST",
  path: `/hooks/${"z".repeat(64)}`,
  body: {},
  opts: { token: null },
  status: 404,
  reason: "NotFound",
});
add({ name: "webhook: a short hook ID", method: "POST", path: "/hooks/abc", body: {}, opts: { token: null }, status: 404, reason: "NotFound" });
add({ name: "webhook: a path below a hook", method: "POST", path: () => `${hookPath}/x`, body: {}, opts: { token: null }, status: 404, reason: "NotFound" });
add({
  name: "webhook: a traversal in the hook path",
  method: "POST",
  path: "/hooks/..%2F..%2Fapis",
  body: {},
  opts: { token: null },
  status: 404,
  reason: "NotFound",
});
add({
  name: "webhook: a 9 KiB hook path",
  method: "POST",
  path: `/hooks/${"a".repeat(9 * 1024)}`,
  body: {},
  opts: { token: null },
  status: 414,
  reason: "RequestURITooLong",
});
for (const method of ["GET", "PUT", "DELETE", "PATCH"])
  add({ name: `webhook: ${method} on a hook`, method, path: () => hookPath, opts: { token: null }, status: 405, reason: "MethodNotAllowed" });
const payload = (v: unknown) => JSON.stringify({ count: v });
hook("no signature", delivery(payload(1), { sign: false }), 401, "Unauthorized");
hook("a wrong signature", delivery(payload(1), { sign: `sha256=${"0".repeat(64)}` }), 401, "Unauthorized");
hook("a signature without its sha256= prefix", delivery(payload(1), { sign: "0".repeat(64) }), 401, "Unauthorized");
hook(
  "a signature with the admin token's key",
  async () => ({
    ...(await delivery(payload(1))()),
    headers: { "X-Signature-256": `sha256=${await hmacHex(payload(1), "test-admin-token")}`, "X-Delivery-Id": "d1" },
  }),
  401,
  "Unauthorized",
);
hook("a signature over another body", async () => ({ ...(await delivery(payload(1))()), raw: payload(2) }), 401, "Unauthorized");
hook("no delivery ID", delivery(payload(1), { id: null }), 400, "BadRequest", "X-Delivery-Id");
hook("a delivery ID with spaces", delivery(payload(1), { id: "a b" }), 400, "BadRequest", "X-Delivery-Id");
hook("a 300-character delivery ID", delivery(payload(1), { id: "d".repeat(300) }), 400, "BadRequest", "X-Delivery-Id");
hook("a payload that is not JSON", delivery("{count"), 400, "BadRequest");
hook("a payload nested 10,000 levels", delivery(`{"count":${nest(10_000)}}`), 400, "BadRequest");
hook("a payload without the templated field", delivery("{}"), 422, "Invalid");
hook("a count that is a string", delivery(payload("many")), 422, "Invalid", "spec.numberOfClusters");
hook("a negative count", delivery(payload(-1)), 422, "Invalid", "spec.numberOfClusters");
hook("a count nested 99 levels", delivery(`{"count":${nest(99)}}`), 422, "Invalid", "spec.numberOfClusters");
hook("a form payload without its field", delivery("other=1", { contentType: "application/x-www-form-urlencoded" }), 400, "BadRequest");
hook("a replayed delivery ID", delivery(payload(2), { id: "replayed" }), 409, "Conflict");
hook("a 2 MiB payload", delivery(JSON.stringify({ count: 1, pad: "x".repeat(2 * 1024 * 1024) })), 413, "RequestEntityTooLarge");

// ---------------------------------------------------------------------------------------------
// The fixture and the run
// ---------------------------------------------------------------------------------------------

/** The fixture objects as stored (read in beforeAll), for update bodies; without resourceVersion. */
const currentObjects: Record<string, Json> = {};
function current(def: KindDefinition): Json {
  const obj = structuredClone(currentObjects[kindName(def)]!);
  delete obj.metadata.resourceVersion;
  return obj;
}

async function must(r: Promise<{ status: number; body: Json }>, ...ok: number[]): Promise<Json> {
  const res = await r;
  if (!ok.includes(res.status)) throw new Error(`fixture: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

beforeAll(async () => {
  await createNamespaces(NS);
  sampleKey = (await agentKeys()).publicJwk;
  bootstrap = await createToken({ autoApprove: true });
  const reg = await register(bootstrap, CLUSTER, `id-${CLUSTER}`);
  keys = reg.keys;
  await must(call("POST", `${AGENT}/heartbeat`, { healthy: true }, { token: await keys.sign(CLUSTER) }), 200);
  FIXTURE.BootstrapToken = bootstrap.split(".")[0]!;
  for (const kind of [
    "Namespace",
    "ServiceAccount",
    "ManagedClusterSet",
    "ManagedClusterSetBinding",
    "Secret",
    "Placement",
    "AddOnPlacementScore",
    "ManifestWork",
    "ManifestWorkReplicaSet",
    "WebhookReceiver",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ClusterManagementAddOn",
    "ManagedClusterAddOn",
    "AddOnDeploymentConfig",
    "AddOnTemplate",
    "Policy",
    "PlacementBinding",
    "PolicySet",
    "Event",
    "Event.events.k8s.io",
    ...BUILTIN_KINDS.map((k) => k.kind),
    "ClusterResourceEnvelope",
    "ResourceEnvelope",
    "ClusterResourcePlacement",
    "ResourcePlacement",
    "CustomResourceDefinition",
    "PropagationPolicy",
    "ClusterPropagationPolicy",
    "ClusterResourceOverride",
    "ResourceOverride",
    "OverridePolicy",
    "ClusterOverridePolicy",
    "ClusterStagedUpdateStrategy",
    "StagedUpdateStrategy",
    "ClusterStagedUpdateRun",
    "StagedUpdateRun",
    "ClusterApprovalRequest",
    "ApprovalRequest",
    "ClusterResourcePlacementEviction",
    "ClusterResourcePlacementDisruptionBudget",
  ]) {
    const def = byKind(kind);
    await must(call("POST", collection(def), valid(def, fixtureName(def))), 201);
  }
  // The runs' controller writes their status once (their placement does not exist): before the cases.
  for (const kind of ["ClusterStagedUpdateRun", "StagedUpdateRun"]) {
    const ns = byKind(kind).namespaced ? NS : "";
    await env.REPLICASETS.getByName(`updaterun:${ns}/${FIXTURE[kind]}`).reconcile(`updaterun:${ns}`, FIXTURE[kind]!);
    for (let i = 0; ; i++) {
      const r = await call("GET", member(byKind(kind)));
      if ((r.body?.status?.conditions ?? []).some((c: { type: string }) => c.type === "Initialized")) break;
      if (i > 200) throw new Error(`fixture: ${kind} never initialized`);
      await new Promise((res) => setTimeout(res, 25));
    }
  }
  // The eviction controller decides the fixture eviction once (its placement does not exist): before the cases.
  await env.REPLICASETS.getByName("eviction:/absent-for-hostile").reconcile("eviction:", "absent-for-hostile");
  for (let i = 0; ; i++) {
    const r = await call("GET", member(byKind("ClusterResourcePlacementEviction")));
    if ((r.body?.status?.conditions ?? []).some((c: { type: string }) => c.type === "Valid")) break;
    if (i > 200) throw new Error("fixture: the eviction was never decided");
    await new Promise((res) => setTimeout(res, 25));
  }
  await must(call("POST", CRS, { apiVersion: "hostile.example.com/v1", kind: "Khcrds", metadata: { name: "hcr" }, spec: { size: 1 } }), 201);
  const receiver = await must(call("GET", member(byKind("WebhookReceiver"))), 200);
  hookPath = receiver.status.webhookPath;
  // One accepted delivery, so that its ID is a replay afterwards.
  const first = await call("POST", hookPath, undefined, await delivery(payload(2), { id: "replayed" })());
  if (first.status !== 200) throw new Error(`fixture delivery: ${first.status} ${JSON.stringify(first.body)}`);
  for (const def of STORED) {
    if (!fixtureName(def)) continue;
    const r = await call("GET", member(def));
    if (r.status === 200) currentObjects[kindName(def)] = r.body;
  }
  // Every kind's fixture, the built-in kinds' too: more than vitest's default 10 s on a loaded machine.
}, 60_000);

describe("hostile input: every case is a 4xx Status and writes nothing", () => {
  it("has at least 300 cases, across every kind, the agent API and the webhook endpoint", () => {
    expect(cases.length).toBeGreaterThanOrEqual(300);
    for (const def of STORED) expect(cases.filter((c) => c.name.startsWith(`${kindName(def)}:`)).length, def.kind).toBeGreaterThanOrEqual(20);
    for (const def of KINDS.filter((d) => d.createOnly))
      expect(cases.filter((c) => c.name.startsWith(`${kindName(def)}:`)).length, def.kind).toBeGreaterThanOrEqual(15);
    expect(cases.filter((c) => c.agent).length).toBeGreaterThanOrEqual(30);
    expect(cases.filter((c) => c.name.startsWith("register:")).length).toBeGreaterThanOrEqual(10);
    expect(cases.filter((c) => c.name.startsWith("webhook:")).length).toBeGreaterThanOrEqual(20);
  });

  it("names every case once", () => {
    const names = cases.map((c) => c.name);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  cases.forEach((c, i) => {
    it(`${c.name} -> ${c.status} ${c.reason}`, async () => {
      const path = typeof c.path === "function" ? c.path() : c.path;
      const body = typeof c.body === "function" ? (c.body as () => unknown)() : c.body;
      const given = typeof c.opts === "function" ? await c.opts() : (c.opts ?? {});
      // Each case from its own (documentation) address: failed authentications are rate-limited per
      // address, an IPv6 one by its /64.
      const opts = { ...given, headers: { "cf-connecting-ip": `2001:db8:${i.toString(16)}::1`, ...given.headers } };
      const before = await snapshot();
      const clusterBefore = c.agent ? await call("GET", `/apis/cluster.open-cluster-management.io/v1/managedclusters/${CLUSTER}`) : undefined;
      const r = await call(c.method, path, body, opts);
      expect(r.status, JSON.stringify(r.body)?.slice(0, 500)).toBe(c.status);
      expect(r.headers.get("content-type")).toMatch(/^application\/json/);
      expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: c.status, reason: c.reason });
      expect(typeof r.body.message).toBe("string");
      if (c.field) {
        const fields = (r.body.details?.causes ?? []).map((x: { field?: string }) => x.field);
        expect(fields, JSON.stringify(r.body).slice(0, 500)).toContain(c.field);
      }
      expect(await snapshot()).toBe(before);
      if (clusterBefore) expect((await call("GET", `/apis/cluster.open-cluster-management.io/v1/managedclusters/${CLUSTER}`)).body).toEqual(clusterBefore.body);
    });
  });
});
