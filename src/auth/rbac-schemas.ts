/**
 * The RBAC objects' schemas (rbac.authorization.k8s.io/v1, as kube-apiserver's types): what a
 * client may send for a Role, ClusterRole, RoleBinding or ClusterRoleBinding (strict), for the
 * kinds' validation (src/kinds/rbac.ts). Apart from the evaluator (src/auth/rbac.ts), which takes
 * only their types, so that what imports the evaluator alone (the simulated member cluster) loads
 * no schema library.
 */
import { z } from "zod";
import { LabelSelectorSchema } from "../k8s/labels.ts";
import { ObjectMetaSchema } from "../k8s/meta.ts";

const stringList = z.array(z.string()).nullable().optional();

/**
 * `rbacv1.PolicyRule`: `verbs` (required; `*` is every verb), `apiGroups` (`""` is the core
 * group, `*` every group), `resources` (`plural`, `plural/subresource`, `*\/subresource`, `*`),
 * `resourceNames` (empty: any name), `nonResourceURLs` (a path, or a prefix ending in `*`; only in
 * ClusterRoles). Structural only; Kubernetes' semantic validation of a rule is the RBAC kinds'.
 */
export const PolicyRuleSchema = z.strictObject({
  verbs: z.array(z.string()),
  apiGroups: stringList,
  resources: stringList,
  resourceNames: stringList,
  nonResourceURLs: stringList,
});

/**
 * `rbacv1.Subject`: `kind` `User`, `Group` or `ServiceAccount`; `apiGroup`
 * `rbac.authorization.k8s.io` for users and groups, `""` for ServiceAccounts; `namespace` only for
 * ServiceAccounts (in a RoleBinding, absent means the binding's namespace).
 */
export const SubjectSchema = z.strictObject({
  kind: z.string(),
  apiGroup: z.string().optional(),
  name: z.string(),
  namespace: z.string().optional(),
});

/** `rbacv1.RoleRef`: `{apiGroup: "rbac.authorization.k8s.io", kind: "Role"|"ClusterRole", name}`. */
export const RoleRefSchema = z.strictObject({ apiGroup: z.string(), kind: z.string(), name: z.string() });

/** `rbacv1.AggregationRule`: ClusterRoles matched by any of `clusterRoleSelectors` are aggregated. */
export const AggregationRuleSchema = z.strictObject({ clusterRoleSelectors: z.array(LabelSelectorSchema).nullable().optional() });

/** The whole Role object as a client may send it (strict). */
export const RoleSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  rules: z.array(PolicyRuleSchema).nullable().optional(),
});

/** The whole ClusterRole object as a client may send it (strict). */
export const ClusterRoleSchema = RoleSchema.extend({ aggregationRule: AggregationRuleSchema.nullable().optional() });

/** The whole RoleBinding (or ClusterRoleBinding) object as a client may send it (strict). */
export const RoleBindingSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  subjects: z.array(SubjectSchema).nullable().optional(),
  roleRef: RoleRefSchema,
});
