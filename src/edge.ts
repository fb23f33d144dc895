/**
 * The Cloudflare edge location (colo) a request reached: the IATA-style code of the data centre
 * that ran the Worker (`request.cf.colo`, e.g. `FRA`, `SJC`). Flotilla records it on the audit
 * log's events and, for an agent, on its ManagedCluster, so the fleet can be seen by where its
 * agents are (issue 31). `wrangler dev` fills `request.cf` with a canned location (Miniflare's
 * `DFW` fallback, or the one its cached `cf.json` names), the same for every request: a hub served
 * on a loopback or IP-literal host (a local hub: Cloudflare's edge always serves a host name) has
 * no edge location.
 */
import { requestUrl } from "./k8s/request-url.ts";

/** The annotation holding an edge location: on audit events (the request's) and ManagedClusters (where the agent last reached the hub). */
export const COLO_ANNOTATION = "flotilla.dev/colo";

/** Whether `hostname` (a URL's) is a local hub's: `localhost`, `*.localhost`, or an IPv4 or IPv6 literal. */
export function isLocalHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === "localhost" || h.endsWith(".localhost") || h.startsWith("[") || /^\d{1,3}(\.\d{1,3}){3}$/.test(h);
}

/**
 * The edge location `req` reached, or undefined when the runtime gave none (a request made
 * inside the Worker, a test), one that is not a short upper-case code (2 to 8 letters or digits),
 * or a local hub's canned one (a request to a {@link isLocalHost} host: `wrangler dev`).
 */
export function edgeLocation(req: Request): string | undefined {
  if (isLocalHost(requestUrl(req).hostname)) return undefined;
  const colo = (req as { cf?: { colo?: unknown } }).cf?.colo;
  return typeof colo === "string" && /^[A-Z0-9]{2,8}$/.test(colo) ? colo : undefined;
}

/**
 * Sets `obj`'s edge location annotation to `colo` (nothing when `colo` is undefined) and says
 * whether that changed it: the caller commits only then, so an agent reaching the same location
 * again writes nothing.
 */
export function setEdgeLocation(obj: { metadata: { annotations?: Record<string, string> } }, colo: string | undefined): boolean {
  if (!colo || obj.metadata.annotations?.[COLO_ANNOTATION] === colo) return false;
  (obj.metadata.annotations ??= {})[COLO_ANNOTATION] = colo;
  return true;
}
