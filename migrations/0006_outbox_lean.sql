-- The outbox row costs fewer rows written (docs/scale.md "Design B as built"): a WITHOUT ROWID
-- table keyed by its id (one B-tree, no separate primary-key index) and no secondary indexes.
-- D1 bills each index entry of an insert as a row written, so an outbox row now costs 1 row to
-- insert and 1 to delete instead of 4 and 1. The table holds only the rows of writes in flight
-- (deleted once their hooks finished), so the sweeps' reads by due_at and created_at scan a few
-- rows, not an index.
CREATE TABLE `outbox_lean` (
	`id` text PRIMARY KEY NOT NULL,
	`resource_version` integer NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`hooks` text NOT NULL,
	`created_at` integer NOT NULL,
	`due_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `outbox_lean` SELECT `id`, `resource_version`, `resource`, `namespace`, `name`, `hooks`, `created_at`, `due_at`, `attempts` FROM `outbox`;
--> statement-breakpoint
DROP TABLE `outbox`;
--> statement-breakpoint
ALTER TABLE `outbox_lean` RENAME TO `outbox`;
