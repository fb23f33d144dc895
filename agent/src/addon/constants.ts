/**
 * The add-on agent's timings and bounds (./controller.ts), apart so that the command line reads its
 * defaults without loading the add-on agent itself.
 */

/** OCM's add-on lease check period (`AddOnLeaseControllerSyncInterval`), milliseconds. */
export const ADDON_LEASE_SYNC_INTERVAL_MS = 30_000;
/**
 * How long a Lease may go without renewal before the add-on is unavailable, milliseconds: OCM's
 * `leaseDurationTimes` (5) x `AddOnLeaseControllerLeaseDurationSeconds` (60 s).
 */
export const ADDON_LEASE_GRACE_MS = 5 * 60_000;
/** OCM's default lifetime of an add-on token (`--addon-token-expiration-seconds`: one year), seconds. */
export const DEFAULT_ADDON_TOKEN_EXPIRATION_SECONDS = 31_536_000;
/** OCM's `RefreshThreshold`: a token with this share of its lifetime or less left is replaced. */
export const TOKEN_REFRESH_THRESHOLD = 0.2;
/** How long the agent waits before asking again for a token the hub refused (4xx), milliseconds. */
export const TOKEN_REFUSED_RETRY_MS = 5 * 60_000;
