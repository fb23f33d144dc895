/**
 * The access and identity reviews (answered, not stored; `createOnly`), as kube-apiserver serves
 * them: `authorization.k8s.io/v1` SelfSubjectAccessReview, SelfSubjectRulesReview and
 * SubjectAccessReview, and `authentication.k8s.io/v1` SelfSubjectReview. Their answers are
 * computed by src/api/reviews.ts; this module holds their names and schemas.
 */
import { z } from "zod";
import type { KindDefinition } from "../k8s/kind.ts";
import { ObjectMetaSchema } from "../k8s/meta.ts";

/** The authorization API group. */
export const AUTHORIZATION_GROUP = "authorization.k8s.io";
/** The authentication API group. */
export const AUTHENTICATION_GROUP = "authentication.k8s.io";

const optString = z.string().optional();

/**
 * `authorizationv1.ResourceAttributes`: namespace, verb, group, version, resource, subresource,
 * name (and the 1.31 field and label selector attributes, accepted and not evaluated: RBAC does
 * not read them).
 */
export const ResourceAttributesSchema = z.strictObject({
  namespace: optString,
  verb: optString,
  group: optString,
  version: optString,
  resource: optString,
  subresource: optString,
  name: optString,
  fieldSelector: z.looseObject({}).nullable().optional(),
  labelSelector: z.looseObject({}).nullable().optional(),
});

/** `authorizationv1.NonResourceAttributes`: the path and verb of a non-resource request. */
export const NonResourceAttributesSchema = z.strictObject({ path: optString, verb: optString });

const accessStatus = z.looseObject({}).nullable().optional();

/** A SelfSubjectAccessReview as a client sends it. */
export const SelfSubjectAccessReviewSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.strictObject({
    resourceAttributes: ResourceAttributesSchema.nullable().optional(),
    nonResourceAttributes: NonResourceAttributesSchema.nullable().optional(),
  }),
  status: accessStatus,
});

/** A SubjectAccessReview as a client sends it: a SelfSubjectAccessReview's, and whom it asks about. */
export const SubjectAccessReviewSchema = SelfSubjectAccessReviewSchema.extend({
  spec: SelfSubjectAccessReviewSchema.shape.spec.extend({
    user: optString,
    groups: z.array(z.string()).nullable().optional(),
    extra: z.record(z.string(), z.array(z.string())).nullable().optional(),
    uid: optString,
  }),
});

/** A SelfSubjectRulesReview as a client sends it. */
export const SelfSubjectRulesReviewSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.strictObject({ namespace: optString }),
  status: accessStatus,
});

/** A SelfSubjectReview as a client sends it (nothing but its type). */
export const SelfSubjectReviewSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema.optional(),
  status: z.looseObject({}).nullable().optional(),
});

function review(group: string, kind: string, schema: z.ZodType): KindDefinition {
  const plural = `${kind.toLowerCase()}s`;
  return {
    group,
    version: "v1",
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [],
    namespaced: false,
    hasStatus: false,
    schema,
    storage: "d1",
    createOnly: true,
  };
}

/** `authorization.k8s.io/v1` SelfSubjectAccessReview: may I do this? */
export const SelfSubjectAccessReviewKind = review(AUTHORIZATION_GROUP, "SelfSubjectAccessReview", SelfSubjectAccessReviewSchema);
/** `authorization.k8s.io/v1` SelfSubjectRulesReview: what may I do in this namespace? */
export const SelfSubjectRulesReviewKind = review(AUTHORIZATION_GROUP, "SelfSubjectRulesReview", SelfSubjectRulesReviewSchema);
/** `authorization.k8s.io/v1` SubjectAccessReview: may this user do this? */
export const SubjectAccessReviewKind = review(AUTHORIZATION_GROUP, "SubjectAccessReview", SubjectAccessReviewSchema);
/** `authentication.k8s.io/v1` SelfSubjectReview: who am I? */
export const SelfSubjectReviewKind = review(AUTHENTICATION_GROUP, "SelfSubjectReview", SelfSubjectReviewSchema);

/** The review kinds. */
export const REVIEW_KINDS: readonly KindDefinition[] = [
  SelfSubjectAccessReviewKind,
  SelfSubjectRulesReviewKind,
  SubjectAccessReviewKind,
  SelfSubjectReviewKind,
];
