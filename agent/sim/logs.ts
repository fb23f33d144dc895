/**
 * Pod logs of the simulated cluster (`GET /api/v1/namespaces/{ns}/pods/{name}/log`, kubelet's
 * answer as kube-apiserver passes it on): plain text, one line per entry, as `kubectl logs` reads
 * it. The lines are made up (`<pod> <container> line <n>`) and shaped by the Pod's annotations:
 *
 * - `sim.flotilla.dev/log-lines`: lines the log holds at first (default 10);
 * - `sim.flotilla.dev/log-interval-ms`: with `follow=true`, a new line this often (default 1000);
 * - `sim.flotilla.dev/log-follow-bytes`: with `follow=true`, this many bytes of lines at once
 *   after the first ones, written as fast as the client reads them (the socket's backpressure),
 *   then the log follows at its interval.
 *
 * Query: `follow` (stream until the client leaves), `tailLines` (the last N of the first lines),
 * `container` (named in each line; the Pod's first container by default). A Pod that does not
 * exist is the cluster's 404.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { KubeObject } from "./types.ts";

const ANNOTATION = "sim.flotilla.dev/";

function intAnnotation(pod: KubeObject, key: string, fallback: number): number {
  const v = Number(pod.metadata.annotations?.[ANNOTATION + key]);
  return Number.isFinite(v) && v >= 0 ? Math.floor(v) : fallback;
}

/** Serves the log of `pod` (see the module comment). */
export function serveLog(req: IncomingMessage, res: ServerResponse, pod: KubeObject, q: URLSearchParams): void {
  const containers = ((pod as { spec?: { containers?: { name?: string }[] } }).spec?.containers ?? []).map((c) => c.name ?? "");
  const container = q.get("container") ?? containers[0] ?? "main";
  const name = pod.metadata.name;
  let n = 0;
  const line = () => `${name} ${container} line ${++n}\n`;
  const first = intAnnotation(pod, "log-lines", 10);
  const tail = q.get("tailLines");
  const skip = tail !== null && Number(tail) >= 0 ? Math.max(0, first - Number(tail)) : 0;
  res.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
  let out = "";
  for (let i = 0; i < first; i++) {
    const l = line();
    if (i >= skip) out += l;
  }
  const follow = q.get("follow") === "true" || q.get("follow") === "1";
  if (!follow) {
    res.end(out);
    return;
  }
  res.write(out);
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const close = () => {
    closed = true;
    clearInterval(timer);
  };
  req.on("close", close);
  res.on("close", close);
  const interval = Math.max(1, intAnnotation(pod, "log-interval-ms", 1000));
  const tick = () => {
    timer = setInterval(() => {
      if (!closed) res.write(line());
    }, interval);
  };
  let burst = intAnnotation(pod, "log-follow-bytes", 0);
  if (burst === 0) return tick();
  // The burst: lines as fast as the client reads them.
  const pump = () => {
    while (!closed && burst > 0) {
      let chunk = "";
      while (chunk.length < 64 * 1024 && burst > chunk.length) chunk += line();
      burst -= chunk.length;
      if (!res.write(chunk)) return void res.once("drain", pump);
    }
    if (!closed) tick();
  };
  pump();
}
