/** The names an OpenAPI document of the hub uses: JSON Schema nodes, schema names and references, group-version paths. */

/** A JSON Schema / OpenAPI node, as plain JSON. */
export type JsonSchema = { [key: string]: unknown };

/** The `x-kubernetes-group-version-kind` entry of a schema or an operation. */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";
/** Names of the shared apimachinery schemas every group-version document carries. */
export const META_SCHEMAS = {
  ObjectMeta: `${META}.ObjectMeta`,
  ListMeta: `${META}.ListMeta`,
  OwnerReference: `${META}.OwnerReference`,
  ManagedFieldsEntry: `${META}.ManagedFieldsEntry`,
  Status: `${META}.Status`,
  StatusDetails: `${META}.StatusDetails`,
  StatusCause: `${META}.StatusCause`,
  DeleteOptions: `${META}.DeleteOptions`,
  Preconditions: `${META}.Preconditions`,
  Patch: `${META}.Patch`,
} as const;

/** Whether `v` is a JSON object (not null, not an array). */
export function isObj(v: unknown): v is JsonSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `#/components/schemas/<name>` wrapped as Kubernetes does when a description goes with it. */
export function refTo(name: string, description?: string): JsonSchema {
  const ref = { $ref: `#/components/schemas/${name}` };
  return description ? { allOf: [ref], description } : ref;
}

/** The schema name of a kind, Kubernetes-style: reversed group, version, kind (`io.open-cluster-management.cluster.v1.ManagedCluster`). */
export function schemaName(group: string, version: string, kind: string): string {
  const g = group ? group.split(".").reverse().join(".") : "io.k8s.api.core";
  return `${g}.${version}.${kind}`;
}

/**
 * The URL path of a group-version, without the leading slash: `apis/<group>/<version>`, or
 * `api/<version>` for the core group ("", e.g. Secrets), as the apiserver serves them.
 */
export function groupVersionPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}
