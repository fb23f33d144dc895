/**
 * The External strategy's gate in the placement controller (src/fleet/controller.ts): a placement
 * whose `strategy.type` is External is rolled out only by staged update runs
 * (src/fleet/updaterun/controller.ts), as KubeFleet's rollout controller leaves such a
 * placement's bindings to its update run controller (`pkg/controllers/rollout`, "External").
 *
 * The placement controller still schedules it (bindings `Scheduled` for the clusters it picks) and
 * removes what it no longer picks; a run moves a cluster by setting its binding's `state: Bound`
 * and `resourceSnapshotName` (KubeFleet's `executeUpdatingStage`), and the placement controller
 * then renders that cluster's works from that snapshot, an older index included (a rollback). A
 * cluster no run has bound gets no works (RolloutStarted False).
 */
import type { KindDefinition } from "../../k8s/kind.ts";
import type { KubeObject } from "../../k8s/meta.ts";
import { admittedStoreOf } from "../../admission/store.ts";
import type { Env } from "../../env.ts";
import { NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION } from "../../kinds/fleet.ts";
import { findKindByKind } from "../../kinds/index.ts";
import type { Selected } from "../select.ts";
import type { RolloutCluster, RolloutStep } from "../rollout.ts";

/** Whether a placement's spec asks for External rollouts (staged update runs). */
export function isExternal(spec: { strategy?: { type?: string } } | undefined): boolean {
  return spec?.strategy?.type === "External";
}

/** The name of a placement's master resource snapshot of `index` (KubeFleet's `ResourceSnapshotNameFmt`, `%s-%d-snapshot`). */
export function resourceSnapshotName(placement: string, index: string | number): string {
  return `${placement}-${index}-snapshot`;
}

/** The index a master resource snapshot's name carries for `placement`, or undefined. */
export function indexOfSnapshotName(placement: string, name: string | undefined): string | undefined {
  if (!name?.startsWith(`${placement}-`) || !name.endsWith("-snapshot")) return undefined;
  const i = name.slice(placement.length + 1, -"-snapshot".length);
  return /^(0|[1-9][0-9]*)$/.test(i) ? i : undefined;
}

/**
 * The resource snapshot index each cluster's binding is bound to by a run: the clusters whose
 * binding is `Bound` (an External placement's bindings are bound only by runs).
 */
export function boundIndexes(placement: string, bindings: readonly KubeObject[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of bindings) {
    const spec = b.spec as { state?: string; targetCluster?: string; resourceSnapshotName?: string } | undefined;
    if (spec?.state !== "Bound" || !spec.targetCluster) continue;
    const i = indexOfSnapshotName(placement, spec.resourceSnapshotName);
    if (i !== undefined) out.set(spec.targetCluster, i);
  }
  return out;
}

/**
 * The objects resource snapshot `index` of a placement holds (its master and sub-snapshots, in
 * order), each with its kind as served now; an object whose kind is no longer served is left out.
 * @returns null when the snapshot is gone (past `revisionHistoryLimit`)
 * @throws errors of D1
 */
export async function snapshotSelection(env: Env, def: KindDefinition, namespace: string, placement: string, index: string): Promise<Selected[] | null> {
  const store = admittedStoreOf(env, def);
  const master = await store.get(namespace, resourceSnapshotName(placement, index));
  if (!master) return null;
  const parts = [master];
  const count = Number(master.metadata.annotations?.[NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION] ?? "1");
  for (let j = 0; j < count - 1; j++) {
    const sub = await store.get(namespace, `${placement}-${index}-${j}`);
    if (!sub) return null;
    parts.push(sub);
  }
  const out: Selected[] = [];
  for (const p of parts) {
    for (const o of ((p.spec as { selectedResources?: KubeObject[] } | undefined)?.selectedResources ?? []) as KubeObject[]) {
      const [g, v] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
      const kind = findKindByKind(g ?? "", v ?? "", o.kind);
      if (kind) out.push({ def: kind, object: o });
    }
  }
  return out;
}

/**
 * The rollout step of an External placement: a picked cluster a run bound gets its bound index
 * at once (the run paces them: `maxConcurrency`), a cluster no run bound is held back, a cluster
 * no longer picked loses its works (KubeFleet's runs delete such bindings in their deletion stage;
 * here the placement removes them as it does under RollingUpdate, so that a run never waits on them).
 */
export function externalStep(clusters: readonly RolloutCluster[], bound: ReadonlyMap<string, string>): RolloutStep {
  const step: RolloutStep = { add: [], update: [], remove: [], blocked: [] };
  for (const c of [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!c.picked) {
      if (c.work) step.remove.push(c.name);
    } else if (!bound.has(c.name)) step.blocked.push(c.name);
    else if (!c.work) step.add.push(c.name);
    else if (!c.work.current) step.update.push(c.name);
  }
  return step;
}
