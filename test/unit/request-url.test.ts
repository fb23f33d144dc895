/**
 * A request's URL is parsed once per request (src/k8s/request-url.ts `requestUrl`, issue 42): the
 * request's checks, authentication, the resource routes, the metrics and the audit record share
 * one parse instead of making five or six.
 */
import { describe, expect, it } from "vitest";
import { requestUrl } from "../../src/k8s/request-url.ts";
import { edgeLocation } from "../../src/edge.ts";

describe("requestUrl", () => {
  it("parses a request's URL once, the same object for every caller", () => {
    const req = new Request("https://hub.example/apis/apps/v1/namespaces/a/deployments?fieldManager=kubectl&dryRun=All");
    const url = requestUrl(req);
    expect(url.href).toBe(new URL(req.url).href);
    expect(url.pathname).toBe("/apis/apps/v1/namespaces/a/deployments");
    expect(url.searchParams.get("dryRun")).toBe("All");
    expect(requestUrl(req)).toBe(url);
  });

  it("parses each request's own URL", () => {
    const a = new Request("https://hub.example/api/v1/namespaces/a");
    const b = new Request("https://hub.example/api/v1/namespaces/b");
    expect(requestUrl(a).pathname).toBe("/api/v1/namespaces/a");
    expect(requestUrl(b).pathname).toBe("/api/v1/namespaces/b");
    expect(requestUrl(a)).not.toBe(requestUrl(b));
  });

  it("is what edgeLocation reads the host from", () => {
    const local = new Request("https://127.0.0.1:8787/api");
    Object.defineProperty(local, "cf", { value: { colo: "DFW" } });
    expect(edgeLocation(local)).toBeUndefined();
    const edge = new Request("https://hub.example/api");
    Object.defineProperty(edge, "cf", { value: { colo: "FRA" } });
    expect(edgeLocation(edge)).toBe("FRA");
    expect(requestUrl(edge).hostname).toBe("hub.example");
  });
});
