/**
 * The scheduler view's reads of the store: the cold start (every object of the kinds scheduling reads,
 * page by page, so that 50,000 ManagedClusters never sit in memory as full objects at once),
 * keyed reads of single objects for the changes a trigger names without carrying them, and the
 * `events` log that {@link catchUp} checks the view against.
 */
import { resourceKey, type KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { EVENT_RETENTION, LIST_CHUNK_ROWS } from "../store/store.ts";
import { storageOf } from "../store/storage.ts";
import { admittedStoreOf } from "../admission/store.ts";
import type { Env } from "../env.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import type { Trigger } from "./plan.ts";
import { clusterView } from "./reads.ts";
import { SchedulerView, type ChangeLog, type FollowedResource, type ViewSource } from "./view.ts";

/**
 * Objects per page of a cold-start read: one less than the rows a list query reads at most
 * (src/store/d1/objects.ts `listPage`), so that each page is one query, its last row telling
 * whether more remain (a page of 1,000 took three: 500, 500 and 1 rows).
 */
const PAGE_SIZE = LIST_CHUNK_ROWS - 1;

const KINDS: Record<FollowedResource, KindDefinition> = {
  managedclusters: ManagedClusterKind,
  placements: PlacementKind,
  managedclustersets: ManagedClusterSetKind,
  managedclustersetbindings: ManagedClusterSetBindingKind,
  addonplacementscores: AddOnPlacementScoreKind,
  placementdecisions: PlacementDecisionKind,
};

/** Every object of a kind in (namespace, name) order, PAGE_SIZE objects per page (keyset pagination through the store). */
async function* pages(env: Env, def: KindDefinition): AsyncIterable<KubeObject[]> {
  const store = admittedStoreOf(env, def);
  let after: { namespace: string; name: string } | undefined;
  do {
    const page = await store.listPage(undefined, { after, limit: PAGE_SIZE });
    if (page.items.length > 0) yield page.items;
    after = page.next;
  } while (after);
}

/** The cold-start source over the store. */
function storeSource(env: Env): ViewSource {
  return {
    async *clusters() {
      for await (const page of pages(env, ManagedClusterKind)) yield page.map((c) => ({ view: clusterView(c), resourceVersion: c.metadata.resourceVersion! }));
    },
    objects: (resource) => pages(env, KINDS[resource]),
  };
}

/**
 * Reads the objects a trigger names without carrying them (a write path that passed only the
 * key), one keyed read each, and fills them in. A missing object becomes a delete of the
 * version the view holds.
 */
export async function resolveTrigger(env: Env, view: SchedulerView, trigger: Trigger): Promise<void> {
  for (const c of trigger.clusters ?? []) {
    if (c.after !== undefined) continue;
    const obj = await admittedStoreOf(env, ManagedClusterKind).getCommitted("", c.name);
    c.after = obj ? clusterView(obj) : null;
    c.resourceVersion = obj ? obj.metadata.resourceVersion : String(view.versionOf("managedclusters", "", c.name));
  }
  for (const o of trigger.objects ?? []) {
    if (o.object !== undefined) continue;
    o.object = await admittedStoreOf(env, KINDS[o.resource]).getCommitted(o.namespace, o.name);
    if (!o.object) o.resourceVersion = String(view.versionOf(o.resource, o.namespace, o.name));
  }
}

/** Reads again the objects whose write conflicted in the last run, so the view holds what D1 holds. */
export async function refreshStale(env: Env, view: SchedulerView): Promise<void> {
  for (const s of view.takeStale()) view.applyObject(s.def, s.namespace, s.name, await admittedStoreOf(env, s.def).getCommitted(s.namespace, s.name));
}

/**
 * Builds the view from D1 (the cold start). Returns it with its watermark: the counter read
 * before the first page, so every write up to it is in the view (later ones may be too).
 */
export async function loadView(env: Env): Promise<{ view: SchedulerView; watermark: number }> {
  const watermark = await storageOf(env).resourceVersion();
  return { view: await SchedulerView.build(storeSource(env)), watermark };
}

/** D1's `events` log as a {@link ChangeLog}: one query (and the counter, in the same batch) per check. */
export function d1ChangeLog(env: Env): ChangeLog {
  const storage = storageOf(env);
  const byKey = new Map(Object.entries(KINDS).map(([resource, def]) => [resourceKey(def), resource as FollowedResource]));
  return {
    async since(version) {
      const { latest, changed } = await storage.changedSince([...byKey.keys()], version);
      return {
        latest,
        // Events older than the counter minus EVENT_RETENTION may have been pruned (as a watch's 410).
        expired: version < latest - EVENT_RETENTION,
        changed: changed.map((r) => ({ ...r, resource: byKey.get(r.resource)! })),
      };
    },
    read: (resource, namespace, name) => admittedStoreOf(env, KINDS[resource]).getCommitted(namespace, name),
  };
}
