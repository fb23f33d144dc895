/**
 * The limits of watches that clients and tests rely on (README.md "Limits"), apart from
 * src/api/watch.ts so that Node-side code (the end-to-end tests) can import them without the
 * Worker's modules.
 */

/**
 * Most watches one client may hold open at once in one isolate: room for a controller's informers
 * on every kind, `kubectl get -w` sessions and a dashboard, while one client's idle watches (one
 * D1 read per second each) stay bounded.
 */
export const MAX_WATCHES_PER_CLIENT = 50;
/**
 * Longest time, in seconds, from a client leaving to its watch's place being free again, as the
 * README states it: about 2 s under wrangler dev (src/api/watch.ts `WATCH_KEEPALIVE_POLLS`), with room
 * for polls slowed by load.
 */
export const WATCH_GONE_FREED_SECONDS = 10;
