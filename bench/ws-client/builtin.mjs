// Preload of bench/ws-client.ts: holds one WebSocket to BENCH_WS_URL with Node's built-in
// WebSocket (undici), sending an application ping every BENCH_WS_PING_MS milliseconds.
const url = process.env.BENCH_WS_URL;
const ws = new globalThis.WebSocket(url, "flotilla.agent.v1");
let echoes = 0;
ws.addEventListener("open", () => process.stderr.write("ws-client: connected (built-in WebSocket)\n"));
ws.addEventListener("message", () => void echoes++);
ws.addEventListener("error", (e) => process.stderr.write(`ws-client: error ${e.message ?? e.type}\n`));
const timer = setInterval(() => ws.readyState === 1 && ws.send(JSON.stringify({ type: "ping", echoes })), Number(process.env.BENCH_WS_PING_MS ?? 1000));
timer.unref();
// The agent ends on SIGTERM once its loops have stopped: the connection must not hold it.
process.once("SIGTERM", () => ws.close());
