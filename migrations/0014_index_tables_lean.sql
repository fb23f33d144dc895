-- The label index and the owner index cost fewer rows written (docs/scale.md "Where a create's
-- rows, calls and hub CPU go"): WITHOUT ROWID tables keyed by their primary key (one B-tree, no
-- separate primary-key index beside the rowid table), as the outbox is since
-- migrations/0006_outbox_lean.sql. D1 bills each index entry an insert or delete writes as a row
-- written, so a label row now costs 2 rows (the table, `labels_selector`) instead of 3, and an
-- owner reference 2 instead of 3: at a placement's create, 6 rows fewer per cluster (the work's
-- 3 labels, the binding's 2, its owner reference). The rows and the lookups they answer are the
-- same; the indexes are made again on the new tables.
CREATE TABLE `labels_lean` (
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`resource`, `namespace`, `name`, `key`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `labels_lean` SELECT `resource`, `namespace`, `name`, `key`, `value` FROM `labels`;
--> statement-breakpoint
DROP TABLE `labels`;
--> statement-breakpoint
ALTER TABLE `labels_lean` RENAME TO `labels`;
--> statement-breakpoint
CREATE INDEX `labels_selector` ON `labels` (`resource`,`key`,`value`,`namespace`,`name`);
--> statement-breakpoint
CREATE TABLE `owner_references_lean` (
	`owner_uid` text NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	PRIMARY KEY(`owner_uid`, `resource`, `namespace`, `name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `owner_references_lean` SELECT `owner_uid`, `resource`, `namespace`, `name` FROM `owner_references`;
--> statement-breakpoint
DROP TABLE `owner_references`;
--> statement-breakpoint
ALTER TABLE `owner_references_lean` RENAME TO `owner_references`;
--> statement-breakpoint
CREATE INDEX `owner_references_dependent` ON `owner_references` (`resource`,`namespace`,`name`);
