CREATE TABLE `cluster_identities` (
	`name` text PRIMARY KEY NOT NULL,
	`cluster_id` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cluster_identities_cluster_id` ON `cluster_identities` (`cluster_id`);--> statement-breakpoint
CREATE TABLE `counters` (
	`id` integer PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `objects` (
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`uid` text NOT NULL,
	`resource_version` integer NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`resource`, `namespace`, `name`)
);
