/**
 * ServiceAccount (core group, `v1`, namespaced, short name `sa`), with Kubernetes' semantics
 * (`pkg/apis/core/types.go` ServiceAccount, `pkg/registry/core/serviceaccount/strategy.go`,
 * `pkg/apis/core/validation` ValidateServiceAccount):
 *
 * - `secrets`: references to Secrets; on every create and update each entry is cut down to its
 *   `name` (the strategy's `cleanSecretReferences`);
 * - `imagePullSecrets` (names) and `automountServiceAccountToken` are kept as sent (the hub runs
 *   no pods: they are only stored);
 * - the name is a DNS-1123 subdomain (`ValidateServiceAccountName`), as every object's here.
 *
 * `kubectl get serviceaccounts` prints NAME, SECRETS (how many `secrets` entries) and AGE, as
 * kube-apiserver's printer does. A ServiceAccount is an identity: the TokenRequest subresource
 * (`POST .../serviceaccounts/{name}/token`, src/auth/serviceaccounts.ts) issues tokens bound to
 * its UID, which die with it.
 */
import { z } from "zod";
import type { KindDefinition } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";

/** core/v1 ObjectReference, as `secrets` entries may carry it (only `name` is kept). */
const ObjectReferenceSchema = z.strictObject({
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  uid: z.string().optional(),
  apiVersion: z.string().optional(),
  resourceVersion: z.string().optional(),
  fieldPath: z.string().optional(),
});

const ServiceAccountSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  secrets: z.array(ObjectReferenceSchema).nullable().optional(),
  imagePullSecrets: z
    .array(z.strictObject({ name: z.string().optional() }))
    .nullable()
    .optional(),
  automountServiceAccountToken: z.boolean().nullable().optional(),
});

/**
 * An `authentication.k8s.io/v1` TokenRequest, as OpenAPI describes the body and the answer of
 * `POST .../serviceaccounts/{name}/token` (the handler validates the body itself, as TokenREST).
 */
const TokenRequestSchema = z.strictObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: z
    .strictObject({
      audiences: z.array(z.string()).nullable().optional().describe("The intended audiences of the token; empty: the hub's API audience (its issuer)."),
      expirationSeconds: z
        .number()
        .int()
        .nullable()
        .optional()
        .describe("The requested lifetime of the token, in seconds: at least 600 (10 minutes), at most 2^32; default 3600."),
      boundObjectRef: z
        .strictObject({ kind: z.string().optional(), apiVersion: z.string().optional(), name: z.string().optional(), uid: z.string().optional() })
        .nullable()
        .optional()
        .describe("Not supported by the hub (422): tokens are bound to their ServiceAccount only."),
    })
    .describe("What the token is asked for."),
  status: z
    .strictObject({
      token: z.string().describe("The bearer token (a JWT signed by the hub)."),
      expirationTimestamp: z.string().describe("When the token expires (RFC 3339)."),
    })
    .optional()
    .describe("The issued token, set by the hub."),
});

/** The strategy's `cleanSecretReferences`: each `secrets` entry keeps its name only. */
function cleanSecretReferences(obj: KubeObject): void {
  const secrets = obj.secrets as { name?: string }[] | undefined;
  if (Array.isArray(secrets)) obj.secrets = secrets.map((s) => (s.name ? { name: s.name } : {}));
}

/** The ServiceAccount kind (stored in D1). */
export const ServiceAccountKind: KindDefinition = {
  group: "",
  version: "v1",
  kind: "ServiceAccount",
  listKind: "ServiceAccountList",
  plural: "serviceaccounts",
  singular: "serviceaccount",
  shortNames: ["sa"],
  namespaced: true,
  hasStatus: false,
  schema: ServiceAccountSchema,
  storage: "d1",
  printerColumns: [
    // kube-apiserver's printer: the number of `secrets` entries (declared a string column there too).
    { name: "Secrets", type: "string", jsonPath: ".secrets", value: (obj) => (Array.isArray(obj.secrets) ? obj.secrets.length : 0) },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    for (const k of ["secrets", "imagePullSecrets", "automountServiceAccountToken"]) if (obj[k] === null) delete obj[k];
  },
  prepareForCreate: cleanSecretReferences,
  prepareForUpdate: cleanSecretReferences,
  createSubresources: [
    {
      name: "token",
      group: "authentication.k8s.io",
      version: "v1",
      kind: "TokenRequest",
      schema: TokenRequestSchema,
      description: "create token of a ServiceAccount: a JWT signed by the hub, bound to the ServiceAccount's UID",
    },
  ],
};
