-- Fewer D1 statements per write (issue 28, bench:propagation): the object's own statement
-- (INSERT, UPDATE or DELETE on `objects`) now also moves the resourceVersion counter on and
-- writes the watch event, by these triggers, instead of a counter bump and an event insert of
-- their own (which bound the object's JSON a second time). A write takes the counter's next value
-- as its row's resource_version; an insert or update sets the counter to it; a delete moves the
-- counter on by one and logs the row as it was stored. Events keep their meaning: one per
-- committed write, at the write's resourceVersion, with the object as written (as it was, for
-- DELETED). An insert or update that does not take a version above the counter's (a row
-- written by hand with an old version, a repair that keeps it) logs nothing and moves nothing.
-- Nothing to carry: existing rows and events stay as they are.
INSERT INTO `counters` (`id`, `value`) VALUES (1, 0) ON CONFLICT (`id`) DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER `objects_added` AFTER INSERT ON `objects`
  WHEN NEW.`resource_version` > (SELECT `value` FROM `counters` WHERE `id` = 1)
BEGIN
  UPDATE `counters` SET `value` = NEW.`resource_version` WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'ADDED', NEW.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_modified` AFTER UPDATE ON `objects`
  WHEN NEW.`resource_version` > (SELECT `value` FROM `counters` WHERE `id` = 1)
BEGIN
  UPDATE `counters` SET `value` = NEW.`resource_version` WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'MODIFIED', NEW.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_deleted` AFTER DELETE ON `objects`
BEGIN
  UPDATE `counters` SET `value` = `value` + 1 WHERE `id` = 1;
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`)
    SELECT `value`, OLD.`resource`, OLD.`namespace`, OLD.`name`, 'DELETED', OLD.`body` FROM `counters` WHERE `id` = 1;
END;
