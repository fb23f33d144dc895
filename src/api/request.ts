/**
 * Decoding HTTP requests into the generic write machinery's terms: the request target (414,
 * malformed escapes), bounded body reading (413), JSON and YAML bodies (depth, duplicate keys),
 * content types (415), query options, and Status responses.
 */
import type { Context } from "hono";
import { stringify as stringifyYaml } from "yaml";
import { negotiate } from "./negotiate.ts";
import { z } from "zod";
import { ApiError, badRequest, tooLarge, unsupportedMediaType, uriTooLong, type Status } from "../k8s/errors.ts";
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from "./protobuf.ts";
import { decodeJson, decodeYaml } from "../k8s/decode.ts";
import { checkSchema, isJsonObject } from "../k8s/meta.ts";
import type { DeletePropagation as WriteDeletePolicy, WriteRequest } from "../k8s/write.ts";
import { checkDuplicateFields, fieldValidationOf, type FieldValidation } from "./fieldvalidation.ts";
import { fieldManagerErrors, managerFromUserAgent } from "../k8s/fieldmanager.ts";

/** Largest request body accepted, in bytes (Kubernetes' apiserver allows 3 MiB). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * How much of a body past its limit is read and discarded before the 413 is answered, in bytes
 * (100 MiB, the largest body Cloudflare's edge forwards on its Free and Pro plans). A request
 * whose body is cut off while the client is still sending it gets its connection reset (wrangler
 * dev's proxy and workerd close it with unread data) instead of the 413; past this much the body
 * is cancelled anyway.
 */
const MAX_DRAIN_BYTES = 100 * 1024 * 1024;

/**
 * Longest request target (path and query) the hub reads, in bytes (8 KiB, the request line
 * nginx and most proxies accept). Longer ones get 414 with a Status before any parameter is
 * parsed. Longer still, the server in front answers 414 without a Status and the Worker never
 * sees the request: workerd refuses targets of 65,535 bytes or more (`URI too long`, text/plain)
 * and Cloudflare's edge URLs over 16 KB. kube-apiserver has no limit of its own below Go's
 * 1 MiB of request line and headers (431).
 */
const MAX_REQUEST_TARGET_BYTES = 8 * 1024;

/**
 * Decodes one percent-encoded path segment (RFC 3986) to its UTF-8 text.
 *
 * @throws ApiError 400 BadRequest for a malformed escape (`%A`, `%zz`) or escapes that are not UTF-8 (`%E0%A4`).
 */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`malformed percent-encoding in the request path: ${JSON.stringify(segment.slice(0, 256))}`);
  }
}

/**
 * Checks a request's target before anything routes or parses it: at most
 * {@link MAX_REQUEST_TARGET_BYTES} long (414), and every percent-escape of the path and of the
 * query well-formed UTF-8 (400; Go's HTTP server answers a malformed escape with a bare 400).
 * `url` is the request's URL, as text or parsed (src/k8s/request-url.ts `requestUrl`).
 *
 * @throws ApiError 400, 414
 */
export function checkRequestTarget(url: string | URL): void {
  const u = typeof url === "string" ? new URL(url) : url;
  const target = u.pathname.length + u.search.length;
  if (target > MAX_REQUEST_TARGET_BYTES) throw uriTooLong(target, MAX_REQUEST_TARGET_BYTES);
  for (const segment of u.pathname.split("/")) decodePathSegment(segment);
  for (const pair of u.search.slice(1).split("&")) {
    try {
      decodeURIComponent(pair.replace(/\+/g, " "));
    } catch {
      throw badRequest(`malformed percent-encoding in the query: ${JSON.stringify(pair.slice(0, 256))}`);
    }
  }
}

/**
 * A boolean query parameter (`watch`, `allowWatchBookmarks`, `force`, ...) as kube-apiserver
 * decodes it (apimachinery's `Convert_Slice_string_To_bool`): absent is false; `0` and `false`
 * in any case are false; any other value, the empty string included (`?watch`), is true. So
 * `watch=True` from the Python client and `watch=1` from others both watch.
 */
export function queryFlag(value: string | undefined): boolean {
  if (value === undefined) return false;
  return !(value === "0" || value.toLowerCase() === "false");
}

/** A JSON response carrying a Kubernetes Status for `err` (with `Retry-After` when the Status gives `details.retryAfterSeconds`). */
export function statusResponse(err: ApiError): Response {
  return statusAnswer(err.toStatus());
}

/**
 * The answer of a failure's Status (src/k8s/errors.ts `Status`), as {@link statusResponse} answers
 * an ApiError: its JSON, HTTP status `status.code`, and `Retry-After` when the Status has
 * `details.retryAfterSeconds`. For a failure answered without throwing (a get of an absent object).
 */
export function statusAnswer(status: Status): Response {
  return new Response(JSON.stringify(status), { status: status.code, headers: { "content-type": "application/json", ...retryAfter(status) } });
}

/** The `Retry-After` header of a Status, in seconds, as the apiserver sets it from `details.retryAfterSeconds`; empty when it has none. */
export function retryAfter(status: Status): Record<string, string> {
  const s = status.details?.retryAfterSeconds;
  return s !== undefined && s > 0 ? { "retry-after": String(s) } : {};
}

/**
 * Reads the request body as text, refusing more than `limit` bytes (413) whether or not a
 * Content-Length was sent.
 *
 * @throws ApiError 413
 */
export async function readBody(c: Context, limit = MAX_BODY_BYTES): Promise<string> {
  return new TextDecoder().decode(await readBodyBytes(c, limit));
}

/**
 * Reads the request body as raw bytes (e.g. to check a signature over them), refusing more than
 * `limit` bytes (413) whether or not a Content-Length was sent. A body found too large while
 * reading is drained (up to {@link MAX_DRAIN_BYTES}) before the 413, so that the client, still
 * sending, reads the answer instead of a reset connection.
 *
 * @throws ApiError 413
 */
export async function readBodyBytes(c: Context, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > limit) throw tooLarge(limit);
  const body = c.req.raw.body;
  if (!body) return new Uint8Array(0);
  // A declared length within the limit is the body's length (HTTP framing): read it at once,
  // checked again in case a transfer encoding overrode the header.
  if (c.req.header("content-length") !== undefined && Number.isInteger(declared) && declared >= 0) {
    const all = new Uint8Array(await c.req.raw.arrayBuffer());
    if (all.byteLength > limit) throw tooLarge(limit);
    return all;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      for (let drained = size; drained <= MAX_DRAIN_BYTES;) {
        const next = await reader.read();
        if (next.done) throw tooLarge(limit);
        drained += next.value.byteLength;
      }
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let off = 0;
  for (const ch of chunks) {
    all.set(ch, off);
    off += ch.byteLength;
  }
  return all;
}

/**
 * Parses a JSON body (src/k8s/decode.ts: at most 100 levels deep) under a field validation
 * directive for its duplicate keys: `Strict` (the default, and what the agent API always uses)
 * refuses them, `Warn` adds a warning for each to `warnings`, `Ignore` keeps the last value.
 *
 * @throws ApiError 400 when the body is empty, too deep, not JSON, or has duplicate keys under Strict.
 */
export function parseJson(text: string, mode: FieldValidation = "Strict", warnings?: string[]): unknown {
  return checkDuplicateFields(decodeJson(text), mode, warnings);
}

function mediaType(c: Context): string {
  return (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
}

/** The body media types a create or update takes, as kube-apiserver serves them (protobuf aside). */
const BODY_TYPES = ["application/json", "application/yaml"];

/**
 * Decodes a create or update body: JSON (`application/json`, or no type) or YAML
 * (`application/yaml`), with the same depth limit and the request's `fieldValidation` for
 * duplicate keys (warnings for Warn go to `warnings`); with `protobuf` (a core kind whose message
 * src/api/protobuf.ts decodes, as kubectl's typed clients send them), also
 * `application/vnd.kubernetes.protobuf`.
 * @throws ApiError 400 (undecodable, duplicate keys under Strict), 413, 415 (another type)
 */
export async function decodeObjectBody(c: Context, warnings?: string[], protobuf = false): Promise<unknown> {
  const t = mediaType(c);
  if (t === "application/yaml") return checkDuplicateFields(decodeYaml(await readBody(c), MAX_BODY_BYTES), fieldValidationOf(c), warnings);
  if (protobuf && t === PROTOBUF_MEDIA_TYPE) return decodeProtobufObject(await readBodyBytes(c));
  if (t !== "" && t !== "application/json" && t !== "*/*") throw unsupportedMediaType(t, protobuf ? [...BODY_TYPES, PROTOBUF_MEDIA_TYPE] : BODY_TYPES);
  return parseJson(await readBody(c), fieldValidationOf(c), warnings);
}

/** The form `accept` asks for (src/api/negotiate.ts), or null when it names nothing served. */
function wantedForm(accept: string | undefined): string | null {
  try {
    return negotiate(accept, "object").kind;
  } catch {
    return null;
  }
}

/**
 * Middleware: answers in YAML what a handler answered in JSON when the request's `Accept`
 * prefers `application/yaml` (src/api/negotiate.ts); a watch stream stays JSON lines.
 */
export async function yamlResponses(c: Context, next: () => Promise<void>): Promise<void> {
  await next();
  // The Accept header first: a JSON client's answer (nearly every request) never parses the query.
  if (wantedForm(c.req.header("accept")) !== "yaml" || queryFlag(c.req.query("watch"))) return;
  const type = c.res.headers.get("content-type") ?? "";
  if (!type.startsWith("application/json")) return;
  const body: unknown = await c.res.json();
  const headers = new Headers(c.res.headers);
  headers.set("content-type", "application/yaml");
  headers.delete("content-length");
  c.res = new Response(stringifyYaml(body), { status: c.res.status, headers });
}

const PATCH_TYPES = ["application/merge-patch+json", "application/apply-patch+yaml", "application/json-patch+json", "application/strategic-merge-patch+json"];

/**
 * The field manager of a write (kube-apiserver's handlers): the `fieldManager` query parameter,
 * checked as apimachinery's `ValidateFieldManager` (at most 128 characters, printable), else, except
 * for apply (where it is required and checked by the write), the user agent's prefix
 * (`kubectl/v1.31.0 (linux/amd64) ...` gives `kubectl`).
 * @throws ApiError 422 (`<options>.meta.k8s.io "" is invalid: fieldManager: ...`)
 */
export function fieldManagerOf(c: Context, options: "CreateOptions" | "UpdateOptions" | "PatchOptions", apply = false): string | undefined {
  const given = c.req.query("fieldManager") ?? "";
  const causes = fieldManagerErrors(given);
  if (causes.length > 0) {
    const message = causes.map((x) => `${x.field}: ${x.message}`).join(", ");
    throw new ApiError(422, "Invalid", `${options}.meta.k8s.io "" is invalid: ${causes.length === 1 ? message : `[${message}]`}`, {
      group: "meta.k8s.io",
      kind: options,
      causes,
    });
  }
  if (given !== "" || apply) return given || undefined;
  return managerFromUserAgent(c.req.header("user-agent")) || undefined;
}

/**
 * Decodes a PATCH into a WriteRequest: merge patch (JSON), or server-side apply (YAML or JSON,
 * decoded here with the same depth limit; `fieldManager` and `force` from the query). Duplicate
 * keys follow the request's `fieldValidation` (warnings for Warn go to `warnings`). JSON patch
 * (RFC 6902, `application/json-patch+json`) is decoded here and applied by the write
 * (src/k8s/write.ts); strategic merge patch is taken for the core kinds (`strategic`: Namespace,
 * Secret, src/k8s/strategicpatch.ts) and gets 415 otherwise, as the apiserver answers for custom
 * resources.
 *
 * @throws ApiError 400, 413, 415
 */
export async function decodePatch(c: Context, subresource: "status" | undefined, warnings?: string[], strategic = false): Promise<WriteRequest> {
  const t = mediaType(c);
  const force = c.req.query("force");
  const isApply = t === "application/apply-patch+yaml" || t === "application/apply-patch+json";
  const fieldManager = fieldManagerOf(c, "PatchOptions", isApply);
  const forceValue = force === undefined ? undefined : queryFlag(force);
  if (t === "application/merge-patch+json") {
    return {
      verb: "patch",
      patchType: "merge",
      patch: parseJson(await readBody(c), fieldValidationOf(c), warnings),
      fieldManager,
      force: forceValue,
      subresource,
    };
  }
  if (strategic && t === "application/strategic-merge-patch+json") {
    return {
      verb: "patch",
      patchType: "strategic",
      patch: parseJson(await readBody(c), fieldValidationOf(c), warnings),
      fieldManager,
      force: forceValue,
      subresource,
    };
  }
  if (t === "application/json-patch+json") {
    return {
      verb: "patch",
      patchType: "json",
      patch: parseJson(await readBody(c), fieldValidationOf(c), warnings),
      fieldManager,
      force: forceValue,
      subresource,
    };
  }
  if (isApply) {
    const patch = checkDuplicateFields(decodeYaml(await readBody(c), MAX_BODY_BYTES), fieldValidationOf(c), warnings);
    return { verb: "patch", patchType: "apply", patch, fieldManager, force: forceValue, subresource };
  }
  throw unsupportedMediaType(t || "(none)", strategic ? PATCH_TYPES : PATCH_TYPES.slice(0, 3));
}

/**
 * The part of metav1.DeleteOptions the hub reads: `preconditions`, `propagationPolicy` and the
 * older `orphanDependents` (other fields, e.g. `gracePeriodSeconds`, mean nothing to objects
 * without a kubelet and are left alone, as kube-apiserver does for custom resources).
 */
const DeleteOptionsSchema = z.looseObject({
  preconditions: z.strictObject({ uid: z.string().nullish(), resourceVersion: z.string().nullish() }).nullish(),
  propagationPolicy: z.string().nullish(),
  orphanDependents: z.boolean().nullish(),
});

const PROPAGATION_POLICIES = ["Orphan", "Background", "Foreground"] as const;

/**
 * The dependents' fate a delete asks for (kube-apiserver's DeleteOptions validation): the
 * `propagationPolicy` of the body or the query, or `orphanDependents` (true: Orphan, false:
 * Background); undefined when neither says (the kind's default, Background).
 * @throws ApiError 422 for an unknown policy, or both fields set
 */
function propagationOf(
  body: { propagationPolicy?: string | null; orphanDependents?: boolean | null },
  query: string | undefined,
): WriteDeletePolicy | undefined {
  const policy = body.propagationPolicy ?? query;
  const invalid = (field: string, message: string) =>
    new ApiError(422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: ${field}: ${message}`, {
      group: "meta.k8s.io",
      kind: "DeleteOptions",
      causes: [{ reason: "FieldValueInvalid", message, field }],
    });
  if (policy != null && body.orphanDependents != null)
    throw invalid("propagationPolicy", "Invalid value: orphanDependents and deletionPropagation cannot be both set");
  if (policy != null) {
    if (!(PROPAGATION_POLICIES as readonly string[]).includes(policy))
      throw invalid("propagationPolicy", `Unsupported value: "${policy}": supported values: "Background", "Foreground", "Orphan"`);
    return policy as WriteDeletePolicy;
  }
  if (body.orphanDependents != null) return body.orphanDependents ? "Orphan" : "Background";
  return undefined;
}

/**
 * Decodes DeleteOptions preconditions from the body, if any: the body must be an object and its
 * preconditions strings (kube-apiserver answers an undecodable DeleteOptions with 400).
 * @throws ApiError 400
 */
export async function decodeDelete(c: Context): Promise<WriteRequest> {
  const text = await readBody(c);
  const query = c.req.query("propagationPolicy");
  if (text.trim() === "") return { verb: "delete", propagationPolicy: propagationOf({}, query) };
  const body = parseJson(text);
  if (!isJsonObject(body)) throw badRequest("DeleteOptions must be a JSON object");
  const check = checkSchema(DeleteOptionsSchema, body);
  const problems = [...check.unknownFields.map((f) => ({ field: f, message: `unknown field "${f}"` })), ...check.causes];
  if (problems.length > 0) {
    throw new ApiError(400, "BadRequest", `invalid DeleteOptions: ${problems.map((p) => `${p.field}: ${p.message}`).join(", ")}`, {
      causes: problems.map((p) => ({ reason: "FieldValueInvalid", message: p.message, field: p.field })),
    });
  }
  const pre = body.preconditions as { uid?: string | null; resourceVersion?: string | null } | null | undefined;
  const propagationPolicy = propagationOf(body as { propagationPolicy?: string | null; orphanDependents?: boolean | null }, query);
  return {
    verb: "delete",
    preconditions: pre ? { uid: pre.uid ?? undefined, resourceVersion: pre.resourceVersion ?? undefined } : undefined,
    propagationPolicy,
  };
}
