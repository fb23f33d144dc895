/**
 * The ManifestWorks a placement renders for each cluster it decides (docs/kubefleet.md "Works the
 * placement controller renders"): the snapshot's objects (envelopes opened: their `data` objects
 * are placed, not the envelope) split into works of at most {@link WORK_CHUNK_BYTES} of manifests,
 * named as KubeFleet names its Works (`<base>-work`, then `<base>-1`, `<base>-2`, ...), each with
 * the applyStrategy as OCM's `manifestConfigs` and as the `kubernetes-fleet.io/apply-strategy`
 * annotation, and the deleteStrategy as OCM's `deleteOption`. Pure: every cluster gets the same
 * specs, so a placement renders once per run, not once per cluster.
 */
import type { KubeObject } from "../k8s/meta.ts";
import type { RolloutStrategy } from "../kinds/fleet-validation.ts";
import { APPLY_STRATEGY_ANNOTATION, UNAVAILABLE_PERIOD_ANNOTATION } from "../kinds/fleet.ts";

/** At most this many bytes of manifests (as JSON) go into one work (OCM's limit is 500 KiB). */
export const WORK_CHUNK_BYTES = 400 * 1024;

/** One object to place: the object as dispatched, and its plural resource name (for `manifestConfigs`). */
export interface Manifest {
  object: KubeObject;
  resource: string;
  /** The envelope it came out of, if any. */
  envelope?: { name: string; namespace?: string; type: "ClusterResourceEnvelope" | "ResourceEnvelope" };
}

/** A rendered work: its name, spec and the annotations that carry KubeFleet's strategy. */
export interface RenderedWork {
  name: string;
  spec: Record<string, unknown>;
  annotations: Record<string, string>;
}

/** KubeFleet's work names: `<base>-work` first (`FirstWorkNameFmt`), then `<base>-<i>` (`WorkNameWithSubindexFmt`). */
export function workName(base: string, index: number): string {
  return index === 0 ? `${base}-work` : `${base}-${index}`;
}

/** A lower-case plural for a kind the hub does not serve (an enveloped webhook configuration): as kubectl guesses it. */
export function guessPlural(kind: string): string {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/** The applyStrategy with KubeFleet's defaults (`SetDefaultsApplyStrategy`), keys in a fixed order (docs/kubefleet.md). */
export function applyStrategyOf(strategy: RolloutStrategy | undefined): Record<string, unknown> {
  const a = strategy?.applyStrategy ?? {};
  const type = a.type ?? "ClientSideApply";
  return {
    comparisonOption: a.comparisonOption ?? "PartialComparison",
    whenToApply: a.whenToApply ?? "Always",
    type,
    allowCoOwnership: a.allowCoOwnership ?? false,
    ...(type === "ServerSideApply" ? { serverSideApplyConfig: { force: a.serverSideApplyConfig?.force ?? false } } : {}),
    whenToTakeOver: a.whenToTakeOver ?? "Always",
  };
}

function manifestConfig(m: Manifest, apply: Record<string, unknown>): Record<string, unknown> {
  const group = m.object.apiVersion.includes("/") ? m.object.apiVersion.slice(0, m.object.apiVersion.indexOf("/")) : "";
  const updateStrategy =
    apply.type === "ServerSideApply"
      ? { type: "ServerSideApply", serverSideApply: { force: (apply.serverSideApplyConfig as { force: boolean }).force, fieldManager: "work-agent" } }
      : { type: "Update" };
  return {
    resourceIdentifier: {
      group,
      resource: m.resource,
      name: m.object.metadata.name,
      ...(m.object.metadata.namespace ? { namespace: m.object.metadata.namespace } : {}),
    },
    updateStrategy,
  };
}

/**
 * Renders the works of one placement: `base` is `<crp>` or `<namespace>.<rp>`; an empty selection
 * renders no work. Objects are kept in the snapshot's order (KubeFleet's apply order) and a work
 * closes before the object that would take it over {@link WORK_CHUNK_BYTES}.
 */
export function renderWorks(base: string, manifests: readonly Manifest[], strategy: RolloutStrategy | undefined): RenderedWork[] {
  const apply = applyStrategyOf(strategy);
  const annotations: Record<string, string> = {
    [APPLY_STRATEGY_ANNOTATION]: JSON.stringify(apply),
    [UNAVAILABLE_PERIOD_ANNOTATION]: String(strategy?.rollingUpdate?.unavailablePeriodSeconds ?? 60),
  };
  const abandon = strategy?.deleteStrategy?.propagationPolicy === "Abandon";
  const chunks: Manifest[][] = [];
  let size = 0;
  for (const m of manifests) {
    const bytes = JSON.stringify(m.object).length;
    if (chunks.length === 0 || (size + bytes > WORK_CHUNK_BYTES && chunks[chunks.length - 1]!.length > 0)) {
      chunks.push([]);
      size = 0;
    }
    chunks[chunks.length - 1]!.push(m);
    size += bytes;
  }
  return chunks.map((chunk, i) => ({
    name: workName(base, i),
    annotations: { ...annotations },
    spec: {
      workload: { manifests: chunk.map((m) => m.object) },
      manifestConfigs: chunk.map((m) => manifestConfig(m, apply)),
      ...(abandon ? { deleteOption: { propagationPolicy: "Orphan" } } : {}),
    },
  }));
}
