-- The Events' expiry index costs fewer rows written (docs/scale.md "Where a create's rows, calls
-- and hub CPU go"): `event_ttl` becomes a WITHOUT ROWID table keyed by its primary key (one
-- B-tree, no separate primary-key index beside a rowid table), as the outbox (0006) and the label
-- and owner indexes (0014) are. D1 bills each index entry a write touches as a row written, so an
-- Event's expiry row now costs 2 rows (the table, `event_ttl_written_at`) instead of 3: at a
-- KubeFleet placement's create, 1 row fewer per cluster (the agent's `ManifestWorkApplied` Event).
-- The rows and the reads they answer (the oldest first, by key) are the same; the index is made
-- again on the new table.
CREATE TABLE `event_ttl_lean` (
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`written_at` integer NOT NULL,
	PRIMARY KEY (`namespace`, `name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `event_ttl_lean` SELECT `namespace`, `name`, `written_at` FROM `event_ttl`;
--> statement-breakpoint
DROP TABLE `event_ttl`;
--> statement-breakpoint
ALTER TABLE `event_ttl_lean` RENAME TO `event_ttl`;
--> statement-breakpoint
CREATE INDEX `event_ttl_written_at` ON `event_ttl` (`written_at`);
