/**
 * Brings the isolate's custom resources' kinds (src/kinds/index.ts, "How kind lookup finds
 * them") up to date with the stored CustomResourceDefinitions. Apart from src/kinds/index.ts so
 * that the kinds' list reads no storage (the Node programs and unit tests import it).
 */
import type { Env } from "../env.ts";
import { storageOf } from "../store/storage.ts";
import { storeOf } from "../store/store.ts";
import { CRD_CHANGE_COUNTER } from "./crd.ts";
import { CustomResourceDefinitionKind, customKindsVersion, setCustomKinds } from "./index.ts";

/**
 * One D1 read by key (the CRD change counter, which every CRD write sets to its resourceVersion in
 * its own batch); only when it moved since the isolate's cache was built, one list of the CRDs
 * and the kinds of those that changed rebuilt. The API calls it on every request (src/api/builtins.ts);
 * a controller in another isolate calls it before it looks a custom kind up.
 * @throws errors of D1
 */
export async function syncCustomKinds(env: Env): Promise<void> {
  const counter = await storageOf(env).changeCounter(CRD_CHANGE_COUNTER);
  if (counter === customKindsVersion()) return;
  const crds = (await storeOf(env, CustomResourceDefinitionKind).list()).items;
  setCustomKinds(crds, counter);
}
