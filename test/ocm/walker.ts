/**
 * Builds, for one field of an OCM schema (test/ocm/crd-fields.ts), an object that sets that
 * field to a valid value, as an OCM user's YAML would: the field's ancestors are filled with the
 * least that OCM requires of them (a manifestConfig names its resource, a spread constraint its
 * topology key, ...), list items get one element and map values the key `k`. Values are chosen
 * not to be OCM's default, so that a field the hub does not implement shows as refused. Pure.
 */
import type { CrdField } from "./compatibility.ts";

/** A JSON object. */
type Obj = Record<string, unknown>;

/** A ConfigMap manifest, the workload of every work the walker submits. */
export const MANIFEST = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" }, data: { k: "v" } };
/** The ConfigurationPolicy a sample Policy embeds in `policy-templates[].objectDefinition` (OCM's documentation example's). */
export const CONFIGURATION_POLICY = {
  apiVersion: "policy.open-cluster-management.io/v1",
  kind: "ConfigurationPolicy",
  metadata: { name: "policy-namespace-example" },
  spec: {
    remediationAction: "inform",
    severity: "low",
    "object-templates": [{ complianceType: "MustHave", objectDefinition: { kind: "Namespace", apiVersion: "v1", metadata: { name: "prod" } } }],
  },
};

/**
 * Values of leaves, by the end of their path (the longest match wins). A path with no entry gets
 * its first enum value that is not the default, or a value of its type.
 */
const LEAVES: [string, unknown][] = [
  // ManifestWork (and the replica set's template)
  ["resourceIdentifier.group", "apps"],
  ["resourceIdentifier.resource", "configmaps"],
  ["resourceIdentifier.name", "cm"],
  ["resourceIdentifier.namespace", "default"],
  ["orphaningRules[].group", "apps"],
  ["orphaningRules[].resource", "configmaps"],
  ["orphaningRules[].name", "cm"],
  ["orphaningRules[].namespace", "default"],
  ["feedbackRules[].type", "JSONPaths"],
  ["feedbackRules[].jsonPaths[].name", "data"],
  ["feedbackRules[].jsonPaths[].path", ".data"],
  ["feedbackRules[].jsonPaths[].version", "v1"],
  ["conditionRules[].type", "CEL"],
  ["conditionRules[].condition", "Complete"],
  ["conditionRules[].celExpressions[]", 'object.data.k == "v"'],
  ["conditionRules[].message", "the ConfigMap is complete"],
  ["conditionRules[].messageExpression", '"k is " + object.data.k'],
  ["serverSideApply.fieldManager", "work-agent-fidelity"],
  ["serverSideApply.force", true],
  ["ignoreFields[].jsonPaths[]", ".data.k"],
  ["ignoreFields[].jsonPointers[]", "/data/k"],
  ["ignoreFields[].jqPathExpressions[]", ".data.k"],
  ["serviceAccount.name", "deployer"],
  ["serviceAccount.namespace", "default"],
  ["ttlSecondsAfterFinished", 3600],
  // Status (as an agent reports it)
  ["lastTransitionTime", "2026-01-01T00:00:00Z"],
  ["conditions[].type", "Applied"],
  ["conditions[].reason", "AppliedManifestComplete"],
  ["resourceMeta.ordinal", 0],
  ["fieldValue.jsonRaw", '{"a":1}'],
  // ManagedCluster
  ["managedClusterClientConfigs[].url", "https://cluster.example:6443"],
  ["managedClusterClientConfigs[].caBundle", "Y2EtYnVuZGxl"],
  ["taints[].key", "example.com/maintenance"],
  ["taints[].timeAdded", "2026-01-01T00:00:00Z"],
  // ManifestWorkReplicaSet
  ["placementRefs[].name", "fidelity"],
  ["minSuccessTime", "5m"],
  ["progressDeadline", "10m"],
  ["maxFailures", "10%"],
  ["maxConcurrency", "50%"],
  ["mandatoryDecisionGroups[].groupName", "canary"],
  ["mandatoryDecisionGroups[].groupIndex", 0],
  // Placement
  ["clusterSets[]", "default"],
  ["numberOfClusters", 2],
  ["matchExpressions[].key", "env"],
  ["matchExpressions[].operator", "In"],
  ["matchExpressions[].values[]", "prod"],
  ["matchLabels{}", "prod"],
  ["celSelector.celExpressions[]", 'managedCluster.metadata.labels["env"] == "prod"'],
  ["prioritizerPolicy.mode", "Exact"],
  ["scoreCoordinate.type", "BuiltIn"],
  ["scoreCoordinate.builtIn", "Steady"],
  ["addOn.resourceName", "default"],
  ["addOn.scoreName", "cpuratio"],
  ["configurations[].weight", 3],
  ["tolerations[].key", "gpu"],
  ["tolerations[].operator", "Exists"],
  ["tolerations[].value", "true"],
  ["tolerations[].effect", "NoSelect"],
  ["tolerations[].tolerationSeconds", 300],
  ["decisionGroups[].groupName", "canary"],
  ["clustersPerDecisionGroup", "25%"],
  ["spreadConstraints[].topologyKey", "zone"],
  ["spreadConstraints[].topologyKeyType", "Label"],
  ["spreadConstraints[].maxSkew", 2],
  ["scoreRateLimit", "5m"],
];

/**
 * What an object or a list item holds at least, by the end of its path (the longest match wins):
 * OCM's required fields with a value that fits them. `target` is the field being set, for the
 * entries that depend on it (a rollout's type follows the config being set).
 */
const OBJECTS: [string, (target: string) => unknown][] = [
  ["manifestConfigs[]", () => ({ resourceIdentifier: { resource: "configmaps", name: "cm", namespace: "default" } })],
  ["feedbackRules[]", () => ({ type: "JSONPaths", jsonPaths: [{ name: "data", path: ".data" }] })],
  ["feedbackRules[].jsonPaths[]", () => ({ name: "data", path: ".data" })],
  ["conditionRules[]", () => ({ condition: "Complete", type: "CEL", celExpressions: ['object.data.k == "v"'] })],
  ["updateStrategy", () => ({ type: "ServerSideApply" })],
  ["ignoreFields[]", () => ({ condition: "OnSpokeChange" })],
  ["deleteOption", (t) => (t.includes("selectivelyOrphans") ? { propagationPolicy: "SelectivelyOrphan" } : {})],
  ["orphaningRules[]", () => ({ resource: "configmaps", name: "cm", namespace: "default" })],
  ["executor", () => ({ subject: { type: "ServiceAccount", serviceAccount: { namespace: "default", name: "deployer" } } })],
  ["executor.subject", () => ({ type: "ServiceAccount", serviceAccount: { namespace: "default", name: "deployer" } })],
  ["serviceAccount", () => ({ namespace: "default", name: "deployer" })],
  ["placementRefs[]", () => ({ name: "fidelity" })],
  ["rolloutStrategy", (t) => ({ type: t.includes(".progressivePerGroup") ? "ProgressivePerGroup" : t.includes(".progressive") ? "Progressive" : "All" })],
  ["mandatoryDecisionGroups[]", () => ({ groupName: "canary" })],
  ["matchExpressions[]", () => ({ key: "env", operator: "In", values: ["prod"] })],
  ["celSelector", () => ({ celExpressions: ['managedCluster.metadata.labels["env"] == "prod"'] })],
  ["configurations[]", () => ({ scoreCoordinate: { type: "BuiltIn", builtIn: "Steady" } })],
  [
    "scoreCoordinate",
    (t) =>
      t.endsWith(".addOn") || t.includes(".addOn.")
        ? { type: "AddOn", addOn: { resourceName: "default", scoreName: "cpuratio" } }
        : { type: "BuiltIn", builtIn: "Steady" },
  ],
  ["addOn", () => ({ resourceName: "default", scoreName: "cpuratio" })],
  ["tolerations[]", () => ({ key: "gpu", operator: "Exists", effect: "NoSelect" })],
  ["decisionGroups[]", () => ({ groupName: "canary", groupClusterSelector: { labelSelector: { matchLabels: { env: "canary" } } } })],
  ["spreadConstraints[]", () => ({ topologyKey: "zone", topologyKeyType: "Label" })],
  ["policy-templates[]", () => ({ objectDefinition: structuredClone(CONFIGURATION_POLICY) })],
  ["hubTemplateOptions", () => ({ serviceAccountName: "templates" })],
  [
    "fieldValue",
    (t) =>
      t.endsWith(".jsonRaw")
        ? { type: "JsonRaw" }
        : t.endsWith(".string")
          ? { type: "String" }
          : t.endsWith(".boolean")
            ? { type: "Boolean" }
            : { type: "Integer" },
  ],
];

function longestMatch<T>(table: [string, T][], path: string): T | undefined {
  let best: [string, T] | undefined;
  for (const entry of table) {
    const [suffix] = entry;
    if ((path === suffix || path.endsWith(`.${suffix}`)) && (!best || suffix.length > best[0].length)) best = entry;
  }
  return best?.[1];
}

/** A valid, non-default value for a leaf field. */
export function leafValue(field: CrdField): unknown {
  const known = longestMatch(LEAVES, field.path);
  if (known !== undefined) return known;
  if (field.enum) return field.enum.find((v) => JSON.stringify(v) !== JSON.stringify(field.default)) ?? field.enum[0];
  switch (field.type) {
    case "string":
      return "sample";
    case "integer":
      return 7;
    case "boolean":
      return field.default === true ? false : true;
    case "int-or-string":
      return 1;
    default:
      throw new Error(`${field.path}: no sample value for a ${field.type}`);
  }
}

/** A schema's fields by path. */
export type Fields = ReadonlyMap<string, CrdField>;

/**
 * The least an object or list at `path` holds when the walker creates it to reach `target`: an
 * entry of {@link OBJECTS}, else OCM's required fields of it, each with a valid value.
 */
function container(path: string, fields: Fields, target: string): unknown {
  const field = fields.get(path);
  if (field?.type === "array") {
    const item = fields.get(`${path}[]`) ?? { path: `${path}[]`, type: "string" };
    return [item.type === "object" ? container(item.path, fields, target) : leafValue(item)];
  }
  const make = longestMatch(OBJECTS, path);
  if (make) return structuredClone(make(target));
  const out: Obj = {};
  for (const child of fields.values()) {
    if (!child.required || !child.path.startsWith(`${path}.`) || child.path.slice(path.length + 1).search(/[.[{]/) >= 0) continue;
    out[child.path.slice(path.length + 1)] = child.type === "object" || child.type === "array" ? container(child.path, fields, target) : leafValue(child);
  }
  return out;
}

/** A path's steps: `a.b[].c{}` gives `a`, `b`, `[]`, `c`, `{}`. */
function steps(path: string): string[] {
  return path.split(/(\[\]|\{\})|\./).filter((s): s is string => !!s);
}

/** The path with list items as `[0]` and map values as `[k]`, as the hub's field errors name it. */
export function concretePath(path: string): string {
  return path.replaceAll("[]", "[0]").replaceAll("{}", "[k]");
}

/**
 * Sets `field` in `base` (changed in place). The ancestors the walker creates are filled by
 * {@link container}; a leaf gets {@link leafValue}, an object or a list {@link container}'s
 * value, or keeps what `base` already holds there (a work's manifests). Returns the value set.
 */
export function setField(base: Obj, field: CrdField, fields: Fields): unknown {
  const parts = steps(field.path);
  const leaf = field.type !== "object" && field.type !== "array";
  const make = (at: string) => container(at, fields, field.path);
  let node: unknown = base;
  let at = "";
  for (let i = 0; i < parts.length; i++) {
    const step = parts[i]!;
    at = step === "[]" || step === "{}" ? `${at}${step}` : at ? `${at}.${step}` : step;
    const last = i === parts.length - 1;
    const holder = node as Obj & unknown[];
    const key = step === "[]" ? 0 : step === "{}" ? "k" : step;
    if (last && leaf) holder[key as never] = leafValue(field) as never;
    else holder[key as never] ??= make(at) as never;
    node = holder[key as never];
  }
  return node;
}

/** The value at a field path in an object (`[]` the first item, `{}` the value of key `k`). */
export function getField(obj: unknown, path: string): unknown {
  let node = obj;
  for (const step of steps(path)) {
    if (node === null || typeof node !== "object") return undefined;
    node = step === "[]" ? (node as unknown[])[0] : step === "{}" ? (node as Obj).k : (node as Obj)[step];
  }
  return node;
}
