/**
 * The dashboard's routes on the hub Worker, and `/`:
 *
 * - `GET /ui` (and `/ui/`): the page, a small HTML document that loads the dashboard's script and
 *   styles from `/ui/assets/`. Public: it holds no data; the page signs in with a bearer token the
 *   hub's authentication chain accepts and reads the Kubernetes API with it. Served with a
 *   Content-Security-Policy that lets it load only the hub's own scripts, styles and API.
 * - `GET /ui/assets/<path>` (and `HEAD`): the dashboard's built files (scripts/build-ui.mjs bundles
 *   src/ui/app and writes them as the module dist/ui/files.js, part of the Worker's bundle), as
 *   Workers static assets answer them: see {@link serveDashboardFile}. Public, as the page.
 * - `GET /favicon.ico`: the dashboard's icon, an SVG ({@link FAVICON_SVG}; the page names it with
 *   `<link rel="icon">`, and browsers that ask for `/favicon.ico` on their own get it too).
 * - `GET /`: a browser (`Accept` naming `text/html`) is redirected to `/ui`; any other client gets
 *   what kube-apiserver answers at `/`: the `RootPaths` document `{"paths": [...]}` (every path the
 *   hub serves at the top, sorted), authenticated and authorized as the nonResourceURL `/`.
 */
import { Hono } from "hono";
import type { ApiEnv } from "../api/context.ts";
import { ensureBuiltins } from "../api/builtins.ts";
import { apiAccess } from "../auth/request.ts";
import { requestUrl } from "../k8s/request-url.ts";
import { AUDIT_GROUP, AUDIT_VERSION } from "../audit/routes.ts";
import { servedGroups } from "../kinds/index.ts";
import dashboardFiles, { type DashboardFile } from "../../dist/ui/files.js";

/** Where the built assets are served from (scripts/build-ui.mjs writes them into dist/ui/files.js). */
export const UI_ASSETS = "/ui/assets";

/**
 * The `Cache-Control` of a dashboard file. Workers static assets send
 * `public, max-age=0, must-revalidate` (workers-shared asset-worker `CACHE_CONTROL_BROWSER`): the
 * browser keeps the file and asks again with `If-None-Match` each time; so do `app.js` and
 * `app.css` here, whose names stay while their content changes. A code-split chunk's name carries
 * its content's hash (scripts/build-ui.mjs `chunkNames: "chunks/[name]-[hash]"`, esbuild's 8
 * characters of base32): a new content is a new name, so it is kept a year and never asked again
 * (`immutable`, RFC 8246).
 *
 * @param path the file's path under `/ui/assets/`, e.g. `chunks/placements-KRURIJ6J.js`
 * @example assetCacheControl("app.js") // "public, max-age=0, must-revalidate"
 */
export function assetCacheControl(path: string): string {
  return /^chunks\/[^/]+-[A-Z0-9]{8}\.(js|css)$/.test(path) ? "public, max-age=31536000, immutable" : "public, max-age=0, must-revalidate";
}

/** Each file's UTF-8 bytes, encoded at its first request in this isolate. */
const encoded = new WeakMap<DashboardFile, Uint8Array>();

/**
 * Whether an `If-None-Match` header names `etag` (the strong form `"<etag>"` or the weak
 * `W/"<etag>"`, one of a list, or `*`): RFC 9110 §13.1.2's weak comparison, as a GET is compared.
 */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === `"${etag}"` || t === `W/"${etag}"`;
  });
}

/**
 * Answers a request for a dashboard file as Workers static assets do (workers-shared asset-worker,
 * `resolveAssetIntentToResponse`, `getAssetHeaders`): 200 with the file, its `Content-Type`, its
 * `ETag` (`"<32 hex digits of its SHA-256>"`) and {@link assetCacheControl} (left out when the
 * request carries `Authorization` or `Range`, as the asset worker's `isCacheable`); 304 Not Modified
 * with the same headers and no body when `If-None-Match` names the ETag; the headers alone for
 * `HEAD`; 405 with `Allow: GET, HEAD` for another method. `X-Content-Type-Options: nosniff` as the
 * page's. Undefined when no file has the path (the caller answers 404): the path is looked up as a
 * key of the build's files, never resolved against a directory, so `..` reaches nothing.
 *
 * @param request the request (its method, `If-None-Match`, `Authorization` and `Range` are read)
 * @param path the file's path under `/ui/assets/`, percent-decoded (`app.js`, `chunks/x-HASH.js`)
 * @param files the dashboard's files (default: those built into the Worker, dist/ui/files.js)
 */
export function serveDashboardFile(request: Request, path: string, files: Readonly<Record<string, DashboardFile>> = dashboardFiles): Response | undefined {
  if (!Object.hasOwn(files, path)) return undefined;
  const file = files[path]!;
  const method = request.method.toUpperCase();
  if (method !== "GET" && method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
  const headers = new Headers({ etag: `"${file.etag}"`, "content-type": file.type, "x-content-type-options": "nosniff" });
  if (!request.headers.has("authorization") && !request.headers.has("range")) headers.set("cache-control", assetCacheControl(path));
  if (noneMatch(request.headers.get("if-none-match") ?? undefined, file.etag)) return new Response(null, { status: 304, headers });
  let bytes = encoded.get(file);
  if (!bytes) {
    bytes = new TextEncoder().encode(file.body);
    encoded.set(file, bytes);
  }
  headers.set("content-length", String(bytes.byteLength));
  return new Response(method === "HEAD" ? null : bytes, { headers });
}

/**
 * The page's Content-Security-Policy: scripts, styles, fetches and images from the hub only
 * (`data:` images for the inline icons), no frames, no forms posting elsewhere.
 */
export const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The dashboard's icon: a small sail on a blue tile (SVG, served at `/favicon.ico`). */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f6feb"/><path d="M16 5v17H7z" fill="#fff"/><path d="M18 9l7 13h-7z" fill="#cfe3ff"/><path d="M5 24h22l-3 4H8z" fill="#fff"/></svg>
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Flotilla</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="${UI_ASSETS}/app.css">
<link rel="modulepreload" href="${UI_ASSETS}/app.js">
</head>
<body>
<div id="app"><p class="boot">Loading the Flotilla dashboard…</p></div>
<noscript>The Flotilla dashboard needs JavaScript. The hub's API is at /apis; its reference at /docs.</noscript>
<script type="module" src="${UI_ASSETS}/app.js"></script>
</body>
</html>
`;

/** Whether an `Accept` header asks for HTML (a browser navigating), as opposed to an API client. */
export function wantsHtml(accept: string | undefined): boolean {
  return /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept ?? "");
}

/** The paths of kube-apiserver's `RootPaths` document at `/`, for the groups the hub serves. */
export function rootPaths(): string[] {
  const paths = new Set([
    "/api",
    "/apis",
    "/docs",
    "/healthz",
    "/livez",
    "/metrics",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/",
    "/readyz",
    "/ui",
    "/version",
    "/.well-known/openid-configuration",
    "/openid/v1/jwks",
  ]);
  for (const g of servedGroups()) {
    if (g.group === "") {
      for (const v of g.versions) paths.add(`/api/${v}`);
      continue;
    }
    paths.add(`/apis/${g.group}`);
    for (const v of g.versions) paths.add(`/apis/${g.group}/${v}`);
  }
  paths.add(`/apis/${AUDIT_GROUP}`);
  paths.add(`/apis/${AUDIT_GROUP}/${AUDIT_VERSION}`);
  return [...paths].sort();
}

function page(): Response {
  return new Response(PAGE, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": UI_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    },
  });
}

/**
 * The routes `/`, `/ui` and `/ui/` (see the module comment).
 *
 * @example app.route("/", uiRoutes());
 */
export function uiRoutes(): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>({ strict: false });
  app.get("/", async (c, next) => {
    if (wantsHtml(c.req.header("accept"))) return c.redirect("/ui", 302);
    await next();
  });
  app.get("/", apiAccess(ensureBuiltins), (c) => c.json({ paths: rootPaths() }));
  app.get("/ui", () => page());
  // Every method: a file answers GET and HEAD, and 405 to another (as Workers static assets); an
  // unknown path goes on to the hub's 404 Status, unauthenticated, as before.
  app.all(`${UI_ASSETS}/*`, async (c, next) => {
    const pathname = requestUrl(c.req.raw).pathname;
    let path: string;
    try {
      path = decodeURIComponent(pathname.slice(UI_ASSETS.length + 1));
    } catch {
      return next();
    }
    const res = serveDashboardFile(c.req.raw, path);
    if (res) return res;
    await next();
  });
  app.get(
    "/favicon.ico",
    () =>
      new Response(FAVICON_SVG, {
        headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
      }),
  );
  return app;
}
