/**
 * The answers of the access and identity reviews (src/kinds/reviews.ts), as kube-apiserver's
 * registries compute them (facts from `pkg/registry/authorization/*` and
 * `pkg/registry/authentication/selfsubjectreview`, `pkg/apis/authorization/validation`):
 *
 * - SelfSubjectAccessReview: may the requester do what `spec.resourceAttributes` or
 *   `spec.nonResourceAttributes` (exactly one) describe? `status.allowed` and the authorizer's
 *   `reason` (what `kubectl auth can-i` prints);
 * - SubjectAccessReview: the same for `spec.user` / `spec.groups` (at least one; no group is
 *   added: "what if this user were in these groups only");
 * - SelfSubjectRulesReview: every rule the requester holds in `spec.namespace` (required: 400
 *   "no namespace on request" without; what `kubectl auth can-i --list` prints);
 * - SelfSubjectReview: the requester's user info (`kubectl auth whoami`).
 *
 * Each answers 201 with the review, its `status` filled in; nothing is stored. The request
 * itself was authorized first (`create` on the review resource: every authenticated user may
 * create the self reviews, by the bootstrap system:basic-user role).
 */
import type { z } from "zod";
import { badRequest, invalid, type StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { apiVersionOf } from "../k8s/kind.ts";
import { decide, rbacAuthorizer } from "../auth/rbac-store.ts";
import type { RequestAttributes, UserInfo } from "../auth/rbac-types.ts";
import {
  NonResourceAttributesSchema,
  ResourceAttributesSchema,
  SelfSubjectAccessReviewKind,
  SelfSubjectRulesReviewKind,
  SubjectAccessReviewKind,
} from "../kinds/reviews.ts";
import type { ApiContext } from "./context.ts";

type ResourceAttributes = z.infer<typeof ResourceAttributesSchema>;
type NonResourceAttributes = z.infer<typeof NonResourceAttributesSchema>;

interface AccessSpec {
  resourceAttributes?: ResourceAttributes | null;
  nonResourceAttributes?: NonResourceAttributes | null;
  user?: string;
  groups?: string[] | null;
  extra?: Record<string, string[]> | null;
  uid?: string;
}

function created(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 201, headers: { "content-type": "application/json" } });
}

/** Kubernetes' check that a review's metadata is empty (a review is not an object with a name). */
function metadataCauses(metadata: Record<string, unknown> | undefined): StatusCause[] {
  const set = Object.entries(metadata ?? {}).filter(([, v]) => v !== null && v !== undefined && !(typeof v === "string" && v === ""));
  return set.length > 0 ? [{ field: "metadata", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(metadata)}: must be empty` }] : [];
}

/** Kubernetes' ValidateSubjectAccessReviewSpec (and the self variant's): exactly one kind of attributes. */
function attributesCauses(spec: AccessSpec): StatusCause[] {
  if (spec.resourceAttributes && spec.nonResourceAttributes) {
    return [
      {
        field: "spec.nonResourceAttributes",
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(spec.nonResourceAttributes)}: cannot be specified in combination with resourceAttributes`,
      },
    ];
  }
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    return [
      {
        field: "spec.resourceAttributes",
        reason: "FieldValueInvalid",
        message: `Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified`,
      },
    ];
  }
  return [];
}

/** The authorizer attributes a review's spec describes (kube-apiserver's ResourceAttributesFrom / NonResourceAttributesFrom). */
function attributesOf(spec: AccessSpec): RequestAttributes {
  const r = spec.resourceAttributes;
  if (r) {
    return {
      verb: r.verb ?? "",
      apiGroup: r.group ?? "",
      apiVersion: r.version ?? "",
      resource: r.resource ?? "",
      subresource: r.subresource ?? "",
      name: r.name ?? "",
      namespace: r.namespace ?? "",
    };
  }
  const n = spec.nonResourceAttributes!;
  return { verb: n.verb ?? "", path: n.path ?? "" };
}

/** The `status` of an access review: allowed, and the authorizer's reason when not empty. */
async function accessStatus(c: ApiContext, user: UserInfo, attrs: RequestAttributes): Promise<Record<string, unknown>> {
  // RBAC puts its resolution errors in the reason, and returns no evaluation error.
  const d = await decide(c.env, user, attrs);
  return { allowed: d.allowed, ...(d.reason ? { reason: d.reason } : {}) };
}

function userInfoOf(user: UserInfo): Record<string, unknown> {
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups?.length ? { groups: [...user.groups] } : {}),
    ...(user.extra && Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
  };
}

/**
 * Answers a create of review kind `def` (see the module comment) for the request's user, with the
 * decoded and schema-checked `body`.
 * @throws ApiError 422 Invalid for a spec Kubernetes refuses; errors of D1
 */
export async function answerReview(c: ApiContext, def: KindDefinition, body: Record<string, unknown>): Promise<Response> {
  const user = c.var.user;
  const spec = (body.spec ?? {}) as AccessSpec & { namespace?: string };
  const head = { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { creationTimestamp: null } };
  const ref = { group: def.group, plural: def.plural, kind: def.kind, name: "" };
  const causes = metadataCauses(body.metadata as Record<string, unknown> | undefined);
  if (def === SelfSubjectAccessReviewKind || def === SubjectAccessReviewKind) {
    causes.push(...attributesCauses(spec));
    if (def === SubjectAccessReviewKind && !spec.user && !(spec.groups ?? []).length) {
      causes.push({ field: "spec.user", reason: "FieldValueInvalid", message: `Invalid value: "": at least one of user or group must be specified` });
    }
    if (causes.length > 0) throw invalid(ref, causes);
    const subject: UserInfo =
      def === SubjectAccessReviewKind
        ? { name: spec.user ?? "", uid: spec.uid, groups: spec.groups ?? [], ...(spec.extra ? { extra: spec.extra } : {}) }
        : user;
    return created({ ...head, spec, status: await accessStatus(c, subject, attributesOf(spec)) });
  }
  if (causes.length > 0) throw invalid(ref, causes);
  if (def === SelfSubjectRulesReviewKind) {
    // As kube-apiserver's registry: a namespace is required (RBAC's rules are per namespace).
    if (!spec.namespace) throw badRequest("no namespace on request");
    const review = (await rbacAuthorizer(c.env)).rulesReview(user, spec.namespace);
    const status = {
      resourceRules: review.resourceRules.map((r) => ({
        verbs: r.verbs,
        ...(r.apiGroups.length ? { apiGroups: r.apiGroups } : {}),
        ...(r.resources.length ? { resources: r.resources } : {}),
        ...(r.resourceNames.length ? { resourceNames: r.resourceNames } : {}),
      })),
      nonResourceRules: review.nonResourceRules,
      incomplete: review.incomplete,
      ...(review.evaluationError ? { evaluationError: review.evaluationError } : {}),
    };
    // kube-apiserver answers the status alone (the spec is not echoed).
    return created({ ...head, spec: {}, status });
  }
  // SelfSubjectReview.
  return created({ ...head, status: { userInfo: userInfoOf(user) } });
}
