/**
 * Decoding HTTP requests into the generic write machinery's terms: bounded body reading (413),
 * content types (415), query options, and Status responses.
 */
import type { Context } from "hono";
import { ApiError, badRequest, tooLarge, unsupportedMediaType, type Status } from "../k8s/errors.ts";
import type { WriteRequest } from "../k8s/write.ts";

/** Largest request body accepted, in bytes (Kubernetes' apiserver allows 3 MiB). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** A JSON response carrying a Kubernetes Status for `err` (with `Retry-After` when the Status gives `details.retryAfterSeconds`). */
export function statusResponse(err: ApiError): Response {
  const status = err.toStatus();
  return new Response(JSON.stringify(status), { status: err.code, headers: { "content-type": "application/json", ...retryAfter(status) } });
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
 * `limit` bytes (413) whether or not a Content-Length was sent.
 *
 * @throws ApiError 413
 */
export async function readBodyBytes(c: Context, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > limit) throw tooLarge(limit);
  const body = c.req.raw.body;
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
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
 * Parses a JSON body.
 *
 * @throws ApiError 400 when the body is empty or not JSON.
 */
export function parseJson(text: string): unknown {
  if (text.trim() === "") throw badRequest("the request body is empty");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`error decoding JSON body: ${(e as Error).message}`);
  }
}

function mediaType(c: Context): string {
  return (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
}

/** Checks a create/update body's content type (JSON, or YAML as kubectl may send). @throws ApiError 415 */
export function requireJsonBody(c: Context): void {
  const t = mediaType(c);
  if (t !== "" && t !== "application/json" && t !== "*/*") throw unsupportedMediaType(t, ["application/json"]);
}

const PATCH_TYPES = ["application/merge-patch+json", "application/apply-patch+yaml", "application/json-patch+json", "application/strategic-merge-patch+json"];

/**
 * Decodes a PATCH into a WriteRequest: merge patch, or server-side apply (`fieldManager` and
 * `force` from the query). JSON patch and strategic merge patch get 415, as the apiserver answers
 * for custom resources.
 *
 * @throws ApiError 400, 415
 */
export async function decodePatch(c: Context, subresource: "status" | undefined): Promise<WriteRequest> {
  const t = mediaType(c);
  const force = c.req.query("force");
  const fieldManager = c.req.query("fieldManager");
  const forceValue = force === undefined ? undefined : force === "true";
  if (t === "application/merge-patch+json") {
    return { verb: "patch", patchType: "merge", patch: parseJson(await readBody(c)), force: forceValue, subresource };
  }
  if (t === "application/apply-patch+yaml" || t === "application/apply-patch+json") {
    return { verb: "patch", patchType: "apply", patch: await readBody(c), fieldManager, force: forceValue, subresource };
  }
  throw unsupportedMediaType(t || "(none)", PATCH_TYPES.slice(0, 2));
}

/** Decodes DeleteOptions preconditions from the body, if any. @throws ApiError 400 */
export async function decodeDelete(c: Context): Promise<WriteRequest> {
  const text = await readBody(c);
  if (text.trim() === "") return { verb: "delete" };
  const body = parseJson(text) as { preconditions?: { uid?: string; resourceVersion?: string } } | null;
  if (body === null || typeof body !== "object") throw badRequest("DeleteOptions must be an object");
  return { verb: "delete", preconditions: body.preconditions };
}
