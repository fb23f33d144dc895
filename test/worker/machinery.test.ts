/**
 * API machinery as kube-apiserver answers it, for what standard clients send: boolean query
 * parameters, discovery paths with a trailing slash, selector syntax apimachinery accepts.
 */
import { describe, expect, it } from "vitest";
import { exports } from "cloudflare:workers";
import { call, MC } from "./helpers.ts";

const get = (path: string) => exports.default.fetch(`https://hub.test${path}`, { headers: { authorization: "Bearer test-admin-token" } });

/** The first line of a streaming response (a watch's first event), then the stream is cancelled. */
async function firstLine(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  while (!buf.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return buf.slice(0, buf.indexOf("\n"));
}

describe("boolean query parameters (apimachinery Convert_Slice_string_To_bool)", () => {
  it.each(["True", "true", "TRUE", "1", "t", "yes", ""])("watch=%s watches", async (value) => {
    await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: "flag-c", labels: { flag: "x" } } });
    const res = await get(`${MC}?labelSelector=flag%3Dx&watch=${value}`);
    expect(res.status).toBe(200);
    const event = JSON.parse(await firstLine(res));
    expect(event).toMatchObject({ type: "ADDED", object: { metadata: { name: "flag-c" } } });
  });

  it.each(["false", "False", "FALSE", "0"])("watch=%s lists", async (value) => {
    const res = await call("GET", `${MC}?watch=${value}`);
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe("ManagedClusterList");
  });
});

describe("discovery paths answer with or without a trailing slash", () => {
  it.each([
    ["/version", "gitVersion"],
    ["/api", "versions"],
    ["/apis", "groups"],
    ["/apis/cluster.open-cluster-management.io/v1", "resources"],
  ])("%s/", async (path, field) => {
    const plain = await call("GET", path);
    const slashed = await call("GET", `${path}/`);
    expect(plain.status).toBe(200);
    expect(slashed.status).toBe(200);
    expect(slashed.body[field]).toEqual(plain.body[field]);
  });
});

describe("label selector syntax apimachinery accepts", () => {
  it.each(["x in (a,,)", "x in (a,,,)", "x notin (abc,,def),bar,z in (),w"])("%s", async (selector) => {
    await call("POST", MC, { apiVersion: "cluster.open-cluster-management.io/v1", kind: "ManagedCluster", metadata: { name: "sel-a", labels: { x: "a", bar: "1", w: "1" } } });
    const res = await call("GET", `${MC}?labelSelector=${encodeURIComponent(selector)}`);
    expect(res.status).toBe(200);
    const names = res.body.items.map((o: { metadata: { name: string } }) => o.metadata.name);
    // "x in (a,,)" selects x=a; the notin selector needs bar, w and z (which sel-a lacks).
    expect(names.includes("sel-a")).toBe(!selector.startsWith("x notin"));
  });
});
