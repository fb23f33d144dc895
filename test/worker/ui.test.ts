/**
 * `/` and `/ui` on the Worker: a browser navigating to `/` is sent to the dashboard; an API client
 * gets kube-apiserver's RootPaths document (authenticated, as kube-apiserver's `/`); the page at
 * `/ui` is public and loads only the hub's own assets under a strict Content-Security-Policy.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
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
