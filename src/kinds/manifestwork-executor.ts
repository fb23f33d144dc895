/**
 * A ManifestWork's `spec.executor` (OCM `work.open-cluster-management.io/v1`
 * ManifestWorkExecutor): the identity the agent applies, reads and deletes the work's manifests
 * as on its cluster, a ServiceAccount there. Facts carried over from open-cluster-management-io/ocm
 * (not code): `pkg/work/webhook/v1/manifestwork_validating.go` (validateExecutor) and the API's
 * `work/v1/types.go` (ManifestWorkExecutorSubject).
 *
 * - Shape (the CRD's and the webhook's): `subject.type` is required and only `ServiceAccount`;
 *   with it `subject.serviceAccount` is required, whose `namespace` and `name` are required,
 *   at most 253 characters and DNS-1123 subdomains. A wrong shape is a 422 naming the field.
 * - Admission: creating a work with an executor, or changing a work's executor, needs the
 *   requesting user to be allowed, by the hub's RBAC, the verb `execute-as` on resource
 *   `manifestworks` of group `work.open-cluster-management.io` in the work's namespace, for the
 *   name `system:serviceaccount:<sa namespace>:<sa name>` (OCM's SubjectAccessReview, exactly).
 *   Flotilla also accepts the same grant on resource `serviceaccounts` of that group (the wording
 *   of its issue 30); either is a deliberate, named grant. An update that keeps the executor as it
 *   was is not checked (OCM's rule). A work without executor is not checked, unless the
 *   `NilExecutorValidating` feature gate is on (OCM's, off by default; `FLOTILLA_FEATURE_GATES`,
 *   src/features.ts): then it is checked as if it named the work agent's default identity, OCM's
 *   `{namespace: "", name: "klusterlet-work-sa"}`, i.e. `execute-as` for the name
 *   `system:serviceaccount::klusterlet-work-sa` (OCM's webhook, exactly). A ManifestWorkReplicaSet's
 *   `spec.manifestWorkTemplate.executor` is checked the same way in the replica set's namespace
 *   (OCM does not check it, which lets anyone who may write a replica set run as any
 *   ServiceAccount through the hub's controller; Flotilla closes that).
 * - The refusal is 403 Forbidden (OCM's webhook answers 400 BadRequest with the same words):
 *   `manifestworks.work.open-cluster-management.io "<work>" is forbidden: user "<user>" cannot
 *   manipulate the Manifestwork with executor <ns>/<name> in namespace <work namespace>`.
 *
 * The check runs as the work kinds' last write step (`KindDefinition.finalize`), on the object
 * about to be stored and the object as stored, inside the write: no race with a concurrent write
 * of the executor. It runs for API writes of users outside `system:masters`
 * (src/auth/rbac-store.ts `rbacWriteExtras` passes the author); the hub's own writers (the replica
 * set controller, the agent's status) are not users and are not checked.
 */
import { ApiError, type StatusCause } from "../k8s/errors.ts";
import type { WriteContext } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { fieldInvalid, fieldNotSupported, fieldRequired, fieldTooLong, isDNS1123Subdomain } from "../k8s/validation.ts";
import { RBAC_AUTHOR_EXTRA, type RbacAuthor } from "./rbac.ts";
import { serviceAccountUsername } from "../auth/rbac-types.ts";

/** OCM's work API group. */
export const WORK_GROUP = "work.open-cluster-management.io";
/** The verb OCM's webhook asks for (`execute-as`). */
export const EXECUTE_AS_VERB = "execute-as";
/** The only executor subject type OCM defines. */
export const EXECUTOR_TYPE_SERVICE_ACCOUNT = "ServiceAccount";

/**
 * The key of `WriteContext.extras` that says the `NilExecutorValidating` gate is on for a write
 * (src/auth/rbac-store.ts `rbacWriteExtras` sets it from the hub's settings).
 */
export const NIL_EXECUTOR_VALIDATING_EXTRA = "nilExecutorValidating";

/**
 * The identity a work without executor is checked as under `NilExecutorValidating`: OCM's webhook
 * names the work agent's default ServiceAccount with an empty namespace
 * (`system:serviceaccount::klusterlet-work-sa`).
 */
export const DEFAULT_EXECUTOR: ExecutorServiceAccount = { namespace: "", name: "klusterlet-work-sa" };

/** An executor's ServiceAccount on the member cluster. */
export interface ExecutorServiceAccount {
  namespace: string;
  name: string;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The ServiceAccount of a work spec's `executor` (a ManifestWork's `spec` or a replica set's
 * `spec.manifestWorkTemplate`), or null when there is none (or it is malformed; validation
 * refuses those).
 */
export function executorServiceAccount(spec: unknown): ExecutorServiceAccount | null {
  const executor = isObj(spec) ? spec.executor : undefined;
  const subject = isObj(executor) ? executor.subject : undefined;
  const sa = isObj(subject) ? subject.serviceAccount : undefined;
  if (!isObj(subject) || subject.type !== EXECUTOR_TYPE_SERVICE_ACCOUNT || !isObj(sa)) return null;
  if (typeof sa.namespace !== "string" || typeof sa.name !== "string") return null;
  return { namespace: sa.namespace, name: sa.name };
}

/**
 * Validates `<prefix>.executor` as OCM's CRD and webhook do (see the module comment).
 * @returns the causes, empty when valid or absent
 * @example validateExecutor({ executor: { subject: { type: "ServiceAccount" } } }, "spec")
 * // [{ field: "spec.executor.subject.serviceAccount", reason: "FieldValueRequired", ... }]
 */
export function validateExecutor(spec: unknown, prefix: string): StatusCause[] {
  const executor = isObj(spec) ? spec.executor : undefined;
  if (executor === undefined || executor === null) return [];
  const at = `${prefix}.executor`;
  const subject = isObj(executor) ? executor.subject : undefined;
  if (!isObj(subject)) return [fieldRequired(`${at}.subject`)];
  if (subject.type === undefined || subject.type === "") return [fieldRequired(`${at}.subject.type`)];
  if (subject.type !== EXECUTOR_TYPE_SERVICE_ACCOUNT) return [fieldNotSupported(`${at}.subject.type`, subject.type, [EXECUTOR_TYPE_SERVICE_ACCOUNT])];
  const sa = subject.serviceAccount;
  if (!isObj(sa)) return [fieldRequired(`${at}.subject.serviceAccount`, "executor service account can not be nil")];
  const out: StatusCause[] = [];
  for (const key of ["namespace", "name"] as const) {
    const field = `${at}.subject.serviceAccount.${key}`;
    const v = sa[key];
    if (typeof v !== "string" || v === "") out.push(fieldRequired(field));
    else if (v.length > 253) out.push(fieldTooLong(field, 253));
    else for (const problem of isDNS1123Subdomain(v)) out.push(fieldInvalid(field, v, problem));
  }
  return out;
}

function sameExecutor(a: ExecutorServiceAccount | null, b: ExecutorServiceAccount | null): boolean {
  return a === null ? b === null : b !== null && a.namespace === b.namespace && a.name === b.name;
}

/**
 * Whether `author` may have works run as `sa` in `namespace` (see the module comment: OCM's
 * SubjectAccessReview, or the same grant on `serviceaccounts`).
 */
export function mayExecuteAs(author: RbacAuthor, namespace: string, sa: ExecutorServiceAccount): boolean {
  const name = serviceAccountUsername(sa.namespace, sa.name);
  return ["manifestworks", "serviceaccounts"].some(
    (resource) => author.authorizer.authorize(author.user, { verb: EXECUTE_AS_VERB, apiGroup: WORK_GROUP, resource, namespace, name }).allowed,
  );
}

/**
 * The executor admission of a write of a ManifestWork (`template: false`) or a
 * ManifestWorkReplicaSet (`template: true`), from `old` (null: create) to `obj` (see the module
 * comment). Nothing is checked without an author in `ctx.extras` (hub writers, `system:masters`),
 * for a deletion, or when the executor is unchanged; an absent executor is checked as
 * {@link DEFAULT_EXECUTOR} when `ctx.extras` has {@link NIL_EXECUTOR_VALIDATING_EXTRA}, else not.
 * @throws ApiError 403 Forbidden worded as OCM's webhook
 */
export function admitExecutor(obj: KubeObject, old: KubeObject | null, ctx: WriteContext, template: boolean): Promise<void> {
  const author = ctx.extras?.[RBAC_AUTHOR_EXTRA] as RbacAuthor | undefined;
  if (!author || obj.metadata.deletionTimestamp) return Promise.resolve();
  const specOf = (o: KubeObject | null): unknown => (template ? (isObj(o?.spec) ? o.spec.manifestWorkTemplate : undefined) : o?.spec);
  const named = executorServiceAccount(specOf(obj));
  if (old && sameExecutor(executorServiceAccount(specOf(old)), named)) return Promise.resolve();
  const sa = named ?? (ctx.extras?.[NIL_EXECUTOR_VALIDATING_EXTRA] === true ? DEFAULT_EXECUTOR : null);
  if (sa === null) return Promise.resolve();
  const namespace = obj.metadata.namespace ?? "";
  if (mayExecuteAs(author, namespace, sa)) return Promise.resolve();
  const [plural, kind] = template ? ["manifestworkreplicasets", "ManifestWorkReplicaSet"] : ["manifestworks", "Manifestwork"];
  const name = obj.metadata.name;
  const why = `user ${JSON.stringify(author.user.name)} cannot manipulate the ${kind} with executor ${sa.namespace}/${sa.name} in namespace ${namespace}`;
  return Promise.reject(
    new ApiError(403, "Forbidden", `${plural}.${WORK_GROUP} ${JSON.stringify(name)} is forbidden: ${why}`, { group: WORK_GROUP, kind: plural, name }),
  );
}
