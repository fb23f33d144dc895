/**
 * The reads of Karmada's override policies for a renderer (docs/overrides.md): every
 * ClusterOverridePolicy and the OverridePolicies of the namespaces its objects are in, as the
 * source src/overrides/karmada.ts compiles them. One list per kind (the OverridePolicies of one
 * namespace by its own list; of several, one list filtered).
 */
import type { KubeObject } from "../k8s/meta.ts";
import { ClusterOverridePolicyKind, OverridePolicyKind, type OverrideSpec } from "../kinds/karmada-override.ts";
import type { Env } from "../env.ts";
import { admittedStoreOf } from "../admission/store.ts";
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

/**
 * Every ClusterOverridePolicy (none when `cluster` is false) and the OverridePolicies of `namespaces`.
 * @throws errors of D1
 */
export async function readKarmadaPolicies(env: Env, namespaces: ReadonlySet<string>, cluster = true): Promise<KarmadaPolicy[]> {
  const [cops, ops] = await Promise.all([
    cluster ? admittedStoreOf(env, ClusterOverridePolicyKind).list() : Promise.resolve({ items: [] as KubeObject[] }),
    namespaces.size === 0
      ? Promise.resolve({ items: [] as KubeObject[] })
      : admittedStoreOf(env, OverridePolicyKind).list(namespaces.size === 1 ? [...namespaces][0] : undefined),
  ]);
  return [...cops.items, ...ops.items.filter((o) => namespaces.has(o.metadata.namespace ?? ""))].map(karmadaPolicyOf);
}
