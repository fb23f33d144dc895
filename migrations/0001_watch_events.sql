CREATE TABLE `events` (
	`resource_version` integer PRIMARY KEY NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_resource` ON `events` (`resource`,`resource_version`);