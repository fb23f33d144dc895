CREATE TABLE `outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`resource_version` integer NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`hooks` text NOT NULL,
	`created_at` integer NOT NULL,
	`due_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `outbox_due_at` ON `outbox` (`due_at`);--> statement-breakpoint
CREATE INDEX `outbox_created_at` ON `outbox` (`created_at`);