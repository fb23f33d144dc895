CREATE TABLE `webhook_deliveries` (
	`receiver_uid` text NOT NULL,
	`delivery_id` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`receiver_uid`, `delivery_id`)
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_received_at` ON `webhook_deliveries` (`received_at`);