/**
 * BootstrapToken (`flotilla.dev/v1alpha1`, cluster-scoped): the secret an agent presents to
 * register. The token has kubeadm's format `[a-z0-9]{6}.[a-z0-9]{16}`; its first part is the
 * object's name. Only the create response carries it (`status.token`); the hub keeps a SHA-256
 * of the secret part. Deleting the object revokes the token (contract).
 *
 * The admin may choose the token (`spec.token`, write-only, as `kubeadm token create <token>`
 * takes one): a hub whose state was lost re-creates the token its agents were installed with, and
 * they register again with it (docs/agent-protocol.md "Recovery"). The hub keeps only its hash;
 * the stored and served spec never holds it.
 */
import { z } from "zod";
import { badRequest, invalid } from "../k8s/errors.ts";
import type { KindDefinition, WriteContext } from "../k8s/kind.ts";
import { ObjectMetaSchema, rfc3339, type KubeObject } from "../k8s/meta.ts";

const TOKEN_ID = /^[a-z0-9]{6}$/;
const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Default token lifetime in seconds (kubeadm's 24 h). `ttlSeconds: 0` means it never expires. */
export const DEFAULT_TOKEN_TTL_SECONDS = 86400;

const BootstrapTokenSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  spec: z
    .strictObject({
      ttlSeconds: z.number().int().min(0).max(31536000).optional(),
      autoApprove: z.boolean().optional(),
      description: z.string().max(1024).optional(),
      /** Write-only, on create only (`createSecret` takes it out: {@link takeChosenToken}); documented in src/api/openapi/descriptions.ts. */
      token: z.string().optional(),
    })
    .optional(),
  status: z.unknown().optional(),
});

/** Random `[a-z0-9]` string of `n` characters from the platform CSPRNG. */
export function randomToken(n: number): string {
  const bytes = new Uint8Array(n);
  crypto.getRandomValues(bytes);
  let s = "";
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return s;
}

/** Hex SHA-256 of a string. */
export async function sha256Hex(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Takes the admin's chosen token (`spec.token`) out of a BootstrapToken create body, in place: the
 * hub keeps only its hash. The object's name becomes the token's ID.
 *
 * @param body the create body as decoded (JSON or YAML).
 * @returns the chosen secret part, or `undefined` when the body chooses none.
 * @throws ApiError 422 `Invalid` when `spec.token` is not of kubeadm's form or names another ID
 *   than `metadata.name`.
 */
export function takeChosenToken(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const b = body as { metadata?: unknown; spec?: unknown };
  if (typeof b.spec !== "object" || b.spec === null || Array.isArray(b.spec) || !("token" in b.spec)) return undefined;
  const spec = b.spec as Record<string, unknown>;
  const ref = { group: "flotilla.dev", plural: "bootstraptokens", kind: "BootstrapToken" };
  const parsed = typeof spec.token === "string" ? parseToken(spec.token) : null;
  if (!parsed) throw invalid(ref, [{ field: "spec.token", message: "Invalid value: a bootstrap token must match [a-z0-9]{6}.[a-z0-9]{16}" }]);
  const meta = typeof b.metadata === "object" && b.metadata !== null && !Array.isArray(b.metadata) ? (b.metadata as Record<string, unknown>) : {};
  if (typeof meta.name === "string" && meta.name !== "" && meta.name !== parsed.id) {
    throw invalid({ ...ref, name: meta.name }, [{ field: "spec.token", message: `Invalid value: the token's ID must be the object's name (${meta.name})` }]);
  }
  b.metadata = { ...meta, name: parsed.id };
  delete spec.token;
  return parsed.secret;
}

/** Splits `<id>.<secret>`; null when the string is not in kubeadm's token format. */
export function parseToken(token: string): { id: string; secret: string } | null {
  const m = TOKEN.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

/**
 * The BootstrapToken kind (stored in D1). On create `createSecret` takes the admin's chosen
 * secret out of the body or mints one, and passes its hash in `ctx.extras` (`secretHash`); the
 * stored status keeps the hash and `expirationTimestamp` and is never served with the hash; the
 * create's answer alone shows the token (`status.token`, `<id>.<secret>`).
 */
export const BootstrapTokenKind: KindDefinition = {
  group: "flotilla.dev",
  version: "v1alpha1",
  kind: "BootstrapToken",
  listKind: "BootstrapTokenList",
  plural: "bootstraptokens",
  singular: "bootstraptoken",
  shortNames: ["bt"],
  namespaced: false,
  hasStatus: false,
  schema: BootstrapTokenSchema,
  storage: "d1",
  printerColumns: [
    { name: "Auto Approve", type: "boolean", jsonPath: ".spec.autoApprove" },
    { name: "Expires", type: "string", jsonPath: ".status.expirationTimestamp" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  async createSecret(body, dryRun) {
    if (dryRun) {
      takeChosenToken(body);
      return { extras: { secretHash: "" } };
    }
    // The admin's chosen token (spec.token, write-only) or a generated one; only its hash is kept.
    const secret = takeChosenToken(body) ?? randomToken(16);
    return {
      extras: { secretHash: await sha256Hex(secret) },
      reveal(created) {
        created.status = { ...(created.status ?? {}), token: `${created.metadata.name}.${secret}` };
      },
    };
  },
  defaults(obj) {
    obj.spec ??= {};
    obj.spec.ttlSeconds ??= DEFAULT_TOKEN_TTL_SECONDS;
    obj.spec.autoApprove ??= false;
  },
  validate(obj) {
    if (obj.spec?.token !== undefined) return [{ field: "spec.token", message: "Forbidden: spec.token is write-only and accepted on create only" }];
    const name = obj.metadata.name ?? "";
    return TOKEN_ID.test(name)
      ? []
      : [{ field: "metadata.name", message: `Invalid value: ${JSON.stringify(name)}: a bootstrap token ID must match [a-z0-9]{6}` }];
  },
  prepareForCreate(obj, ctx: WriteContext) {
    // createSecret took a chosen token out already; never store it.
    if (obj.spec) delete obj.spec.token;
    if (!obj.metadata.name) obj.metadata.name = randomToken(6);
    delete obj.metadata.generateName;
    const ttl = obj.spec?.ttlSeconds as number;
    const hash = ctx.extras?.secretHash;
    if (typeof hash !== "string") throw badRequest("bootstrap tokens can only be created through the API");
    obj.status = { secretHash: hash, ...(ttl > 0 ? { expirationTimestamp: rfc3339(ctx.now + ttl * 1000) } : {}) };
  },
  prepareForUpdate(obj, old) {
    obj.status = old.status;
    if (JSON.stringify(obj.spec) !== JSON.stringify(old.spec)) throw badRequest("spec of a BootstrapToken is immutable", "spec");
  },
  present(obj: KubeObject): KubeObject {
    if (!obj.status) return obj;
    const { secretHash: _h, ...rest } = obj.status;
    return { ...obj, status: rest };
  },
};
