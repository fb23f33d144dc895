/**
 * The health endpoints `/livez`, `/readyz` and `/healthz`, as kube-apiserver serves them
 * (`k8s.io/apiserver/pkg/server/healthz`; facts carried over, not code), unauthenticated (for
 * uptime monitors and load balancers; kube-apiserver's system:public-info-viewer role lets
 * anyone read them):
 *
 * - every check passes: 200 `ok`; with `?verbose`, one line per check (`[+]d1 ok`, an excluded one
 *   `[+]d1 excluded: ok`) and `livez check passed`;
 * - a check fails: 500 with every check's line, the failing ones as `[-]d1 failed: reason
 *   withheld`, and `livez check failed` (always verbose on failure);
 * - `?exclude=NAME` (repeatable) skips a check; a name that matches none adds
 *   `warn: some health checks cannot be excluded: no matches for "NAME"`;
 * - `/livez/NAME` runs one check: 200 `ok`, or 500 `internal server error: <reason>` (the reason
 *   names what failed, never a secret); an unknown NAME is a 404.
 *
 * The checks ({@link HEALTH_CHECKS}): `ping` (the Worker answers), `d1` (the D1 database answers
 * a query), `migrations` (every table and column of the code's schema, src/db/schema.ts, exists:
 * the D1 migrations this code needs were applied; src/store/d1/migrations.ts), `scheduler` (the scheduler object answers).
 * `/livez` runs `ping` and `d1` (as kube-apiserver's runs `etcd`: agents probe it while the hub is
 * away, so after a restart each of them calls it once, and it wakes no object); `/readyz` and
 * `/healthz` all four. Each check gives up after {@link CHECK_TIMEOUT_MS}.
 *
 * @module
 */
import { Hono, type Context } from "hono";
import { SCHEDULER_NAME, type Env } from "../env.ts";
import { storageOf } from "../store/storage.ts";

/** How long one check may take before it fails, in milliseconds. */
export const CHECK_TIMEOUT_MS = 5_000;

/** A check failed: `message` says what (it is shown by `/livez/NAME` and holds no secret). */
export class CheckFailed extends Error {}

/** One health check: its name and what it runs (throws {@link CheckFailed} when failing). */
export interface HealthCheck {
  name: string;
  check(env: Env): Promise<void>;
}

/** The checks, by name (see the module comment). */
export const HEALTH_CHECKS: Record<"ping" | "d1" | "migrations" | "scheduler", HealthCheck> = {
  ping: { name: "ping", check: async () => {} },
  d1: {
    name: "d1",
    async check(env) {
      if (!(await storageOf(env).ping())) throw new CheckFailed("D1 did not answer SELECT 1");
    },
  },
  migrations: {
    name: "migrations",
    async check(env) {
      const missing = await storageOf(env).missingColumns();
      if (missing.length > 0) throw new CheckFailed(`not migrated: missing ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ", ..." : ""}`);
    },
  },
  scheduler: {
    name: "scheduler",
    async check(env) {
      if ((await env.SCHEDULER.getByName(SCHEDULER_NAME).ping()) !== "ok") throw new CheckFailed("the scheduler object did not answer");
    },
  },
};

/** The checks of each endpoint, in the order they are listed. */
export const ENDPOINT_CHECKS: Record<"livez" | "readyz" | "healthz", HealthCheck[]> = {
  livez: [HEALTH_CHECKS.ping, HEALTH_CHECKS.d1],
  readyz: [HEALTH_CHECKS.ping, HEALTH_CHECKS.d1, HEALTH_CHECKS.migrations, HEALTH_CHECKS.scheduler],
  healthz: [HEALTH_CHECKS.ping, HEALTH_CHECKS.d1, HEALTH_CHECKS.migrations, HEALTH_CHECKS.scheduler],
};

/** Runs one check within {@link CHECK_TIMEOUT_MS}; resolves the failure's message, or null when it passed. */
export async function runCheck(check: HealthCheck, env: Env): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check.check(env), timeout]);
    return null;
  } catch (e) {
    if (e instanceof CheckFailed) return e.message;
    // An unexpected error's own text may hold anything: only its kind is said.
    return `${check.name} check failed (${e instanceof Error ? e.name : "error"})`;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

function text(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff", "cache-control": "no-store" },
  });
}

/**
 * Answers an endpoint `name` with `checks` as kube-apiserver does (see the module comment):
 * `query` is the request's query (`verbose`, `exclude`).
 */
export async function healthAnswer(name: string, checks: readonly HealthCheck[], env: Env, query: URLSearchParams): Promise<Response> {
  const excluded = new Set(
    query
      .getAll("exclude")
      .flatMap((e) => e.split(","))
      .map((e) => e.trim())
      .filter(Boolean),
  );
  const results = await Promise.all(checks.map(async (c) => (excluded.has(c.name) ? "excluded" : await runCheck(c, env))));
  const lines: string[] = [];
  let failed = false;
  checks.forEach((c, i) => {
    const r = results[i];
    excluded.delete(c.name);
    if (r === "excluded") lines.push(`[+]${c.name} excluded: ok`);
    else if (r === null) lines.push(`[+]${c.name} ok`);
    else {
      failed = true;
      lines.push(`[-]${c.name} failed: reason withheld`);
    }
  });
  if (excluded.size > 0)
    lines.push(
      `warn: some health checks cannot be excluded: no matches for ${[...excluded]
        .sort()
        .map((e) => JSON.stringify(e))
        .join(",")}`,
    );
  if (failed) {
    checks.forEach((c, i) => {
      const r = results[i];
      if (r && r !== "excluded") console.error(`${name} check ${c.name} failed: ${r}`);
    });
    return text(`${lines.join("\n")}\n${name} check failed\n`, 500);
  }
  if (!query.has("verbose")) return text("ok");
  return text(`${lines.join("\n")}\n${name} check passed\n`);
}

/** The health routes (mount with `app.route("/", healthRoutes())`); see the module comment. */
export function healthRoutes(): Hono<{ Bindings: Env }> {
  const app = new Hono<{ Bindings: Env }>({ strict: false });
  for (const name of ["livez", "readyz", "healthz"] as const) {
    const checks = ENDPOINT_CHECKS[name];
    app.get(`/${name}`, (c) => healthAnswer(name, checks, c.env, new URL(c.req.url).searchParams));
    app.get(`/${name}/:check`, async (c: Context<{ Bindings: Env }>) => {
      const check = checks.find((x) => x.name === c.req.param("check"));
      if (!check) return c.notFound();
      const failure = await runCheck(check, c.env);
      return failure === null ? text("ok") : text(`internal server error: ${failure}\n`, 500);
    });
  }
  return app;
}
