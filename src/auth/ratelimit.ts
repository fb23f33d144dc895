/**
 * Rate limiting of failed authentication, per source address and per credential, on every path
 * that checks a credential (admin API, bootstrap registration, agent API). Only failures count:
 * a valid credential is never slowed down. The counter is Cloudflare's Rate Limiting binding
 * (`AUTH_FAILURES` in wrangler.toml: 50 failures per 60 s per key, per Cloudflare location);
 * once a key is over its limit the isolate remembers it for the period and answers 429 before
 * checking any credential, so a guess made while limited is never evaluated.
 */
import { ApiError, tooManyRequests } from "../k8s/errors.ts";
import type { Env } from "../env.ts";

/** The binding's period in seconds (wrangler.toml `[[ratelimits]] simple.period`), sent as `Retry-After`. */
export const AUTH_FAILURE_PERIOD_SECONDS = 60;
/** Most keys the isolate remembers as limited (oldest dropped first), so the memo stays bounded. */
const MAX_REMEMBERED = 10_000;

/** Limited keys and until when, epoch milliseconds. */
const limitedUntil = new Map<string, number>();

/**
 * The keys a request's failures count against: its source address (`CF-Connecting-IP`, as
 * Cloudflare sets it) and, when known, the credential it named (a cluster, a bootstrap token ID).
 */
export function failureKeys(req: Request, credential?: string): string[] {
  const address = req.headers.get("cf-connecting-ip") ?? "unknown";
  return credential ? [`addr:${address}`, `cred:${credential}`] : [`addr:${address}`];
}

function refuse(): ApiError {
  return tooManyRequests("too many failed authentication attempts; try again later", AUTH_FAILURE_PERIOD_SECONDS);
}

/**
 * Runs `authenticate` unless one of `keys` is limited (429 TooManyRequests with `Retry-After`).
 * A 401 it throws is counted against every key; the failure that crosses a limit is answered
 * with 429 instead of 401.
 *
 * @param now current time, epoch milliseconds.
 * @throws ApiError 429, or whatever `authenticate` throws.
 */
export async function limitAuthFailures<T>(env: Env, keys: string[], now: number, authenticate: () => Promise<T>): Promise<T> {
  for (const key of keys) {
    const until = limitedUntil.get(key);
    if (until === undefined) continue;
    if (until > now) throw refuse();
    limitedUntil.delete(key);
  }
  try {
    return await authenticate();
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 401 || !env.AUTH_FAILURES) throw e;
    const outcomes = await Promise.all(keys.map((key) => env.AUTH_FAILURES!.limit({ key })));
    let limited = false;
    outcomes.forEach((o, i) => {
      if (o.success) return;
      limited = true;
      if (limitedUntil.size >= MAX_REMEMBERED) limitedUntil.delete(limitedUntil.keys().next().value!);
      limitedUntil.set(keys[i]!, now + AUTH_FAILURE_PERIOD_SECONDS * 1000);
    });
    throw limited ? refuse() : e;
  }
}
