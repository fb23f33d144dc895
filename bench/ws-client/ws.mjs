// Preload of bench/ws-client.ts: holds one WebSocket to BENCH_WS_URL with the `ws` package,
// sending an application ping every BENCH_WS_PING_MS milliseconds.
import WebSocket from "ws";
const ws = new WebSocket(process.env.BENCH_WS_URL, "flotilla.agent.v1");
let echoes = 0;
ws.on("open", () => process.stderr.write("ws-client: connected (ws package)\n"));
ws.on("message", () => void echoes++);
ws.on("error", (e) => process.stderr.write(`ws-client: error ${e.message}\n`));
const timer = setInterval(
  () => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "ping", echoes })),
  Number(process.env.BENCH_WS_PING_MS ?? 1000),
);
timer.unref();
// The agent ends on SIGTERM once its loops have stopped: the connection must not hold it.
process.once("SIGTERM", () => ws.close());
