/**
 * A request's URL, parsed once per request: the request's checks, authentication's request
 * attributes, the resource routes, the metrics' labels and the audit record each read it, and
 * each used to parse `request.url` again (five to six `new URL` per Kubernetes API request;
 * issue 42).
 */

/** The parsed URL of each request seen, by the request object (dropped with it). */
const parsed = new WeakMap<Request, URL>();

/**
 * The parsed URL of `req` (WHATWG `URL` of `req.url`), the same object for every caller of one
 * request. Read it only: it is shared, so a caller that needs to change it copies it first
 * (`new URL(requestUrl(req))`).
 *
 * @throws TypeError when `req.url` is not a URL (a runtime never hands a Worker such a request)
 * @example requestUrl(new Request("https://hub/api/v1/namespaces?limit=5")).searchParams.get("limit") // "5"
 */
export function requestUrl(req: Request): URL {
  let url = parsed.get(req);
  if (url === undefined) {
    url = new URL(req.url);
    parsed.set(req, url);
  }
  return url;
}
