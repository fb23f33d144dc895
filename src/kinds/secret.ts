/**
 * Secret (core group, `v1`, namespaced), with Kubernetes' semantics (`pkg/apis/core/types.go`
 * Secret, `pkg/apis/core/validation` ValidateSecret / ValidateSecretUpdate, the v1 conversion
 * that folds `stringData` into `data`):
 *
 * - `data`: map of config keys (`[-._a-zA-Z0-9]+`, at most 253 characters, not `.`/`..`, not
 *   starting with `..`) to base64 (standard alphabet, padded) values; a bad key or value is 422.
 *   The decoded values may total at most 1 MiB (`MaxSecretSize`).
 * - `stringData`: write-only plain strings, merged into `data` (UTF-8, base64-encoded) on every
 *   write, overriding `data` keys of the same name; never stored or served.
 * - `type`: default `Opaque`; immutable after create. The well-known types check their required
 *   keys (`kubernetes.io/tls`: `tls.crt` and `tls.key`, ...).
 * - `immutable: true`: from then on `data` cannot change and `immutable` cannot be unset.
 *
 * Stored in D1 with `data` encrypted (AES-GCM, kube-apiserver's `aesgcm` provider, keys from the
 * Worker secret `FLOTILLA_ENCRYPTION_KEYS`: src/k8s/encryption.ts, docs/encryption.md); metadata
 * stays plain, so selectors work. The hub reads Secrets for WebhookReceivers (`data.token`).
 */
import { z } from "zod";
import type { StatusCause } from "../k8s/errors.ts";
import type { KindDefinition } from "../k8s/kind.ts";
import { ObjectMetaSchema, type KubeObject } from "../k8s/meta.ts";

/** Kubernetes' limit on the total size of a Secret's decoded data, in bytes (`MaxSecretSize`, 1 MiB). */
export const MAX_SECRET_BYTES = 1024 * 1024;

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const IMMUTABLE_SET = "Forbidden: field is immutable when `immutable` is set";

/** Required data keys of the well-known Secret types (any one of a list of alternatives). */
const REQUIRED_KEYS: Record<string, string[][]> = {
  "kubernetes.io/dockercfg": [[".dockercfg"]],
  "kubernetes.io/dockerconfigjson": [[".dockerconfigjson"]],
  "kubernetes.io/basic-auth": [["username", "password"]],
  "kubernetes.io/ssh-auth": [["ssh-privatekey"]],
  "kubernetes.io/tls": [["tls.crt"], ["tls.key"]],
};

const SecretSchema = z.strictObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMetaSchema,
  data: z.record(z.string(), z.string()).nullable().optional(),
  stringData: z.record(z.string(), z.string()).nullable().optional(),
  type: z.string().max(253).optional(),
  immutable: z.boolean().nullable().optional(),
});

/** Base64 (standard alphabet, padded) of a string's UTF-8 bytes, as the v1 conversion encodes `stringData`. */
export function encodeBase64(s: string): string {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * Decodes a base64 value of `data` (standard alphabet, padded, as Kubernetes' JSON decoding of
 * `[]byte` requires) to bytes; null when the value is not valid base64.
 */
export function decodeBase64(s: string): Uint8Array | null {
  if (!BASE64.test(s)) return null;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Kubernetes' `IsConfigMapKey`: the problems with a data key, empty when valid. */
export function configKeyErrors(key: string): string[] {
  const errs: string[] = [];
  if (key.length > 253) errs.push("must be no more than 253 characters");
  if (!CONFIG_KEY.test(key)) {
    errs.push(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  }
  if (key === ".") errs.push("must not be '.'");
  else if (key === "..") errs.push("must not be '..'");
  else if (key.startsWith("..")) errs.push("must not start with '..'");
  return errs;
}

function dataOf(obj: KubeObject): Record<string, string> {
  return (obj.data as Record<string, string> | null | undefined) ?? {};
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** The Secret kind (stored in D1). */
export const SecretKind: KindDefinition = {
  group: "",
  version: "v1",
  kind: "Secret",
  listKind: "SecretList",
  plural: "secrets",
  singular: "secret",
  shortNames: [],
  namespaced: true,
  hasStatus: false,
  schema: SecretSchema,
  storage: "d1",
  encryptedFields: ["data"],
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".type" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  defaults(obj) {
    if (!obj.type) obj.type = "Opaque";
    const stringData = obj.stringData as Record<string, string> | null | undefined;
    delete obj.stringData;
    if (stringData && Object.keys(stringData).length > 0) {
      const data = { ...dataOf(obj) };
      for (const [k, v] of Object.entries(stringData)) data[k] = encodeBase64(v);
      obj.data = data;
    }
    if (obj.data === null || (obj.data && Object.keys(obj.data).length === 0)) delete obj.data;
    if (obj.immutable === null) delete obj.immutable;
  },
  validate(obj, old) {
    const causes: StatusCause[] = [];
    const data = dataOf(obj);
    let total = 0;
    for (const [k, v] of Object.entries(data)) {
      for (const m of configKeyErrors(k)) causes.push({ field: `data[${k}]`, message: `Invalid value: ${JSON.stringify(k)}: ${m}` });
      const bytes = decodeBase64(v);
      if (!bytes)
        causes.push({ field: `data[${k}]`, message: 'Invalid value: "<secret contents redacted>": illegal base64 data: must be standard base64 with padding' });
      else total += bytes.length;
    }
    if (total > MAX_SECRET_BYTES) causes.push({ field: "data", message: `Too long: must have at most ${MAX_SECRET_BYTES} bytes`, reason: "FieldValueTooLong" });
    const type = String(obj.type ?? "Opaque");
    for (const alternatives of REQUIRED_KEYS[type] ?? []) {
      if (!alternatives.some((k) => k in data))
        causes.push({
          field: `data[${alternatives[0]}]`,
          message: `Required value: ${alternatives.join(" or ")} is required for a Secret of type ${type}`,
          reason: "FieldValueRequired",
        });
    }
    if (type === "kubernetes.io/service-account-token" && !obj.metadata.annotations?.["kubernetes.io/service-account.name"]) {
      causes.push({ field: "metadata.annotations[kubernetes.io/service-account.name]", message: "Required value", reason: "FieldValueRequired" });
    }
    if (old) {
      if (type !== String(old.type ?? "Opaque")) causes.push({ field: "type", message: `Invalid value: ${JSON.stringify(type)}: field is immutable` });
      if (old.immutable === true) {
        if (obj.immutable !== true) causes.push({ field: "immutable", message: IMMUTABLE_SET, reason: "FieldValueForbidden" });
        if (!sameData(data, dataOf(old))) causes.push({ field: "data", message: IMMUTABLE_SET, reason: "FieldValueForbidden" });
      }
    }
    return causes;
  },
};
