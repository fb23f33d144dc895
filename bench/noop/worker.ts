/**
 * The no-op Worker of the benchmarks: it answers the agent protocol's requests at once with the
 * least work (no credential check, no storage), so that timing the same agent traffic against it
 * and against the hub, in the same run on the same machine, separates the hub's cost from what
 * the machine (one local workerd, the client's own signing and HTTP) can carry at all.
 *
 * - `POST /agent/v1/clusters/{name}/heartbeat`: 200 `{"leaseDurationSeconds":60,"worksEtag":<generation>,"leaving":false}`;
 * - `GET /agent/v1/clusters/{name}/works?waitSeconds=N` with `If-None-Match`: while the works
 *   generation is the ETag's, waits up to N seconds (as the hub's long-poll) and answers 304;
 *   otherwise 200 with one work at the current generation;
 * - `PUT /agent/v1/clusters/{name}/works/{work}/status`: 200;
 * - `POST /bump`: the next works generation, waking every waiting poll (what a replica set
 *   update does on the hub).
 */
import type { HeartbeatAnswer, WorkStatusAnswer, WorksAnswer } from "../../src/agent/protocol.ts";

let generation = 1;
let waiters: (() => void)[] = [];

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

export default {
  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/bump") {
      generation++;
      const woken = waiters;
      waiters = [];
      for (const w of woken) w();
      return json({ generation });
    }
    const m = /^\/agent\/v1\/clusters\/([^/]+)\/(heartbeat|works)(?:\/([^/]+)\/status)?$/.exec(url.pathname);
    if (!m) return json({ kind: "Status", code: 404 }, 404);
    if (m[2] === "heartbeat") return json({ leaseDurationSeconds: 60, worksEtag: String(generation), leaving: false } satisfies HeartbeatAnswer);
    if (req.method === "PUT") {
      await req.arrayBuffer();
      return json({ resourceVersion: String(generation) } satisfies WorkStatusAnswer);
    }
    const etag = (req.headers.get("if-none-match") ?? "").replace(/"/g, "");
    const wait = Number(url.searchParams.get("waitSeconds") ?? "0") * 1000;
    if (etag === String(generation) && wait > 0) {
      await Promise.race([new Promise<void>((r) => waiters.push(r)), new Promise((r) => setTimeout(r, wait))]);
    }
    if (etag === String(generation)) return new Response(null, { status: 304, headers: { etag: `"${generation}"` } });
    const work = { metadata: { name: "bench", uid: "noop-work", generation }, spec: {} };
    return json({ etag: String(generation), leaving: false, works: [work] } satisfies WorksAnswer);
  },
};
