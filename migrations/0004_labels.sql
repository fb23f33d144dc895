-- The label index of lists (src/store/d1/objects.ts listPage): one row per (object, label key), kept
-- in the same batch as every write that changes an object's labels, so that a labelSelector
-- list reads the rows its selector names instead of every object of the kind.
CREATE TABLE `labels` (
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`resource`, `namespace`, `name`, `key`)
);
--> statement-breakpoint
CREATE INDEX `labels_selector` ON `labels` (`resource`,`key`,`value`,`namespace`,`name`);
--> statement-breakpoint
-- Objects written before this migration carry their labels into the index.
INSERT OR IGNORE INTO `labels` (`resource`, `namespace`, `name`, `key`, `value`)
SELECT o.resource, o.namespace, o.name, l.key, l.value
FROM `objects` o, json_each(o.body, '$.metadata.labels') l
WHERE l.type = 'text';
