/**
 * The reads of Karmada's override policies for a renderer (docs/overrides.md): every
 * ClusterOverridePolicy and the OverridePolicies of the namespaces its objects are in, as the
 * source src/overrides/karmada.ts compiles them.
 *
 * Freshness, as the placement lists' (src/fleet/placement-lists.ts): every write of either kind
 * sets the `counters` row {@link OVERRIDE_POLICY_CHANGE_COUNTER} to its resourceVersion in the
 * write's own D1 batch (`KindDefinition.changeCounter`). A read reads that one row by key and lists
 * both kinds (every namespace) again only when it differs from the value the isolate's lists were
 * read at, so a policy committed before the read is always seen, and while no policy changed a
 * render costs one D1 read by key instead of one or two lists.
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ClusterOverridePolicyKind, OVERRIDE_POLICY_CHANGE_COUNTER, OverridePolicyKind, type OverrideSpec } from "../kinds/karmada-override.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
import { storageOf } from "../store/storage.ts";
import type { KarmadaPolicy } from "./karmada.ts";

/** An OverridePolicy or ClusterOverridePolicy object as the source reads it. */
export function karmadaPolicyOf(o: KubeObject): KarmadaPolicy {
  const namespace = o.metadata.namespace ?? "";
  return {
    kind: namespace ? "OverridePolicy" : "ClusterOverridePolicy",
    namespace,
    name: o.metadata.name,
    spec: (o.spec ?? {}) as OverrideSpec,
  };
}

/** The isolate's policies (read only, shared) and the change counter's value read before they were listed. */
let cached: { counter: number; cops: readonly KarmadaPolicy[]; ops: readonly KarmadaPolicy[] } | null = null;

/** How many times this isolate listed the two kinds ({@link readKarmadaPolicies} found its lists stale): for tests and benchmarks. */
let listings = 0;

/** How many times this isolate listed the override policies since it started (see {@link readKarmadaPolicies}). */
export function karmadaPolicyListings(): number {
  return listings;
}

/**
 * Every ClusterOverridePolicy (none when `cluster` is false) and the OverridePolicies of
 * `namespaces`, each in the store's order: one D1 read by key of the change counter, and the two
 * lists again only when it moved since the isolate last listed them (see the module comment).
 * @throws errors of D1
 */
export async function readKarmadaPolicies(env: Env, namespaces: ReadonlySet<string>, cluster = true): Promise<KarmadaPolicy[]> {
  const counter = await storageOf(env).changeCounter(OVERRIDE_POLICY_CHANGE_COUNTER);
  let lists = cached && cached.counter === counter ? cached : null;
  if (!lists) {
    listings++;
    const [cops, ops] = await Promise.all(
      [ClusterOverridePolicyKind, OverridePolicyKind].map(async (def) => (await admittedStoreOf(env, def).list()).items.map(karmadaPolicyOf)),
    );
    lists = { counter, cops: cops!, ops: ops! };
    // A read that saw an older counter never replaces lists read at a newer one.
    if (!cached || cached.counter <= counter) cached = lists;
  }
  return [...(cluster ? lists.cops : []), ...lists.ops.filter((p) => namespaces.has(p.namespace))];
}
