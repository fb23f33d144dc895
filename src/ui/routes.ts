/**
 * The dashboard's routes on the hub Worker, and `/`:
 *
 * - `GET /ui` (and `/ui/`): the page, a small HTML document that loads the dashboard's script and
 *   styles from `/ui/assets/` (Workers static assets, wrangler.toml `[assets]`, built by
 *   scripts/build-ui.mjs from src/ui/app). Public: it holds no data; the page signs in with a bearer
 *   token the hub's authentication chain accepts and reads the Kubernetes API with it. Served with
 *   a Content-Security-Policy that lets it load only the hub's own scripts, styles and API.
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
import { AUDIT_GROUP, AUDIT_VERSION } from "../audit/routes.ts";
import { servedGroups } from "../kinds/index.ts";

/** Where the built assets are served from (scripts/build-ui.mjs writes dist/ui/ui/assets/). */
export const UI_ASSETS = "/ui/assets";

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
  app.get(
    "/favicon.ico",
    () =>
      new Response(FAVICON_SVG, {
        headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
      }),
  );
  return app;
}
