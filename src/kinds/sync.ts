/**
 * Brings the isolate's custom resources' kinds (src/kinds/index.ts, "How kind lookup finds
 * them") up to date with the stored CustomResourceDefinitions. Apart from src/kinds/index.ts so
 * that the kinds' list reads no storage (the Node programs and unit tests import it).
 *
 * Two ways, by what the caller can afford:
 * - {@link syncCustomKinds}: checks now (one D1 read by key of the CRD change counter, which
 *   every CRD write sets to its resourceVersion in its own batch; when it moved, one list of the
 *   CRDs and the kinds of those that changed rebuilt). A controller run that walks every kind
 *   calls it first (a placement's selection, a namespace's deletion): it reads much more than that
 *   one row anyway, and a kind missing from the walk would go unnoticed. One that looks single
 *   kinds up (the garbage collector, on every delete of an owned object) calls {@link lookUpKind},
 *   which checks only when the lookup finds nothing.
 * - {@link refreshCustomKinds}: what every API request calls (src/api/builtins.ts). It checks
 *   only when the isolate's last check is older than {@link CUSTOM_KINDS_MAX_AGE_MS}, or when this
 *   isolate has committed a CRD write since (`Storage.localChangeCommits`, in memory), so an API
 *   request costs no D1 read for it otherwise. The API also checks at once when a path names a
 *   kind the isolate does not know (src/api/resources.ts): a request for a new CRD's resources is
 *   served at once whichever isolate created the CRD.
 *
 * The staleness this allows: in an isolate other than the one that wrote it, a CRD change reaches
 * discovery, OpenAPI, the schema a custom resource is validated against, and the kinds a
 * placement's selectors may name, up to {@link CUSTOM_KINDS_MAX_AGE_MS} late. kube-apiserver
 * allows the same: each apiserver of an HA control plane learns of a CRD from its own informer, and
 * apiextensions-apiserver holds a new CRD's `Established` condition back 5 s when there are
 * several (`customresource_handler.go`, `QueueCRD(name, 5*time.Second)`), so that all of them
 * serve it before clients are told to use it; KubeFleet's webhook answers a selector of a kind its
 * discovery has not seen yet "not found in schema (please retry)".
 */
import type { Env } from "../env.ts";
import { clock } from "../clock.ts";
import { storageOf } from "../store/storage.ts";
import { storeOf } from "../store/store.ts";
import { CRD_CHANGE_COUNTER } from "./crd.ts";
import { CustomResourceDefinitionKind, customKindsVersion, setCustomKinds } from "./index.ts";

/**
 * How long (milliseconds) an API request may use the isolate's custom kinds without checking the
 * CRD change counter (see the module comment): kube-apiserver's HA delay before a new CRD is Established.
 */
export const CUSTOM_KINDS_MAX_AGE_MS = 5_000;

/** The isolate's last check: when (`clock.now()`, epoch ms) and its own CRD commits' count then. */
let checked: { at: number; localCommits: number } | undefined;

/**
 * Checks now (see the module comment): one D1 read by key; when the CRD change counter moved
 * since the isolate's cache was built, one list of the CRDs and the kinds of those that changed
 * rebuilt. Returns whether the isolate's custom kinds changed.
 * @throws errors of D1
 */
export async function syncCustomKinds(env: Env): Promise<boolean> {
  const storage = storageOf(env);
  const at = clock.now();
  const localCommits = storage.localChangeCommits(CRD_CHANGE_COUNTER);
  const before = customKindsVersion();
  const counter = await storage.changeCounter(CRD_CHANGE_COUNTER);
  if (counter !== before) setCustomKinds((await storeOf(env, CustomResourceDefinitionKind).list()).items, counter);
  checked = { at, localCommits };
  return customKindsVersion() !== before;
}

/**
 * {@link syncCustomKinds} unless the isolate checked less than `maxAgeMs` ago (by `clock.now()`)
 * and has committed no CRD write since: no read then.
 * @throws errors of D1
 */
export async function refreshCustomKinds(env: Env, maxAgeMs = CUSTOM_KINDS_MAX_AGE_MS): Promise<void> {
  const age = checked ? clock.now() - checked.at : Infinity;
  if (checked && age >= 0 && age < maxAgeMs && checked.localCommits === storageOf(env).localChangeCommits(CRD_CHANGE_COUNTER)) return;
  await syncCustomKinds(env);
}

/**
 * `find()`, and when it finds nothing, once more after {@link syncCustomKinds} if that changed the
 * isolate's custom kinds: a lookup of one kind (by an object's group and kind, an owner
 * reference, a resource key) that costs no read while the kind is known.
 * @throws errors of D1
 */
export async function lookUpKind<T>(env: Env, find: () => T | undefined): Promise<T | undefined> {
  const found = find();
  if (found !== undefined || !(await syncCustomKinds(env))) return found;
  return find();
}
