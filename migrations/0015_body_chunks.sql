-- An object whose stored JSON exceeds what one D1 row holds (2,000,000 bytes: D1's limit on a
-- string, BLOB or row; the local D1 enforces none of it) is kept in pieces (issue 42: a
-- KubeFleet placement's status holds about 1.5 KB per cluster, some 2 MB past 1,300 clusters):
-- `body_chunks` holds the body's pieces, each within a row, keyed by the SHA-256 of the whole
-- body and their order, written in the same batch as the object's row; the row (and its watch
-- events) then carries the key in `body_ref` and a stub of the object in `body` (its short
-- fields), and every read puts the whole body back (src/store/d1/objects.ts). `orphaned_at` as
-- for shared specs (migrations/0013_shared_specs.sql): the pieces go once no object refers to
-- them and the event log no longer reaches back to them.
-- Existing rows keep their bodies (body_ref NULL) and are read as before.
CREATE TABLE `body_chunks` (
	`hash` text NOT NULL,
	`seq` integer NOT NULL,
	`body` text NOT NULL,
	`orphaned_at` integer,
	PRIMARY KEY(`hash`, `seq`)
);
--> statement-breakpoint
ALTER TABLE `objects` ADD COLUMN `body_ref` text;
--> statement-breakpoint
ALTER TABLE `events` ADD COLUMN `body_ref` text;
--> statement-breakpoint
-- Partial: only the rows of bodies in pieces have an entry.
CREATE INDEX `objects_body_ref` ON `objects` (`body_ref`) WHERE `body_ref` IS NOT NULL;
--> statement-breakpoint
-- The watch events carry the row's body reference (migrations/0013_shared_specs.sql, with body_ref).
DROP TRIGGER `objects_added`;
--> statement-breakpoint
DROP TRIGGER `objects_modified`;
--> statement-breakpoint
DROP TRIGGER `objects_deleted`;
--> statement-breakpoint
CREATE TRIGGER `objects_added` AFTER INSERT ON `objects`
  WHEN NEW.`resource_version` > (SELECT `value` FROM `counters` WHERE `id` = 1)
BEGIN
  UPDATE `counters` SET `value` = NEW.`resource_version` WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'ADDED', NEW.`body`, NEW.`spec_ref`, NEW.`body_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_modified` AFTER UPDATE ON `objects`
  WHEN NEW.`resource_version` > (SELECT `value` FROM `counters` WHERE `id` = 1)
BEGIN
  UPDATE `counters` SET `value` = NEW.`resource_version` WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'MODIFIED', NEW.`body`, NEW.`spec_ref`, NEW.`body_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_deleted` AFTER DELETE ON `objects`
BEGIN
  UPDATE `counters` SET `value` = `value` + 1 WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    SELECT `value`, OLD.`resource`, OLD.`namespace`, OLD.`name`, 'DELETED', OLD.`body`, OLD.`spec_ref`, OLD.`body_ref` FROM `counters` WHERE `id` = 1;
END;
