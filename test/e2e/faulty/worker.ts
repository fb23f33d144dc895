/**
 * A Worker that fails on purpose, for test/e2e/hub-log.test.ts: `/livez/ping` answers 200 (what
 * startHub waits for), `/fail/<status>` answers that status, `/hang` waits on a promise nothing
 * will settle (workerd cancels it as hung code), anything else 404.
 */
export default {
  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/livez/ping") return new Response("ok");
    const fail = /^\/fail\/(\d{3})$/.exec(pathname);
    if (fail) return new Response("failed on purpose", { status: Number(fail[1]) });
    if (pathname === "/hang") return new Promise<Response>(() => {});
    return new Response("not found", { status: 404 });
  },
};
