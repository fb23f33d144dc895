-- The resourceVersion counter's row is written once per commit batch, not once per write
-- (docs/scale.md "Where a create's rows, calls and hub CPU go"): D1 bills each write of the
-- `counters` row as a row written, and the triggers of 0010 (and 0013, 0015) moved it at every write,
-- so a batch of 50 works wrote it 50 times. Now each write's statement takes the watch log's next
-- version, the greater of the counter and the newest event plus one (src/store/d1/objects.ts
-- `logHead`: the events' primary key read backwards, one row), its trigger logs the event at it,
-- and the commit's batch ends with one statement that moves the counter to the newest event
-- (`counterCatchUpShape`), so a reader outside a batch (lists, watches) reads the counter as
-- before. Events keep their meaning: one per committed write, at the write's resourceVersion,
-- with the object as written (as it was, for DELETED). An insert or update that does not take a
-- version above the log's head (a row written by hand with an old version) logs nothing.
-- Nothing to carry: the counter already equals the newest event.
DROP TRIGGER `objects_added`;
--> statement-breakpoint
DROP TRIGGER `objects_modified`;
--> statement-breakpoint
DROP TRIGGER `objects_deleted`;
--> statement-breakpoint
CREATE TRIGGER `objects_added` AFTER INSERT ON `objects`
  WHEN NEW.`resource_version` > (SELECT max(`value`, coalesce((SELECT max(`resource_version`) FROM `events`), 0)) FROM `counters` WHERE `id` = 1)
BEGIN
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'ADDED', NEW.`body`, NEW.`spec_ref`, NEW.`body_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_modified` AFTER UPDATE ON `objects`
  WHEN NEW.`resource_version` > (SELECT max(`value`, coalesce((SELECT max(`resource_version`) FROM `events`), 0)) FROM `counters` WHERE `id` = 1)
BEGIN
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    VALUES (NEW.`resource_version`, NEW.`resource`, NEW.`namespace`, NEW.`name`, 'MODIFIED', NEW.`body`, NEW.`spec_ref`, NEW.`body_ref`);
END;
--> statement-breakpoint
CREATE TRIGGER `objects_deleted` AFTER DELETE ON `objects`
BEGIN
  INSERT INTO `events` (`resource_version`, `resource`, `namespace`, `name`, `type`, `body`, `spec_ref`, `body_ref`)
    SELECT max(`value`, coalesce((SELECT max(`resource_version`) FROM `events`), 0)) + 1, OLD.`resource`, OLD.`namespace`, OLD.`name`, 'DELETED', OLD.`body`, OLD.`spec_ref`, OLD.`body_ref`
    FROM `counters` WHERE `id` = 1;
END;
