/**
 * The warning a ManifestWork created in a namespace that no ManagedCluster owns gets. OCM accepts
 * such a work (its webhook checks nothing about the namespace) and no agent ever applies it; the
 * hub accepts it too, and says so with a Kubernetes `Warning` response header (RFC 7234 warn-code
 * 299), which kubectl prints as `Warning: <message>`.
 *
 * @module
 */
import type { KindDefinition } from "../k8s/kind.ts";
import type { Env } from "../env.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManifestWorkKind } from "../kinds/manifestwork.ts";
import { admittedStoreOf } from "../admission/store.ts";

/** The warning's text for a work in `namespace`. */
export function orphanWorkMessage(namespace: string): string {
  return `no ManagedCluster named "${namespace}" exists: this ManifestWork will not be applied to any cluster until one does (a work's namespace names its cluster)`;
}

/** The kinds whose writes {@link orphanWorkWarning} concerns (the route looks a write's kind up here first). */
export const ORPHAN_WARNED_KINDS: ReadonlySet<KindDefinition> = new Set([ManifestWorkKind]);

/**
 * The warning for a write of `def` in `namespace` that answered `status`: the message when it
 * created a ManifestWork (201) and no ManagedCluster carries the namespace's name, else undefined.
 * One keyed D1 read, for ManifestWork creates only.
 */
export async function orphanWorkWarning(env: Env, def: KindDefinition, namespace: string | undefined, status: number): Promise<string | undefined> {
  if (def !== ManifestWorkKind || status !== 201 || !namespace) return undefined;
  const cluster = await admittedStoreOf(env, ManagedClusterKind).getCommitted("", namespace);
  return cluster ? undefined : orphanWorkMessage(namespace);
}
