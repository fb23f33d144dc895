/**
 * A replica set object's copy of its ManifestWorks (OCM's controller reads them from the
 * ManifestWork informer's lister; here the replica set's Durable Object keeps them between runs),
 * and each work's spec in canonical form, computed once per work object.
 */
import type { KubeObject } from "../../k8s/meta.ts";
import { canonicalJson } from "../../k8s/canonical-json.ts";

/** How long a {@link WorksCache} is trusted before a run reads the works again, in milliseconds. */
export const WORKS_RESYNC_MS = 60_000;

/**
 * A work's spec in canonical form (object keys sorted: src/k8s/canonical-json.ts),
 * computed once per work object: the replica set object keeps its works between runs
 * ({@link WorksCache}), so a run compares each with the template without serialising every work
 * again.
 */
const specJsonOf = new WeakMap<KubeObject, string>();

/** `w.spec` (or `{}`) as canonical JSON text, remembered per object (a work is never mutated once stored). */
export function specJson(w: KubeObject): string {
  let json = specJsonOf.get(w);
  if (json === undefined) {
    json = canonicalJson(w.spec ?? {});
    specJsonOf.set(w, json);
  }
  return json;
}

/**
 * A replica set object's copy of the ManifestWorks named after its replica set, one per cluster
 * namespace, so that a run reads none of them back: filled by a run's full read (when empty,
 * stale, or invalidated), then kept by the run's own writes and by the works the after-commit hook
 * hands over (an agent's status report carries the work as stored). A write of a work that reaches
 * the object without the work (a hook run again by the outbox sweep), a lost write race, or
 * {@link WORKS_RESYNC_MS} without a full read empties it, as an informer relists; a newer
 * resourceVersion never gives way to an older one.
 */
export class WorksCache {
  private works: Map<string, KubeObject> | null = null;
  private filledAt = 0;

  /** The works held (any owner's), or null when a run must read them (`now` epoch ms). */
  current(now: number): KubeObject[] | null {
    if (!this.works || now - this.filledAt > WORKS_RESYNC_MS) return null;
    return [...this.works.values()];
  }

  /** Replaces what is held with a full read made at `now` (epoch ms). */
  fill(works: KubeObject[], now: number): void {
    this.works = new Map(works.map((w) => [w.metadata.namespace!, w]));
    this.filledAt = now;
  }

  /**
   * Takes a work as stored (kept only when newer than the copy held). A work of the same uid and
   * generation as the copy held has its spec (a ManifestWork's generation moves with its spec: an
   * agent's status report keeps it), so the copy's {@link specJson} is carried over, not computed again.
   */
  apply(work: KubeObject): void {
    if (!this.works) return;
    const held = this.works.get(work.metadata.namespace!);
    if (held && Number(held.metadata.resourceVersion) > Number(work.metadata.resourceVersion)) return;
    const json = held && held.metadata.uid === work.metadata.uid && held.metadata.generation === work.metadata.generation ? specJsonOf.get(held) : undefined;
    if (json !== undefined && !specJsonOf.has(work)) specJsonOf.set(work, json);
    this.works.set(work.metadata.namespace!, work);
  }

  /** Drops the work of `cluster` (removed). */
  remove(cluster: string): void {
    this.works?.delete(cluster);
  }

  /** Forgets everything: the next run reads the works again. */
  invalidate(): void {
    this.works = null;
  }
}
