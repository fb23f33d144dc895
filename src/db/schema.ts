/**
 * The D1 index (drizzle). D1 is where objects are listed and selected, and where every write
 * commits; the per-cluster Durable Object serialises its ManagedCluster's writes and commits
 * them here before it keeps its own copy.
 */
import { sql } from "drizzle-orm";
import { sqliteTable, text, integer, primaryKey, uniqueIndex, index } from "drizzle-orm/sqlite-core";

/**
 * Every served object, one row each. `resource` is `<group>/<plural>` (version-independent),
 * `namespace` is "" for cluster-scoped kinds. `body` is the object's JSON without
 * `metadata.resourceVersion`, which lives in `resource_version` (a value of the global counter).
 * `spec_ref`, when set, names the row of {@link sharedSpecs} that holds the object's spec (its
 * body then has `"spec":null` in the spec's place): a kind with `KindDefinition.sharedSpec`
 * (ManifestWorks) whose spec is large (migration 0013).
 */
export const objects = sqliteTable(
  "objects",
  {
    resource: text("resource").notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    uid: text("uid").notNull(),
    resourceVersion: integer("resource_version").notNull(),
    body: text("body").notNull(),
    specRef: text("spec_ref"),
    /**
     * Set when the body is too large for one D1 row (migration 0015): the key of its pieces in
     * `body_chunks`, `body` then holds the object's stub (src/store/d1/objects.ts `storedBody`).
     */
    bodyRef: text("body_ref"),
  },
  (t) => [
    primaryKey({ columns: [t.resource, t.namespace, t.name] }),
    index("objects_spec_ref")
      .on(t.specRef)
      .where(sql`spec_ref IS NOT NULL`),
    index("objects_body_ref")
      .on(t.bodyRef)
      .where(sql`body_ref IS NOT NULL`),
  ],
);

/**
 * Bodies too large for one D1 row (over 2 MB, D1's limit: src/store/d1/limits.ts), kept in pieces
 * of at most a row each (migration 0015): `hash` is the SHA-256 (hex) of the whole body, the
 * `body_ref` of the object rows and watch events that carry it; `seq` orders its pieces (from 0).
 * `orphaned_at`, as for shared specs: the resourceVersion at which a sweep found no object row
 * referring to the body (NULL while one does); it goes once the event log no longer reaches back.
 */
export const bodyChunks = sqliteTable(
  "body_chunks",
  {
    hash: text("hash").notNull(),
    seq: integer("seq").notNull(),
    body: text("body").notNull(),
    orphanedAt: integer("orphaned_at"),
  },
  (t) => [primaryKey({ columns: [t.hash, t.seq] })],
);

/**
 * Specs stored once for the objects that share them (migration 0013; src/store/d1/objects.ts):
 * `hash` is the SHA-256 (hex) of `body`, the spec's JSON text, and the `spec_ref` of the object
 * rows and watch events that carry it. Written (if absent) in the batch of the first write that
 * references it. `orphaned_at`: the resourceVersion at which a sweep found no object row
 * referencing it (NULL while one does, or since one does again); the row goes once the event log
 * was pruned past it, so no watch event refers to it any more.
 */
export const sharedSpecs = sqliteTable("shared_specs", {
  hash: text("hash").primaryKey(),
  body: text("body").notNull(),
  orphanedAt: integer("orphaned_at"),
});

/**
 * The global resourceVersion counter (row id 1; the other rows are kinds' change counters): moved
 * to the newest watch event once at the end of each commit batch, whose writes take the watch
 * log's next versions (migrations/0017_counter_per_batch.sql, src/store/d1/objects.ts `logHead`).
 */
export const counters = sqliteTable("counters", {
  id: integer("id").primaryKey(),
  value: integer("value").notNull(),
});

/**
 * Cluster identities (Karmada's ClusterID, KEP-2149): one cluster ID per cluster name and one
 * name per cluster ID, enforced by the unique constraints rather than a read-then-write check.
 */
export const clusterIdentities = sqliteTable(
  "cluster_identities",
  {
    name: text("name").primaryKey(),
    clusterId: text("cluster_id").notNull(),
  },
  (t) => [uniqueIndex("cluster_identities_cluster_id").on(t.clusterId)],
);

/**
 * The change log that watches read: one row per committed write, written in the same batch as the
 * write, with the object as it was after the write (before, for DELETED). Old rows are pruned;
 * a watch from a resourceVersion older than the oldest row gets 410 Expired.
 */
export const events = sqliteTable(
  "events",
  {
    resourceVersion: integer("resource_version").primaryKey(),
    resource: text("resource").notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    type: text("type").notNull(),
    body: text("body").notNull(),
    /** The object row's `spec_ref` as the write left it (as it was, for DELETED). */
    specRef: text("spec_ref"),
    /** The object row's `body_ref` as the write left it (as it was, for DELETED). */
    bodyRef: text("body_ref"),
  },
  (t) => [index("events_resource").on(t.resource, t.resourceVersion)],
);

/**
 * Delivery IDs a WebhookReceiver has acted on (`X-Delivery-Id`, `X-GitHub-Delivery`), for replay
 * protection: the primary key makes recording a delivery an atomic claim
 * (`INSERT ... ON CONFLICT DO NOTHING RETURNING`), so a delivery is acted on at most once.
 * `received_at` is epoch milliseconds; rows older than the retention (src/store/d1/deliveries.ts,
 * `DELIVERY_RETENTION_SECONDS`) are pruned.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    receiverUid: text("receiver_uid").notNull(),
    deliveryId: text("delivery_id").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.receiverUid, t.deliveryId] }), index("webhook_deliveries_received_at").on(t.receivedAt)],
);

/**
 * The after-commit outbox: what a committed write still owes its after-commit hooks
 * (src/store/hooks.ts). A row is inserted in the same atomic batch as the write it belongs to,
 * and deleted once every hook it names has finished; a row left behind by a crash or a failed
 * hook is run again by a sweep (src/store/outbox.ts). `id` is a random UUID; `resource_version`
 * is the write's resourceVersion (the order rows are swept in); `hooks` is JSON, hook name to
 * what it owes (e.g. the scheduler's Trigger). `created_at` and `due_at` are epoch milliseconds:
 * a sweep takes a row once `due_at` has passed (the writer runs its own hooks before that), and
 * a sweep at an isolate's start takes every row committed before the isolate started.
 * `attempts` counts sweeps that took the row (their backoff).
 * The table is WITHOUT ROWID and has no secondary index (migrations/0006_outbox_lean.sql): D1
 * bills every index entry an insert writes, and the table holds only the writes in flight, so
 * the sweeps scan it.
 */
export const outbox = sqliteTable("outbox", {
  id: text("id").primaryKey(),
  resourceVersion: integer("resource_version").notNull(),
  resource: text("resource").notNull(),
  namespace: text("namespace").notNull(),
  name: text("name").notNull(),
  hooks: text("hooks").notNull(),
  createdAt: integer("created_at").notNull(),
  dueAt: integer("due_at").notNull(),
  attempts: integer("attempts").notNull().default(0),
});

/**
 * The owner index (src/gc/controller.ts): which objects (`resource`, `namespace`, `name`) name the
 * owner with UID `ownerUid` in their ownerReferences. Written in the batch of each write that
 * changes an object's references (src/store/d1/write.ts), so an owner's dependents are one lookup.
 * The table is WITHOUT ROWID (migrations/0014_index_tables_lean.sql): its primary key is the
 * table, so a reference costs 2 rows written (the table, `owner_references_dependent`), not 3.
 */
export const ownerReferences = sqliteTable(
  "owner_references",
  {
    ownerUid: text("owner_uid").notNull(),
    resource: text("resource").notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
  },
  (t) => [primaryKey({ columns: [t.ownerUid, t.resource, t.namespace, t.name] }), index("owner_references_dependent").on(t.resource, t.namespace, t.name)],
);

/**
 * The label index (src/store/d1/objects.ts `listPage`): an object's (`resource`, `namespace`, `name`)
 * labels, one row per key. Written in the batch of each write that changes the object's labels
 * (src/store/d1/write.ts), so a labelSelector list reads the rows its selector names.
 * The table is WITHOUT ROWID (migrations/0014_index_tables_lean.sql): its primary key is the
 * table, so a label costs 2 rows written (the table, `labels_selector`), not 3.
 */
export const labels = sqliteTable(
  "labels",
  {
    resource: text("resource").notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.resource, t.namespace, t.name, t.key] }), index("labels_selector").on(t.resource, t.key, t.value, t.namespace, t.name)],
);

/**
 * Secrets the hub generates for itself (the ServiceAccount token signing key when
 * `FLOTILLA_SERVICE_ACCOUNT_KEYS` is unset, src/auth/serviceaccounts.ts): `value` sealed with the
 * Secrets' encryption keys (src/k8s/encryption.ts), `createdAt` epoch milliseconds.
 */
export const hubSecrets = sqliteTable("hub_secrets", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * How many ManagedClusters each ManagedClusterSet selects (src/clusterprofile/set-counts.ts), for
 * its `ClusterSetEmpty` condition: `requirements` is the set's selector as a JSON array of
 * `{k: key, o: "in"|"notin"|"exists"|"!"|"none", v: values}` (AND; "none" matches nothing),
 * `clusters` the count. Changed by +1/-1 in the same batch as each ManagedCluster write that
 * makes the cluster enter or leave the set, and counted anew in the batch of the set's own
 * write when its selector changes, so it is exact whatever the order of the writes.
 */
export const clustersetCounts = sqliteTable("clusterset_counts", {
  name: text("name").primaryKey(),
  requirements: text("requirements").notNull(),
  clusters: integer("clusters").notNull(),
  /** 1 for a row migration 0011 wrote: counted once more before its first use (the previous release may have written clusters meanwhile). */
  recount: integer("recount").notNull().default(0),
});

/**
 * When each Event was last written (epoch milliseconds), in the same batch as every write of it
 * (src/events/controller.ts), indexed so that the expiry (src/events/expiry.ts) reads the oldest
 * first, a bounded number at a time: kube-apiserver's `--event-ttl` without a scan of all Events.
 * Migration 0012; WITHOUT ROWID since migrations/0016_event_ttl_lean.sql (its primary key is the
 * table, so a row costs 2 rows written, the table and `event_ttl_written_at`, not 3).
 */
export const eventTtl = sqliteTable(
  "event_ttl",
  {
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    writtenAt: integer("written_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.namespace, t.name] }), index("event_ttl_written_at").on(t.writtenAt)],
);
