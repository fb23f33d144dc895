/**
 * ManifestWork (`work.open-cluster-management.io/v1`, namespaced in the cluster's namespace) and
 * ManifestWorkReplicaSet (`work.open-cluster-management.io/v1alpha1`, namespaced), with OCM's
 * fields, defaults and hub-webhook validation (../shared/reference/ocm-semantics.md sections 3-4):
 * non-empty manifests, each a Kubernetes object with apiVersion, kind and metadata.name, at most
 * 500 KiB of manifests per work (`manifestLimit`), a `fieldManager` starting with "work-agent".
 *
 * A ManifestWork's status is written by its cluster's agent (through the agent API) or an admin
 * through `/status`; a ManifestWorkReplicaSet's status by the hub's replica set controller.
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { addFieldErrors, ConditionsSchema, isJsonObject, objectSchema, type KubeObject } from "../k8s/meta.ts";
import type { FieldError } from "../k8s/validation.ts";
import { onlyEmpty } from "../k8s/unimplemented.ts";
import { GO_DURATION } from "../k8s/duration.ts";
import { admitExecutor, validateExecutor } from "./manifestwork-executor.ts";
import { checkedBy, rememberChecked } from "../k8s/frozen-json.ts";
import { deepEqual } from "../k8s/fieldmanager.ts";

/** OCM's cap on the total size of a work's manifests, in bytes (500 KiB, `manifestLimit`). */
export const MANIFEST_LIMIT_BYTES = 500 * 1024;

/** OCM's labels of a generated ManifestWork (src/kinds/manifestwork-labels.ts; the agent copies them onto what it applies). */
export { MWRS_LABEL, PLACEMENT_NAME_LABEL } from "./manifestwork-labels.ts";

/**
 * A list the CRD declares `x-kubernetes-list-type: map` keyed by one string field: a second item
 * with the same key is refused as the apiserver refuses a duplicate list-map key (`[1]: Duplicate
 * value: map[string]interface {}{"name":"replicas"}`).
 */
function listMap<T extends z.ZodObject>(item: T, key: string) {
  return z
    .array(item)
    .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [key] })
    .superRefine((items, ctx) => {
      const seen = new Set<unknown>();
      const errors = items.flatMap((v, i) => {
        const k = (v as Record<string, unknown>)[key];
        const dup = seen.has(k);
        seen.add(k);
        const error: FieldError = {
          field: `[${i}]`,
          reason: "FieldValueDuplicate",
          message: `Duplicate value: map[string]interface {}{${JSON.stringify(key)}:${JSON.stringify(k)}}`,
        };
        return dup ? [error] : [];
      });
      addFieldErrors(ctx, items, errors);
    });
}

const ResourceIdentifierSchema = z.strictObject({
  group: z.string().optional(),
  resource: z.string().min(1),
  name: z.string().min(1),
  namespace: z.string().optional(),
});

const IntOrPercent = z.union([z.number().int().min(0), z.string().regex(/^(100|[1-9]?[0-9])%$/, "must be an integer or a percentage from 0% to 100%")]);
const Duration = z.string().refine((v) => v === "None" || GO_DURATION.test(v), "must be a duration such as 0, 30s, 1m30s, 1.5h or None");

/** `ManifestWork.spec` (v1), as the CRD validates it. */
export const ManifestWorkSpecSchema = z.strictObject({
  workload: z
    .strictObject({
      manifests: z.array(z.record(z.string(), z.unknown())).optional(),
    })
    .optional(),
  deleteOption: z
    .strictObject({
      propagationPolicy: z.enum(["Foreground", "Orphan", "SelectivelyOrphan"]).optional(),
      selectivelyOrphans: z
        .strictObject({
          orphaningRules: z.array(ResourceIdentifierSchema).optional(),
        })
        .optional(),
      ttlSecondsAfterFinished: z.number().int().min(0).optional(),
    })
    .optional(),
  manifestConfigs: z
    .array(
      z.strictObject({
        resourceIdentifier: ResourceIdentifierSchema,
        feedbackRules: z
          .array(
            z.strictObject({
              type: z.enum(["WellKnownStatus", "JSONPaths"]),
              jsonPaths: z.array(z.strictObject({ name: z.string().min(1), version: z.string().optional(), path: z.string().min(1) })).optional(),
            }),
          )
          .optional(),
        updateStrategy: z
          .strictObject({
            type: z.enum(["Update", "CreateOnly", "ServerSideApply", "ReadOnly"]).optional(),
            serverSideApply: z
              .strictObject({
                force: z.boolean().optional(),
                fieldManager: z
                  .string()
                  .regex(/^work-agent/, 'must start with "work-agent"')
                  .optional(),
                ignoreFields: z
                  .array(
                    z.strictObject({
                      condition: z.enum(["OnSpokePresent", "OnSpokeChange"]).optional(),
                      jsonPaths: z.array(z.string()).optional(),
                      jsonPointers: onlyEmpty(
                        z.array(z.string()),
                        "JSON Pointers in ignoreFields are not supported by this hub's work agent; use jsonPaths",
                      ).optional(),
                      jqPathExpressions: onlyEmpty(
                        z.array(z.string()),
                        "jq path expressions in ignoreFields are not supported by this hub's work agent; use jsonPaths",
                      ).optional(),
                    }),
                  )
                  .optional(),
              })
              .optional(),
          })
          .optional(),
        conditionRules: listMap(
          z.strictObject({
            condition: z.string().min(1),
            type: z.enum(["WellKnownConditions", "CEL"]),
            celExpressions: z.array(z.string()).optional(),
            message: z.string().optional(),
            messageExpression: z.string().optional(),
          }),
          "condition",
        ).optional(),
        feedbackScrapeType: z.enum(["Poll", "Watch"]).optional(),
      }),
    )
    .optional(),
  executor: z
    .strictObject({
      subject: z
        .strictObject({
          type: z.enum(["ServiceAccount"]),
          serviceAccount: z.strictObject({ namespace: z.string().min(1), name: z.string().min(1) }).optional(),
        })
        .optional(),
    })
    .optional(),
});

const FieldValueSchema = z.strictObject({
  type: z.enum(["Integer", "String", "Boolean", "JsonRaw"]),
  integer: z.number().int().optional(),
  string: z.string().optional(),
  boolean: z.boolean().optional(),
  jsonRaw: z.string().max(1024).optional(),
});

/** A manifest's `statusFeedback.values`: a map keyed by `name`, as OCM's CRD declares it. */
const FeedbackValuesSchema = listMap(z.strictObject({ name: z.string(), fieldValue: FieldValueSchema }), "name");

/** `ManifestWork.status` (v1). */
export const ManifestWorkStatusSchema = z.strictObject({
  conditions: ConditionsSchema.optional(),
  resourceStatus: z
    .strictObject({
      manifests: z
        .array(
          z.strictObject({
            resourceMeta: z
              .strictObject({
                ordinal: z.number().int(),
                group: z.string().optional(),
                version: z.string().optional(),
                kind: z.string().optional(),
                resource: z.string().optional(),
                name: z.string().optional(),
                namespace: z.string().optional(),
              })
              .optional(),
            statusFeedback: z.strictObject({ values: FeedbackValuesSchema.optional() }).optional(),
            conditions: ConditionsSchema.optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});

/**
 * Validates a work's spec as OCM's hub webhook does: manifests present and non-empty, each an
 * object with `apiVersion`, `kind` and `metadata.name`, and their JSON size at most
 * {@link MANIFEST_LIMIT_BYTES}. `prefix` is the field path of the spec ("spec" or
 * "spec.manifestWorkTemplate"). Returns the causes (empty when valid).
 */
export function validateWorkSpec(spec: Record<string, unknown> | undefined, prefix: string): StatusCause[] {
  const manifests = (spec?.workload as { manifests?: unknown[] } | undefined)?.manifests;
  if (!manifests || manifests.length === 0) {
    return [{ field: `${prefix}.workload.manifests`, message: "Required value: manifests should not be empty", reason: "FieldValueRequired" }];
  }
  const causes: StatusCause[] = [];
  manifests.forEach((m, i) => {
    const field = `${prefix}.workload.manifests[${i}]`;
    const obj = m as Record<string, unknown>;
    if (typeof obj.apiVersion !== "string" || !obj.apiVersion)
      causes.push({ field: `${field}.apiVersion`, message: "Required value: apiVersion must be set", reason: "FieldValueRequired" });
    if (typeof obj.kind !== "string" || !obj.kind)
      causes.push({ field: `${field}.kind`, message: "Required value: kind must be set", reason: "FieldValueRequired" });
    const meta = isJsonObject(obj.metadata) ? obj.metadata : {};
    if (typeof meta.name !== "string" || !meta.name)
      causes.push({ field: `${field}.metadata.name`, message: "Required value: name must be set", reason: "FieldValueRequired" });
  });
  const size = new TextEncoder().encode(JSON.stringify(manifests)).length;
  if (size > MANIFEST_LIMIT_BYTES) {
    causes.push({
      field: `${prefix}.workload`,
      message: `Too long: the size of manifests is ${size} bytes which exceeds the ${MANIFEST_LIMIT_BYTES} limit`,
      reason: "FieldValueTooLong",
    });
  }
  const rules = (spec?.deleteOption as { propagationPolicy?: string; selectivelyOrphans?: unknown } | undefined) ?? {};
  if (rules.selectivelyOrphans && rules.propagationPolicy !== "SelectivelyOrphan") {
    causes.push({
      field: `${prefix}.deleteOption.selectivelyOrphans`,
      message: "Forbidden: selectivelyOrphans may only be set with propagationPolicy SelectivelyOrphan",
      reason: "FieldValueForbidden",
    });
  }
  causes.push(...validateExecutor(spec, prefix));
  return causes;
}

/** The ManifestWork kind (stored in D1; delivered to its cluster's agent; status from the agent). */
export const ManifestWorkKind: KindDefinition = {
  group: "work.open-cluster-management.io",
  version: "v1",
  kind: "ManifestWork",
  listKind: "ManifestWorkList",
  plural: "manifestworks",
  singular: "manifestwork",
  shortNames: ["mw"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(ManifestWorkSpecSchema, ManifestWorkStatusSchema),
  storage: "d1",
  // A placement's works carry the same manifests in every cluster: stored once (src/store/d1/objects.ts).
  sharedSpec: true,
  printerColumns: [
    { name: "Applied", type: "string", jsonPath: '.status.conditions[?(@.type=="Applied")].status' },
    { name: "Available", type: "string", jsonPath: '.status.conditions[?(@.type=="Available")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    obj.spec ??= {};
  },
  validate(obj: KubeObject, old?: KubeObject): StatusCause[] {
    // The stored spec itself or a copy of it (a status or metadata write: the status subresource
    // copies the stored spec), or a frozen rendered spec that passed before
    // (src/k8s/frozen-json.ts): validated when it was first written. Comparing is cheaper than
    // validating again (an agent's status report, the most frequent write of a work).
    if ((old && (old.spec === obj.spec || deepEqual(old.spec, obj.spec))) || checkedBy(obj.spec, validateWorkSpec)) return [];
    const causes = validateWorkSpec(obj.spec, "spec");
    if (causes.length === 0) rememberChecked(obj.spec, validateWorkSpec);
    return causes;
  },
  // `spec.executor` admission: src/kinds/manifestwork-executor.ts.
  finalize: (obj, old, ctx) => admitExecutor(obj, old, ctx, false),
};

const RolloutConfig = {
  minSuccessTime: Duration.optional(),
  progressDeadline: Duration.optional(),
  maxFailures: IntOrPercent.optional(),
};
const MandatoryGroups = z.array(z.strictObject({ groupName: z.string().optional(), groupIndex: z.number().int().min(0).optional() })).optional();

/** `RolloutStrategy` (cluster.open-cluster-management.io/v1alpha1, shared by MWRS and add-ons). */
export const RolloutStrategySchema = z.strictObject({
  type: z.enum(["All", "Progressive", "ProgressivePerGroup"]).optional(),
  all: z.strictObject(RolloutConfig).optional(),
  progressive: z.strictObject({ ...RolloutConfig, mandatoryDecisionGroups: MandatoryGroups, maxConcurrency: IntOrPercent.optional() }).optional(),
  progressivePerGroup: z.strictObject({ ...RolloutConfig, mandatoryDecisionGroups: MandatoryGroups }).optional(),
});

const SummarySchema = z.strictObject({
  total: z.number().int().optional(),
  available: z.number().int().optional(),
  applied: z.number().int().optional(),
  progressing: z.number().int().optional(),
  degraded: z.number().int().optional(),
  desiredTotal: z.number().int().optional(),
  updated: z.number().int().optional(),
});

/** The ManifestWorkReplicaSet kind (stored in D1; status written by the hub's controller). */
export const ManifestWorkReplicaSetKind: KindDefinition = {
  group: "work.open-cluster-management.io",
  version: "v1alpha1",
  kind: "ManifestWorkReplicaSet",
  listKind: "ManifestWorkReplicaSetList",
  plural: "manifestworkreplicasets",
  singular: "manifestworkreplicaset",
  shortNames: ["mwrs"],
  namespaced: true,
  hasStatus: true,
  schema: objectSchema(
    z.strictObject({
      manifestWorkTemplate: ManifestWorkSpecSchema.optional(),
      placementRefs: z
        .array(
          z.strictObject({
            name: z.string().min(1),
            // OCM's rollback enhancement: `AbortAll` reverts every updated cluster when the rollout fails.
            rolloutStrategy: RolloutStrategySchema.extend({ failureStrategy: z.enum(["AbortAll"]).nullable().optional() }).optional(),
          }),
        )
        .optional(),
      cascadeDeletionPolicy: z.enum(["Background", "Foreground"]).optional(),
      // OCM's rollback enhancement: how many revisions besides the current and update ones are kept (default 10).
      revisionHistoryLimit: z.number().int().min(0).max(2147483647).nullable().optional(),
    }),
    z.strictObject({
      conditions: ConditionsSchema.optional(),
      // OCM's rollback enhancement (src/work/replicaset/revisions.ts).
      currentRevision: z.string().optional(),
      updateRevision: z.string().optional(),
      abortedTime: z.string().nullable().optional(),
      collisionCount: z.number().int().min(0).optional(),
      summary: SummarySchema.optional(),
      placementSummary: z
        .array(z.strictObject({ name: z.string(), availableDecisionGroups: z.string().optional(), summary: SummarySchema.optional() }))
        .optional(),
    }),
  ),
  storage: "d1",
  printerColumns: [
    { name: "Placement", type: "string", jsonPath: '.status.conditions[?(@.type=="PlacementVerified")].reason' },
    { name: "Found", type: "string", jsonPath: '.status.conditions[?(@.type=="PlacementVerified")].status' },
    { name: "ManifestWorks", type: "string", jsonPath: '.status.conditions[?(@.type=="ManifestworkApplied")].reason' },
    { name: "Applied", type: "string", jsonPath: '.status.conditions[?(@.type=="ManifestworkApplied")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    const spec = (obj.spec ??= {}) as { placementRefs?: { rolloutStrategy?: { type?: string } }[]; cascadeDeletionPolicy?: string };
    spec.cascadeDeletionPolicy ??= "Background";
    for (const ref of spec.placementRefs ?? []) {
      ref.rolloutStrategy ??= { type: "All" };
      ref.rolloutStrategy.type ??= "All";
    }
  },
  validate(obj: KubeObject): StatusCause[] {
    const spec = (obj.spec ?? {}) as { placementRefs?: { name: string }[]; manifestWorkTemplate?: Record<string, unknown> };
    const causes: StatusCause[] = [];
    if (!spec.placementRefs || spec.placementRefs.length === 0) {
      causes.push({ field: "spec.placementRefs", message: "Required value: at least one placementRef is required", reason: "FieldValueRequired" });
    }
    const seen = new Set<string>();
    spec.placementRefs?.forEach((r, i) => {
      if (seen.has(r.name))
        causes.push({ field: `spec.placementRefs[${i}].name`, message: `Duplicate value: ${JSON.stringify(r.name)}`, reason: "FieldValueDuplicate" });
      seen.add(r.name);
      // The generated works carry it as the placementname label value.
      if (r.name.length > 63)
        causes.push({
          field: `spec.placementRefs[${i}].name`,
          message: `Too long: may not be more than 63 bytes (it is a label value of the generated ManifestWorks)`,
          reason: "FieldValueTooLong",
        });
    });
    // The generated works carry `<namespace>.<name>` as the replica set label value and name.
    const key = `${obj.metadata.namespace ?? ""}.${obj.metadata.name}`;
    if (key.length > 63) {
      causes.push({
        field: "metadata.name",
        message: `Too long: "<namespace>.<name>" (${key.length} bytes) may not be more than 63 bytes: it names and labels the generated ManifestWorks`,
        reason: "FieldValueTooLong",
      });
    }
    causes.push(...validateWorkSpec(spec.manifestWorkTemplate, "spec.manifestWorkTemplate"));
    return causes;
  },
  // `spec.manifestWorkTemplate.executor` admission: src/kinds/manifestwork-executor.ts.
  finalize: (obj, old, ctx) => admitExecutor(obj, old, ctx, true),
};
