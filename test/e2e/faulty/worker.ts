/**
 * A Worker that fails on purpose, for test/e2e/hub-log.test.ts: `/livez/ping` answers 200 (what
 * startHub waits for), `/fail/<status>` answers that status, `/hang` waits on a promise nothing
 * will settle (workerd cancels it as hung code), `/say/<word>` logs `<word>` once with each of
 * console.log, console.warn and console.error (prefixed `log:`, `warn:`, `error:`) and answers
 * 200, anything else 404.
 */
export default {
  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/livez/ping") return new Response("ok");
    const fail = /^\/fail\/(\d{3})$/.exec(pathname);
    if (fail) return new Response("failed on purpose", { status: Number(fail[1]) });
    if (pathname === "/hang") return new Promise<Response>(() => {});
    const say = /^\/say\/(\w+)$/.exec(pathname);
    if (say) {
      console.log(`log:${say[1]}`);
      console.warn(`warn:${say[1]}`);
      console.error(`error:${say[1]}`);
      return new Response("said");
    }
    return new Response("not found", { status: 404 });
  },
};
