/**
 * The scheduler view's reads of D1: the cold start (every object of the kinds scheduling reads,
 * page by page, so that 50,000 ManagedClusters never sit in memory as full objects at once),
 * keyed reads of single objects for the changes a trigger names without carrying them, and the
 * `events` log that {@link catchUp} checks the view against.
 */
import { and, asc, eq, gt, inArray, max, or, type SQL } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { counters, events, objects } from "../db/schema.ts";
import { resourceKey, type KindDefinition } from "../k8s/kind.ts";
import type { KubeObject } from "../k8s/meta.ts";
import { EVENT_RETENTION, getObject } from "../store/d1/objects.ts";
import { ManagedClusterKind } from "../kinds/managedcluster.ts";
import { ManagedClusterSetKind } from "../kinds/managedclusterset.ts";
import { AddOnPlacementScoreKind, ManagedClusterSetBindingKind, PlacementDecisionKind, PlacementKind } from "../kinds/placement.ts";
import type { Trigger } from "./plan.ts";
import { clusterView } from "./reads.ts";
import { SchedulerView, type ChangeLog, type FollowedResource, type ViewSource } from "./view.ts";

/** Rows per page of a cold-start read. */
const PAGE_SIZE = 1000;

const KINDS: Record<FollowedResource, KindDefinition> = {
  managedclusters: ManagedClusterKind,
  placements: PlacementKind,
  managedclustersets: ManagedClusterSetKind,
  managedclustersetbindings: ManagedClusterSetBindingKind,
  addonplacementscores: AddOnPlacementScoreKind,
  placementdecisions: PlacementDecisionKind,
};

/** Every object of a kind in (namespace, name) order, PAGE_SIZE rows per query (keyset pagination). */
async function* pages(db: DrizzleD1Database, def: KindDefinition): AsyncIterable<KubeObject[]> {
  const resource = resourceKey(def);
  let after: { namespace: string; name: string } | null = null;
  for (;;) {
    const where: SQL | undefined = after
      ? and(
          eq(objects.resource, resource),
          or(gt(objects.namespace, after.namespace), and(eq(objects.namespace, after.namespace), gt(objects.name, after.name))),
        )
      : eq(objects.resource, resource);
    const rows: { namespace: string; name: string; body: string; resourceVersion: number }[] = await db
      .select({ namespace: objects.namespace, name: objects.name, body: objects.body, resourceVersion: objects.resourceVersion })
      .from(objects)
      .where(where)
      .orderBy(asc(objects.namespace), asc(objects.name))
      .limit(PAGE_SIZE);
    if (rows.length === 0) return;
    yield rows.map((r) => {
      const o = JSON.parse(r.body) as KubeObject;
      o.metadata.resourceVersion = String(r.resourceVersion);
      return o;
    });
    if (rows.length < PAGE_SIZE) return;
    const last: { namespace: string; name: string } = rows[rows.length - 1]!;
    after = { namespace: last.namespace, name: last.name };
  }
}

/** The cold-start source over D1. */
function d1Source(db: DrizzleD1Database): ViewSource {
  return {
    async *clusters() {
      for await (const page of pages(db, ManagedClusterKind)) yield page.map((c) => ({ view: clusterView(c), resourceVersion: c.metadata.resourceVersion! }));
    },
    objects: (resource) => pages(db, KINDS[resource]),
  };
}

/**
 * Reads the objects a trigger names without carrying them (a write path that passed only the
 * key), one keyed read each, and fills them in. A missing object becomes a delete of the
 * version the view holds.
 */
export async function resolveTrigger(db: DrizzleD1Database, view: SchedulerView, trigger: Trigger): Promise<void> {
  for (const c of trigger.clusters ?? []) {
    if (c.after !== undefined) continue;
    const obj = await getObject(db, ManagedClusterKind, { namespace: "", name: c.name });
    c.after = obj ? clusterView(obj) : null;
    c.resourceVersion = obj ? obj.metadata.resourceVersion : String(view.versionOf("managedclusters", "", c.name));
  }
  for (const o of trigger.objects ?? []) {
    if (o.object !== undefined) continue;
    o.object = await getObject(db, KINDS[o.resource], { namespace: o.namespace, name: o.name });
    if (!o.object) o.resourceVersion = String(view.versionOf(o.resource, o.namespace, o.name));
  }
}

/** Reads again the objects whose write conflicted in the last run, so the view holds what D1 holds. */
export async function refreshStale(db: DrizzleD1Database, view: SchedulerView): Promise<void> {
  for (const s of view.takeStale()) view.applyObject(s.def, s.namespace, s.name, await getObject(db, s.def, { namespace: s.namespace, name: s.name }));
}

/** The latest committed resourceVersion (D1's counter). */
async function latestVersion(db: DrizzleD1Database): Promise<number> {
  const rows = await db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1));
  return rows[0]?.value ?? 0;
}

/**
 * Builds the view from D1 (the cold start). Returns it with its watermark: the counter read
 * before the first page, so every write up to it is in the view (later ones may be too).
 */
export async function loadView(db: DrizzleD1Database): Promise<{ view: SchedulerView; watermark: number }> {
  const watermark = await latestVersion(db);
  return { view: await SchedulerView.build(d1Source(db)), watermark };
}

/** D1's `events` log as a {@link ChangeLog}: one query (and the counter, in the same batch) per check. */
export function d1ChangeLog(db: DrizzleD1Database): ChangeLog {
  const byKey = new Map(Object.entries(KINDS).map(([resource, def]) => [resourceKey(def), resource as FollowedResource]));
  return {
    async since(version) {
      const [rows, counter] = await db.batch([
        db
          .select({ resource: events.resource, namespace: events.namespace, name: events.name, resourceVersion: max(events.resourceVersion) })
          .from(events)
          .where(and(inArray(events.resource, [...byKey.keys()]), gt(events.resourceVersion, version)))
          .groupBy(events.resource, events.namespace, events.name),
        db.select({ value: counters.value }).from(counters).where(eq(counters.id, 1)),
      ]);
      const latest = counter[0]?.value ?? 0;
      return {
        latest,
        // Events older than the counter minus EVENT_RETENTION may have been pruned (as a watch's 410).
        expired: version < latest - EVENT_RETENTION,
        changed: rows.map((r) => ({ resource: byKey.get(r.resource)!, namespace: r.namespace, name: r.name, resourceVersion: r.resourceVersion ?? 0 })),
      };
    },
    read: (resource, namespace, name) => getObject(db, KINDS[resource], { namespace, name }),
  };
}
