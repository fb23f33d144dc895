/**
 * The shapes of OCM's ManifestWork (`work.open-cluster-management.io/v1`, `api:work/v1/types.go`)
 * that the work agent reads (spec) and writes (status), as plain JSON types. Only what the agent
 * interprets is typed; everything else passes through untouched.
 */

/** A JSON object (a decoded Kubernetes object or a part of one). */
export type Obj = Record<string, unknown>;

/** Whether `v` is a plain JSON object (not an array, not null). */
export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep copy of JSON data (no Dates, functions or cycles expected). */
export function cloneJson<T>(v: T): T {
  return structuredClone(v);
}

/** A `metav1.Condition`: `lastTransitionTime` is RFC 3339 with second precision. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** A condition before its `lastTransitionTime` is decided (conditions.ts `mergeConditions`). */
export type NewCondition = Omit<Condition, "lastTransitionTime">;

/** `spec.deleteOption.selectivelyOrphans.orphaningRules[]`: a resource kept when its work lets go. */
export interface OrphaningRule {
  /** API group ("" for the core group). */
  group?: string;
  /** Resource plural, e.g. `configmaps`. */
  resource: string;
  /** Object name. */
  name: string;
  /** Namespace ("" or absent for cluster-scoped objects). */
  namespace?: string;
}

/** `spec.deleteOption`: what happens to applied resources when a work (or a manifest) goes. */
export interface DeleteOption {
  /** `Foreground` (default: delete), `Orphan` (keep all) or `SelectivelyOrphan` (keep the listed ones). */
  propagationPolicy?: "Foreground" | "Orphan" | "SelectivelyOrphan";
  selectivelyOrphans?: { orphaningRules?: OrphaningRule[] };
  /** Hub-side only (GC of completed works), in seconds; ignored by the agent. */
  ttlSecondsAfterFinished?: number;
}

/** `manifestConfigs[].resourceIdentifier`: which manifest a config applies to. */
export interface ResourceIdentifier {
  group?: string;
  resource: string;
  name: string;
  namespace?: string;
}

/** One JSONPaths feedback rule: `path` is Kubernetes JSONPath; `version` limits it to one resource version. */
export interface JsonPathRule {
  name: string;
  path: string;
  version?: string;
}

/** `manifestConfigs[].feedbackRules[]`. */
export interface FeedbackRule {
  type: "WellKnownStatus" | "JSONPaths";
  jsonPaths?: JsonPathRule[];
}

/** `updateStrategy.serverSideApply.ignoreFields[]`. */
export interface IgnoreField {
  /** `OnSpokePresent` (default): never revert spoke changes; `OnSpokeChange`: revert only when the hub changes the field. */
  condition?: "OnSpokePresent" | "OnSpokeChange";
  /** Kubernetes JSONPaths of the ignored fields, e.g. `.spec.replicas`. */
  jsonPaths?: string[];
}

/** `manifestConfigs[].updateStrategy`. */
export interface UpdateStrategy {
  type?: "Update" | "CreateOnly" | "ServerSideApply" | "ReadOnly";
  serverSideApply?: { force?: boolean; fieldManager?: string; ignoreFields?: IgnoreField[] };
}

/**
 * `manifestConfigs[].conditionRules[]` (OCM `ConditionRule`): `WellKnownConditions` names a
 * condition OCM knows for the kind (`Complete` for Jobs and Pods); `CEL` gives `celExpressions`
 * (ANDed, over `object`) and a `message` or `messageExpression` (over `object` and `result`).
 */
export interface ConditionRule {
  condition: string;
  type: "WellKnownConditions" | "CEL";
  celExpressions?: string[];
  message?: string;
  messageExpression?: string;
}

/** `spec.manifestConfigs[]`. */
export interface ManifestConfig {
  resourceIdentifier: ResourceIdentifier;
  feedbackRules?: FeedbackRule[];
  updateStrategy?: UpdateStrategy;
  conditionRules?: ConditionRule[];
  /** `Watch`: report the manifest's status when the resource changes, not only every status sync (default `Poll`). */
  feedbackScrapeType?: "Poll" | "Watch";
}

/** `spec` of a ManifestWork. */
export interface ManifestWorkSpec {
  workload?: { manifests?: unknown[] };
  deleteOption?: DeleteOption;
  manifestConfigs?: ManifestConfig[];
  /** The identity the work's manifests are applied, read and deleted as (OCM ManifestWorkExecutor). */
  executor?: { subject?: { type?: string; serviceAccount?: { namespace?: string; name?: string } } };
}

/**
 * The user a work's manifests are applied, read and deleted as: `{ user: undefined }` (the
 * agent's own identity) without executor, `{ user }` its executor's ServiceAccount
 * (`system:serviceaccount:NS:NAME`, Kubernetes' ServiceAccount user name), or `{ error }` for
 * an executor the agent cannot act as (a subject the hub's validation refuses): such a work is
 * never applied with the agent's own, broader rights.
 */
export function executorUser(spec: ManifestWorkSpec | undefined): { user: string | undefined } | { error: string } {
  const executor = spec?.executor;
  if (executor === undefined || executor === null) return { user: undefined };
  const subject = executor.subject;
  const sa = subject?.serviceAccount;
  if (subject?.type !== "ServiceAccount") return { error: `unsupported executor subject type ${JSON.stringify(subject?.type ?? "")}: only ServiceAccount` };
  if (!sa?.namespace || !sa.name) return { error: "the executor service account needs a namespace and a name" };
  return { user: `system:serviceaccount:${sa.namespace}:${sa.name}` };
}

/** A ManifestWork as the hub delivers it in the works list (docs/agent-protocol.md "Works"). */
export interface ManifestWork {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    /** Set when the work is being deleted on the hub: the agent removes what it applied, then confirms. */
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  spec: ManifestWorkSpec;
}

/** `statusFeedback.values[].fieldValue`: exactly one of the typed members is set. */
export type FieldValue =
  { type: "Integer"; integer: number } | { type: "String"; string: string } | { type: "Boolean"; boolean: boolean } | { type: "JsonRaw"; jsonRaw: string };

/** `statusFeedback.values[]`. */
export interface FeedbackValue {
  name: string;
  fieldValue: FieldValue;
}

/** `resourceStatus.manifests[].resourceMeta`. `ordinal` is the manifest's index in `spec.workload.manifests`. */
export interface ResourceMeta {
  ordinal: number;
  group: string;
  version: string;
  kind: string;
  resource: string;
  name: string;
  namespace: string;
}

/** `resourceStatus.manifests[]`. */
export interface ManifestCondition {
  resourceMeta: ResourceMeta;
  statusFeedback: { values: FeedbackValue[] };
  conditions: Condition[];
}

/** `status` of a ManifestWork as the agent reports it (`PUT .../works/{work}/status`). */
export interface ManifestWorkStatus {
  conditions: Condition[];
  resourceStatus: { manifests: ManifestCondition[] };
}

/** An applied resource as the AppliedManifestWork's `status.appliedResources[]` records it. */
export interface AppliedResource {
  group: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
}

/** Whether two applied resources are the same object (group/resource/namespace/name and uid; version ignored, as OCM). */
export function sameResource(a: AppliedResource, b: AppliedResource): boolean {
  return a.group === b.group && a.resource === b.resource && a.namespace === b.namespace && a.name === b.name && a.uid === b.uid;
}

/** Whether two applied resources name the same object, whatever its uid. */
export function sameName(a: Omit<AppliedResource, "uid" | "version">, b: Omit<AppliedResource, "uid" | "version">): boolean {
  return a.group === b.group && a.resource === b.resource && a.namespace === b.namespace && a.name === b.name;
}

/** `group/resource namespace/name`, for messages and logs. */
export function describeResource(r: { group: string; resource: string; namespace: string; name: string }): string {
  return `${r.group ? `${r.resource}.${r.group}` : r.resource} ${r.namespace ? `${r.namespace}/` : ""}${r.name}`;
}
