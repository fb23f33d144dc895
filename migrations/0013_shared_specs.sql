-- A large spec that many objects share is stored once (issue 42: a placement's works carry the
-- same ~30 KB of manifests in every cluster's namespace): `shared_specs` holds each distinct spec
-- text once, keyed by its SHA-256 (content-addressed), written in the same batch as the first
-- write that references it; an object row (and its watch events) then carries the key in
-- `spec_ref` and its body `"spec":null` in the spec's place, and a read puts the spec back
-- (src/store/d1/objects.ts). A status write of such an object rewrites its small body, not the
-- spec. `orphaned_at` is the resourceVersion at which a sweep found no object referencing the
-- spec (NULL while one does); the spec goes once the event log no longer reaches back to it.
-- Existing rows keep their specs inline (spec_ref NULL) and are read as before; their next write
-- stores them the new way.
CREATE TABLE `shared_specs` (
	`hash` text PRIMARY KEY NOT NULL,
	`body` text NOT NULL,
	`orphaned_at` integer
);
--> statement-breakpoint
ALTER TABLE `objects` ADD COLUMN `spec_ref` text;
--> statement-breakpoint
ALTER TABLE `events` ADD COLUMN `spec_ref` text;
--> statement-breakpoint
-- Partial: only the rows that reference a spec have an entry (other kinds' writes write none).
CREATE INDEX `objects_spec_ref` ON `objects` (`spec_ref`) WHERE `spec_ref` IS NOT NULL;
--> statement-breakpoint
-- The watch events carry the row's spec reference (migrations/0010_write_triggers.sql, with spec_ref).
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
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'ADDED', NEW.`body`, NEW.`spec_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_modified` AFTER UPDATE ON `objects`
  WHEN NEW.`resource_version` > (SELECT `value` FROM `counters` WHERE `id` = 1)
BEGIN
  UPDATE `counters` SET `value` = NEW.`resource_version` WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'MODIFIED', NEW.`body`, NEW.`spec_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_deleted` AFTER DELETE ON `objects`
BEGIN
  UPDATE `counters` SET `value` = `value` + 1 WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`)
    SELECT `value`, OLD.`resource`, OLD.`namespace`, OLD.`name`, 'DELETED', OLD.`body`, OLD.`spec_ref` FROM `counters` WHERE `id` = 1;
END;
