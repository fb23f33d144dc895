/**
 * `/` and `/ui` on the Worker: a browser navigating to `/` is sent to the dashboard; an API client
 * gets kube-apiserver's RootPaths document (authenticated, as kube-apiserver's `/`); the page at
 * `/ui` is public and loads only the hub's own assets under a strict Content-Security-Policy.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import dashboardFiles from "../../dist/ui/files.js";
import { assetCacheControl } from "../../src/ui/routes.ts";
import { ADMIN } from "./helpers.ts";

const get = (path: string, headers: Record<string, string> = {}) => exports.default.fetch(`https://hub.test${path}`, { headers, redirect: "manual" });

describe("/ and /ui", () => {
  it("sends a browser at / to the dashboard", async () => {
    const res = await get("/", { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/ui");
  });

  it("answers an API client at / with RootPaths, as kube-apiserver does", async () => {
    const res = await get("/", { authorization: `Bearer ${ADMIN}`, accept: "application/json, */*" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { paths: string[] };
    expect(body.paths).toEqual([...body.paths].sort());
    for (const p of [
      "/api",
      "/api/v1",
      "/apis",
      "/apis/cluster.open-cluster-management.io",
      "/apis/cluster.open-cluster-management.io/v1",
      "/apis/work.open-cluster-management.io/v1",
      "/version",
      "/livez",
      "/readyz",
      "/healthz",
      "/openapi/v2",
      "/ui",
    ]) {
      expect(body.paths).toContain(p);
    }
  });

  it("refuses an unauthenticated API client at / with a 401 Status", async () => {
    const res = await get("/", { accept: "application/json" });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { kind: string }).kind).toBe("Status");
  });

  it("serves the page at /ui and /ui/ with a CSP that allows only the hub's own assets", async () => {
    for (const path of ["/ui", "/ui/"]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      const html = await res.text();
      expect(html).toContain('<script type="module" src="/ui/assets/app.js">');
      expect(html).not.toMatch(/src="https?:|href="https?:/);
    }
  });

  it("serves an icon at /favicon.ico, which the page names", async () => {
    const res = await get("/favicon.ico");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toMatch(/^<svg /);
    expect(await (await get("/ui")).text()).toContain('<link rel="icon" href="/favicon.ico" type="image/svg+xml">');
  });
});

/**
 * The dashboard's files at /ui/assets/*, served by the Worker from its own bundle (scripts/build-ui.mjs
 * writes them into dist/ui/files.js), with the headers Workers static assets answer with.
 */
describe("/ui/assets/*", () => {
  const names = Object.keys(dashboardFiles);
  const chunk = names.find((n) => /^chunks\/placements-[A-Z0-9]{8}\.js$/.test(n));
  const request = (path: string, init: RequestInit = {}) => exports.default.fetch(`https://hub.test${path}`, { redirect: "manual", ...init });

  it("has the files the page names and a code-split chunk, and no source map", () => {
    expect(names).toEqual(expect.arrayContaining(["app.js", "app.css"]));
    expect(chunk).toBeDefined();
    // The maps are left out of the Worker (scripts/build-ui.mjs), and no file points at one.
    expect(names.filter((n) => n.endsWith(".map"))).toEqual([]);
    for (const n of names) expect(dashboardFiles[n]!.body, n).not.toMatch(/sourceMappingURL/);
  });

  it.each([
    ["app.js", "text/javascript; charset=utf-8", "public, max-age=0, must-revalidate"],
    ["app.css", "text/css; charset=utf-8", "public, max-age=0, must-revalidate"],
  ])("serves %s without a token, with its type, ETag and Cache-Control", async (name, type, cacheControl) => {
    const res = await request(`/ui/assets/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(type);
    expect(res.headers.get("cache-control")).toBe(cacheControl);
    expect(res.headers.get("etag")).toBe(`"${dashboardFiles[name]!.etag}"`);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const body = await res.text();
    expect(body).toBe(dashboardFiles[name]!.body);
    expect(res.headers.get("content-length")).toBe(String(new TextEncoder().encode(body).byteLength));
  });

  it("keeps a content-hashed chunk immutable", async () => {
    const res = await request(`/ui/assets/${chunk}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await res.text()).toBe(dashboardFiles[chunk!]!.body);
  });

  it("answers 304 without a body to an If-None-Match naming the ETag (strong, weak or in a list)", async () => {
    const etag = `"${dashboardFiles["app.js"]!.etag}"`;
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await request("/ui/assets/app.js", { headers: { "if-none-match": inm } });
      expect(res.status, inm).toBe(304);
      expect(res.headers.get("etag")).toBe(etag);
      expect(res.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
      expect(await res.text()).toBe("");
    }
    const changed = await request("/ui/assets/app.js", { headers: { "if-none-match": '"0123456789abcdef0123456789abcdef"' } });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toBe(dashboardFiles["app.js"]!.body);
  });

  it("answers HEAD with the headers alone", async () => {
    const res = await request("/ui/assets/app.css", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(res.headers.get("etag")).toBe(`"${dashboardFiles["app.css"]!.etag}"`);
    expect(await res.text()).toBe("");
  });

  it("leaves Cache-Control out when the request carries Authorization, as Workers static assets do", async () => {
    for (const authorization of [`Bearer ${ADMIN}`, "Bearer not-a-token"]) {
      const res = await request("/ui/assets/app.js", { headers: { authorization } });
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBeNull();
      await res.body?.cancel();
    }
  });

  it.each([
    "/ui/assets/nope.js",
    "/ui/assets/app.js.map",
    "/ui/assets/",
    "/ui/assets",
    "/ui/assets/chunks/",
    "/ui/assets/%2e%2e/%2e%2e/wrangler.toml",
    "/ui/assets/..%2F..%2Fwrangler.toml",
    "/ui/assets/%2Fapp.js",
    "/ui/assets/toString",
    "/ui/assets/__proto__",
  ])("answers %s with the hub's 404 Status, unauthenticated", async (path) => {
    const res = await request(path);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { kind: string; reason: string }).reason).toBe("NotFound");
  });

  it("refuses another method on a file with 405 and Allow", async () => {
    const res = await request("/ui/assets/app.js", { method: "POST", body: "x" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });

  it("names a chunk immutable only when its name carries esbuild's hash", () => {
    expect(assetCacheControl("chunks/placements-KRURIJ6J.js")).toBe("public, max-age=31536000, immutable");
    expect(assetCacheControl("chunks/chunk-ZRBGE3HQ.js")).toBe("public, max-age=31536000, immutable");
    for (const p of ["app.js", "app.css", "chunks/placements-KRURIJ6J.js.map", "chunks/placements.js", "x/chunks/a-KRURIJ6J.js"]) {
      expect(assetCacheControl(p), p).toBe("public, max-age=0, must-revalidate");
    }
  });
});
