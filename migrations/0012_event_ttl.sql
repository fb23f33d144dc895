-- Events expire FLOTILLA_EVENT_TTL_SECONDS after their last write (kube-apiserver's --event-ttl),
-- without a scan of all Events (src/events/expiry.ts): each Event's last write time (epoch
-- milliseconds), kept in the same atomic batch as every write of it (src/events/hooks.ts), and
-- indexed so that the expiry reads the oldest first, a bounded number at a time.
CREATE TABLE `event_ttl` (
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`written_at` integer NOT NULL,
	PRIMARY KEY (`namespace`, `name`)
);
--> statement-breakpoint
CREATE INDEX `event_ttl_written_at` ON `event_ttl` (`written_at`);
--> statement-breakpoint
-- Events a hub stored before (none but those a client wrote through the core API since this
-- release's code first ran) count as written now: they expire one TTL after the upgrade.
INSERT OR IGNORE INTO `event_ttl` (`namespace`, `name`, `written_at`)
SELECT `namespace`, `name`, CAST(unixepoch('subsec') * 1000 AS integer) FROM `objects` WHERE `resource` = '/events';
