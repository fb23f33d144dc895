/**
 * One HTTP(S) exchange with the hub over `node:http` / `node:https`, so that an HTTPS hub signed
 * by a local CA can be trusted (`ca`) without any extra dependency. The CA is added to Node's
 * built-in roots, never replacing them, and certificate checks are never turned off.
 */
import http from "node:http";
import https from "node:https";
import tls from "node:tls";

/** A request: absolute URL, method, headers and an optional body. */
export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Extra PEM CA certificates to trust for https URLs (besides Node's built-in roots). */
  ca?: string;
  /** Give up after this many milliseconds without an answer (default 30 000). */
  timeoutMs?: number;
}

/** The answer: HTTP status, `content-type` and the body as text. */
export interface HttpResponse {
  status: number;
  contentType: string;
  body: string;
}

/**
 * Sends one request.
 *
 * @returns the response, whatever its status.
 * @throws the Node error (with `code`, e.g. `ECONNREFUSED`, `SELF_SIGNED_CERT_IN_CHAIN`,
 *   `ETIMEDOUT`) when no HTTP answer came.
 */
export function httpRequest(req: HttpRequest): Promise<HttpResponse> {
  const url = new URL(req.url);
  const isHttps = url.protocol === "https:";
  const headers: Record<string, string> = { ...req.headers };
  if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
  const options: https.RequestOptions = { method: req.method, headers };
  if (isHttps && req.ca) options.ca = [...tls.rootCertificates, req.ca];
  const timeoutMs = req.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const r = (isHttps ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers["content-type"] ?? ""), body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    r.setTimeout(timeoutMs, () => {
      const err: NodeJS.ErrnoException = new Error(`no answer within ${timeoutMs} ms`);
      err.code = "ETIMEDOUT";
      r.destroy(err);
    });
    r.on("error", reject);
    r.end(req.body);
  });
}
