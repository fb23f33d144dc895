/**
 * Namespace (core group, `v1`, cluster-scoped, short name `ns`), with Kubernetes' semantics
 * (`pkg/apis/core/types.go` Namespace, `pkg/registry/core/namespace/strategy.go`,
 * `pkg/registry/core/namespace/storage/storage.go`, `pkg/apis/core/validation` ValidateNamespace):
 *
 * - a create gets `status.phase: Active` and the `kubernetes` finalizer in `spec.finalizers`
 *   (added to any the client sent); the label `kubernetes.io/metadata.name` always equals the name;
 * - an update keeps `spec.finalizers` and `status` (they change through `/finalize` and `/status`);
 * - the first delete sets `deletionTimestamp` and `status.phase: Terminating` and keeps the object
 *   while `spec.finalizers` holds anything; the namespace controller (src/namespaces/controller.ts)
 *   deletes what the namespace holds, then removes `kubernetes` from `spec.finalizers`, and the
 *   namespace goes (kube-apiserver's `ShouldDeleteNamespaceDuringUpdate`); a delete while it
 *   terminates answers the namespace unchanged;
 * - `default`, `kube-system` and `kube-public` may not be deleted (NamespaceLifecycle's immortal
 *   namespaces: 403 `this namespace may not be deleted`).
 *
 * Creating a namespaced object needs its namespace to exist and not be terminating
 * (NamespaceLifecycle admission, src/namespaces/lifecycle.ts).
 */
import { z } from "zod";
import { ApiError, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition, WriteContext } from "../k8s/kind.ts";
import { ConditionsSchema, ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";
import { isQualifiedName } from "../k8s/validation.ts";

/** The finalizer of the namespace controller, which every namespace gets at create (`api.FinalizerKubernetes`). */
export const NAMESPACE_FINALIZER = "kubernetes";
/** The label kube-apiserver keeps equal to a namespace's name (`v1.LabelMetadataName`). */
export const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";
/** The namespace of objects created without one (`metav1.NamespaceDefault`). */
export const DEFAULT_NAMESPACE = "default";
/**
 * Namespaces that always exist, as kube-apiserver creates them at start (the bootstrap
 * controller's `default`, the system namespaces controller's `kube-system`, `kube-public` and
 * `kube-node-lease`).
 */
export const BUILTIN_NAMESPACES = [DEFAULT_NAMESPACE, "kube-system", "kube-public", "kube-node-lease"] as const;
/** Namespaces that may not be deleted (the NamespaceLifecycle admission plugin's immortal namespaces). */
export const IMMORTAL_NAMESPACES: readonly string[] = [DEFAULT_NAMESPACE, "kube-system", "kube-public"];
/**
 * The `WriteContext.extras` key of a write through the `finalize` subresource: only
 * `spec.finalizers` changes (kube-apiserver's FinalizeREST / `FinalizeStrategy`).
 */
export const FINALIZE_EXTRA = "namespaceFinalize";

/** The finalizer names Kubernetes knows without a domain (`standardFinalizers`). */
const STANDARD_FINALIZERS = new Set([NAMESPACE_FINALIZER, "orphan", "foregroundDeletion"]);

const NamespaceSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  spec: z
    .strictObject({ finalizers: z.array(z.string()).nullable().optional() })
    .nullable()
    .optional(),
  status: z
    .strictObject({
      phase: z.string().optional(),
      conditions: ConditionsSchema.nullable().optional(),
    })
    .nullable()
    .optional(),
});

/** A namespace's `spec.finalizers` (empty when absent). */
export function namespaceFinalizers(ns: KubeObject): string[] {
  return ((ns.spec as { finalizers?: string[] | null } | undefined)?.finalizers ?? []).slice();
}

/** A namespace's `status.phase` (`Active` when absent, as an old object's). */
export function namespacePhase(ns: KubeObject): string {
  return String((ns.status as { phase?: string } | undefined)?.phase ?? "Active");
}

/** Kubernetes' `validateFinalizerName` for an entry of `spec.finalizers`. */
function finalizerErrors(name: string, field: string): StatusCause[] {
  const errs = isQualifiedName(name);
  if (errs.length > 0) return errs.map((m) => ({ field, message: `Invalid value: ${JSON.stringify(name)}: ${m}` }));
  if (!name.includes("/") && !STANDARD_FINALIZERS.has(name)) {
    return [
      {
        field,
        message: `Invalid value: ${JSON.stringify(name)}: name is neither a standard finalizer name nor is it fully qualified`,
        reason: "FieldValueInvalid",
      },
    ];
  }
  return [];
}

/** The Namespace kind (stored in D1). */
export const NamespaceKind: KindDefinition = {
  group: "",
  version: "v1",
  kind: "Namespace",
  listKind: "NamespaceList",
  plural: "namespaces",
  singular: "namespace",
  shortNames: ["ns"],
  namespaced: false,
  hasStatus: true,
  schema: NamespaceSchema,
  storage: "d1",
  nameIsLabel: true,
  // kube-apiserver's FinalizeREST: a PUT that changes spec.finalizers alone.
  updateSubresources: [{ name: "finalize", extras: { [FINALIZE_EXTRA]: true } }],
  deleteCollectionRefusal: "DELETE is not allowed on the namespaces collection: delete each namespace",
  printerColumns: [
    { name: "Status", type: "string", jsonPath: ".status.phase" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    // kube-apiserver's Canonicalize: the name label, also for a name made from generateName.
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), [NAMESPACE_NAME_LABEL]: obj.metadata.name };
    if (obj.spec === null) delete obj.spec;
    const spec = obj.spec as { finalizers?: string[] | null } | undefined;
    if (spec && (spec.finalizers === null || spec.finalizers?.length === 0)) delete spec.finalizers;
  },
  prepareForCreate(obj) {
    const finalizers = namespaceFinalizers(obj);
    if (!finalizers.includes(NAMESPACE_FINALIZER)) finalizers.push(NAMESPACE_FINALIZER);
    obj.spec = { ...(obj.spec ?? {}), finalizers };
    obj.status = { phase: "Active" };
  },
  prepareForUpdate(obj, old, ctx: WriteContext) {
    if (ctx.extras?.[FINALIZE_EXTRA] === true) {
      // The finalize subresource: only spec.finalizers changes.
      const finalizers = namespaceFinalizers(obj);
      const next = structuredClone(old);
      next.spec = { ...(old.spec ?? {}) };
      if (finalizers.length > 0) next.spec.finalizers = finalizers;
      else delete next.spec.finalizers;
      for (const k of Object.keys(obj)) delete obj[k];
      Object.assign(obj, next);
      return;
    }
    const finalizers = namespaceFinalizers(old);
    obj.spec = { ...(obj.spec ?? {}) };
    if (finalizers.length > 0) obj.spec.finalizers = finalizers;
    else delete obj.spec.finalizers;
    if (old.status === undefined) delete obj.status;
    else obj.status = structuredClone(old.status);
  },
  validate(obj) {
    const causes: StatusCause[] = [];
    namespaceFinalizers(obj).forEach((f, i) => causes.push(...finalizerErrors(f, `spec.finalizers[${i}]`)));
    const phase = (obj.status as { phase?: string } | undefined)?.phase;
    if (phase !== undefined) {
      const want = obj.metadata.deletionTimestamp ? "Terminating" : "Active";
      if (phase !== want) {
        const why =
          want === "Active" ? "may only be 'Active' if `deletionTimestamp` is empty" : "may only be 'Terminating' if `deletionTimestamp` is not empty";
        causes.push({ field: "status.Phase", message: `Invalid value: ${JSON.stringify(phase)}: ${why}`, reason: "FieldValueInvalid" });
      }
    }
    return causes;
  },
  validateDelete(current) {
    if (IMMORTAL_NAMESPACES.includes(current.metadata.name)) {
      throw new ApiError(403, "Forbidden", `namespaces ${JSON.stringify(current.metadata.name)} is forbidden: this namespace may not be deleted`, {
        name: current.metadata.name,
        kind: "namespaces",
      });
    }
  },
  holdsDeletion: (obj) => namespaceFinalizers(obj).length > 0,
  prepareForDelete(obj) {
    obj.status = { ...(obj.status ?? {}), phase: "Terminating" };
  },
};
