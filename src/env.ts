/**
 * The Worker's bindings (wrangler.toml): the D1 index, the per-cluster Durable Object namespace
 * and the hub settings.
 */
import type { ClusterObject } from "../durable-objects/cluster.ts";
import type { SchedulerObject } from "../durable-objects/scheduler.ts";
import type { ReplicaSetObject } from "../durable-objects/replicaset.ts";
import type { MetricsObject } from "../durable-objects/metrics.ts";
import type { OidcEnv } from "./auth/oidc.ts";

/**
 * The name of the single scheduler object (`env.SCHEDULER.getByName(SCHEDULER_NAME)`). Here, with
 * the binding, so that a controller that wakes the scheduler imports no Durable Object module.
 */
export const SCHEDULER_NAME = "scheduler";

/**
 * Bindings and variables of the hub Worker; the `FLOTILLA_OIDC_*` settings of OIDC authentication
 * (kube-apiserver's `--oidc-*` flags) are {@link OidcEnv}'s.
 */
export interface Env extends OidcEnv {
  DB: D1Database;
  CLUSTERS: DurableObjectNamespace<ClusterObject>;
  /** The placement scheduler (one object, named {@link SCHEDULER_NAME}). */
  SCHEDULER: DurableObjectNamespace<SchedulerObject>;
  /** The ManifestWorkReplicaSet controller (one object per replica set, named "<namespace>/<name>"). */
  REPLICASETS: DurableObjectNamespace<ReplicaSetObject>;
  /**
   * The counters and histograms of `/metrics` (one object, named "metrics"; src/metrics). Optional:
   * without it events are not counted (a Worker test's own bindings may leave it out).
   */
  METRICS?: DurableObjectNamespace<MetricsObject>;
  /** The admin bearer token (set by `npm start`, or a secret when deployed). */
  FLOTILLA_ADMIN_TOKEN?: string;
  /**
   * The keys that encrypt Secrets at rest (a Worker secret): `id:base64key[,id:base64key...]`, AES
   * keys of 16, 24 or 32 bytes; the first encrypts, all decrypt (src/k8s/encryption.ts).
   */
  FLOTILLA_ENCRYPTION_KEYS?: string;
  /**
   * The keys ServiceAccount tokens are signed with (a Worker secret): a JWK Set whose first key, a
   * private EC P-256 JWK, signs and whose every key verifies (src/auth/serviceaccounts.ts). When
   * unset, the hub generates one key and keeps it in D1, sealed with FLOTILLA_ENCRYPTION_KEYS.
   */
  FLOTILLA_SERVICE_ACCOUNT_KEYS?: string;
  /**
   * The issuer of ServiceAccount tokens (`iss`; kube-apiserver's `--service-account-issuer`), and
   * their default audience; when unset, the hub's URL as each request reached it.
   */
  FLOTILLA_SERVICE_ACCOUNT_ISSUER?: string;
  /**
   * The hub's URL as clients reach it (`https://hub.example.com`), which ClusterProfiles advertise
   * in `status.accessProviders` (the proxy's prefix per cluster; src/clusterprofile/profile.ts);
   * `npm start` sets it to its own URL. Unset: profiles advertise no access.
   */
  FLOTILLA_PUBLIC_URL?: string;
  /**
   * The CA (PEM, base64) that verifies the hub's TLS certificate, advertised with
   * FLOTILLA_PUBLIC_URL as `certificate-authority-data`; `FLOTILLA_HTTPS=1 npm start` sets it to
   * its local CA. Unset when a publicly trusted CA signs the hub's certificate.
   */
  FLOTILLA_PUBLIC_CA_DATA?: string;
  /** Grace multiplier: a lease not renewed for this many leaseDurationSeconds expires (OCM: 5). */
  LEASE_GRACE_MULTIPLIER?: string;
  /** How long a deleted cluster waits for its agent to confirm its leave, in seconds (default 900, KubeFleet's 15 minutes). */
  LEAVE_TIMEOUT_SECONDS?: string;
  /**
   * The secret agent key tags are made with (src/auth/keys.ts); when unset they are derived from
   * the admin token, so changing the admin token costs each agent one D1 read to get a new tag.
   */
  AGENT_KEY_TAG_SECRET?: string;
  /**
   * Days audit records are kept (src/audit/log.ts; `npm start` passes the same-named environment
   * variable): a positive number, default 30.
   */
  FLOTILLA_AUDIT_RETENTION_DAYS?: string;
  /**
   * Seconds an Event is kept after its last write (kube-apiserver's `--event-ttl`; src/events/expiry.ts;
   * `npm start` passes the same-named environment variable): a positive number, default 3600.
   */
  FLOTILLA_EVENT_TTL_SECONDS?: string;
  /**
   * Feature gates, as OCM's `--feature-gates` (src/features.ts): `<Gate>=<bool>,...`, e.g.
   * `NilExecutorValidating=true`; `npm start` passes the same-named environment variable.
   */
  FLOTILLA_FEATURE_GATES?: string;
  /** Counts failed authentications per source address and per presented credential (src/auth/ratelimit.ts). */
  AUTH_FAILURES?: RateLimit;
}
