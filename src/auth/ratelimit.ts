/**
 * Rate limiting of failed authentication (docs/agent-protocol.md "Authentication failures"). What
 * is limited is the evaluation of credentials that fail, never a credential that verifies:
 *
 * - A failure counts against keys an attacker cannot make someone else's: the request's source
 *   address as the runtime gives it (`CF-Connecting-IP`, which Cloudflare's edge sets; an IPv6
 *   address by its /64, what one subscriber holds), per kind of credential check (`api`, `agent`,
 *   `register`), and the presented credential itself (a hash of the whole bearer token: only
 *   whoever holds a secret can present it). Never the cluster or token ID a request names.
 * - A credential the Worker verifies without I/O (the admin token, an agent JWT with a valid key
 *   tag) is always evaluated: it is served when it verifies, whatever is limited.
 * - A check that costs I/O (a bootstrap token's D1 read, an agent JWT without a valid key tag,
 *   which costs a D1 read and its cluster's Durable Object) first calls `costly()`, which refuses
 *   when one of the request's keys is limited, so a limited client makes the hub read nothing.
 * - A failure on a limited key is answered 429 with `Retry-After` instead of 401.
 *
 * The counter is Cloudflare's Rate Limiting binding (`AUTH_FAILURES` in wrangler.toml: 50 failures
 * per 60 s per key, per Cloudflare location); once the binding says a key is over its limit, the
 * isolate remembers it for a period, so its later requests need no call to the binding.
 */
import { Address6 } from "ip-address";
import { ApiError, tooManyRequests } from "../k8s/errors.ts";
import { sha256Hex } from "../kinds/bootstraptoken.ts";
import type { Env } from "../env.ts";

/** The binding's period in seconds (wrangler.toml `[[ratelimits]] simple.period`), sent as `Retry-After`. */
export const AUTH_FAILURE_PERIOD_SECONDS = 60;
/** Most keys the isolate remembers as limited (oldest dropped first), so the memo stays bounded. */
const MAX_REMEMBERED = 10_000;

/** Limited keys and until when, epoch milliseconds. */
const limitedUntil = new Map<string, number>();

/**
 * The kind of credential check a failure counts against, so that failures of one kind (wrong admin
 * tokens, say) never delay a check of another (a registration) from the same address: `api` the
 * Kubernetes-shaped API (`/api`, `/apis`), `agent` an agent's calls, `register` a registration.
 */
export type CheckKind = "api" | "agent" | "register";

/**
 * The source address a request's failures count against: `CF-Connecting-IP`, which Cloudflare's
 * edge sets to the connecting client's address (a client cannot set it); locally `wrangler dev`
 * sets it to the socket's address (127.0.0.1) unless the client sent one. An IPv6 address counts
 * by its /64 prefix (written `2001:db8::/64`), since one subscriber usually holds a whole /64; an
 * IPv4-mapped IPv6 address counts as its IPv4 address. "unknown" when the header is absent.
 */
export function sourceAddress(req: Request): string {
  const raw = req.headers.get("cf-connecting-ip")?.trim();
  if (!raw) return "unknown";
  if (!raw.includes(":")) return raw;
  try {
    const v6 = new Address6(`${raw}/64`);
    if (v6.is4()) return v6.to4().correctForm();
    return `${v6.startAddress().correctForm()}/64`;
  } catch {
    return raw;
  }
}

/** What a credential check may ask of the limiter. */
export interface FailureLimit {
  /**
   * Call before the part of a check that costs I/O (a D1 read, a Durable Object call for a token
   * nothing has vouched for yet).
   * @throws ApiError 429 with `Retry-After` when the request's address or presented credential is limited.
   */
  costly(): Promise<void>;
}

function refuse(): ApiError {
  return tooManyRequests("too many failed authentication attempts; try again later", AUTH_FAILURE_PERIOD_SECONDS);
}

function limited(key: string, now: number): boolean {
  const until = limitedUntil.get(key);
  if (until === undefined) return false;
  if (until > now) return true;
  limitedUntil.delete(key);
  return false;
}

function remember(key: string, now: number): void {
  limitedUntil.delete(key);
  if (limitedUntil.size >= MAX_REMEMBERED) limitedUntil.delete(limitedUntil.keys().next().value!);
  limitedUntil.set(key, now + AUTH_FAILURE_PERIOD_SECONDS * 1000);
}

/**
 * Runs the credential check `check` of request `req`, whose bearer token is `presented` (null when
 * it sent none), and limits its failures: a 401 it throws counts against the request's source
 * address for `kind` and against the presented credential, and is answered 429 (with
 * `Retry-After`) once one of them is over its limit. Nothing refuses a check before it runs: only
 * its `costly()` step refuses, while a key is limited. A check that succeeds counts nothing.
 *
 * @param now current time, epoch milliseconds.
 * @throws ApiError 429, or whatever `check` throws.
 */
export async function limitAuthFailures<T>(
  env: Env,
  req: Request,
  kind: CheckKind,
  presented: string | null,
  now: number,
  check: (limit: FailureLimit) => Promise<T>,
): Promise<T> {
  let keys: string[] | undefined;
  const keysOf = async () => {
    keys ??= [`addr:${kind}:${sourceAddress(req)}`, ...(presented ? [`cred:${(await sha256Hex(presented)).slice(0, 32)}`] : [])];
    return keys;
  };
  const limit: FailureLimit = {
    async costly() {
      if ((await keysOf()).some((k) => limited(k, now))) throw refuse();
    },
  };
  try {
    return await check(limit);
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 401) throw e;
    const all = await keysOf();
    if (all.some((k) => limited(k, now))) throw refuse();
    if (!env.AUTH_FAILURES) throw e;
    const outcomes = await Promise.all(all.map((key) => env.AUTH_FAILURES!.limit({ key })));
    let over = false;
    outcomes.forEach((o, i) => {
      if (o.success) return;
      over = true;
      remember(all[i]!, now);
    });
    throw over ? refuse() : e;
  }
}
