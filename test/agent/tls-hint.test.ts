/**
 * The agent against a hub whose certificate it cannot verify (a local HTTPS hub without
 * NODE_EXTRA_CA_CERTS): the failure says how to trust the hub's CA, instead of retrying
 * "unable to verify the first certificate" with no hint.
 */
import { readFileSync, mkdtempSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HubClient, tlsHint } from "../../agent/src/hub-client.ts";
import { ensureLocalTls } from "../../scripts/tls.mjs";

describe("a hub certificate the agent does not trust", () => {
  let server: https.Server;
  let url: string;

  beforeAll(async () => {
    const tls = await ensureLocalTls(mkdtempSync(path.join(tmpdir(), "flotilla-tls-")));
    server = https.createServer({ key: readFileSync(tls.key), cert: readFileSync(tls.cert) }, (_req, res) => res.end("{}"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("fails as unreachable with a hint naming NODE_EXTRA_CA_CERTS", async () => {
    const r = await new HubClient({ hubUrl: url, timeoutMs: 5_000 }).register("abcdef.0123456789abcdef", {
      clusterName: "c1",
      clusterId: "id",
      publicKey: { kty: "EC", crv: "P-256", x: "x", y: "y" },
      proof: "p",
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.kind).toBe("unreachable");
    expect(r.error.message).toContain("NODE_EXTRA_CA_CERTS=");
  });

  it("adds nothing to other network errors", () => {
    expect(tlsHint(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBe("");
  });
});
