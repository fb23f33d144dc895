-- The owner index of the garbage collector (src/gc/collector.ts): one row per (owner UID,
-- dependent), kept in the same batch as every write that changes an object's ownerReferences,
-- so that finding an owner's dependents reads those rows only, never every object.
CREATE TABLE `owner_references` (
	`owner_uid` text NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	PRIMARY KEY(`owner_uid`, `resource`, `namespace`, `name`)
);
--> statement-breakpoint
CREATE INDEX `owner_references_dependent` ON `owner_references` (`resource`,`namespace`,`name`);
--> statement-breakpoint
-- Objects written before this migration carry their references into the index.
INSERT OR IGNORE INTO `owner_references` (`owner_uid`, `resource`, `namespace`, `name`)
SELECT json_extract(r.value, '$.uid'), o.resource, o.namespace, o.name
FROM `objects` o, json_each(o.body, '$.metadata.ownerReferences') r
WHERE json_extract(r.value, '$.uid') IS NOT NULL;
