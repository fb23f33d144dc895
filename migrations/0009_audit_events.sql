-- The audit log (src/audit/log.ts): one row per audited request, an append-only log beside the
-- object store (no resourceVersion of the global counter, no watch event, no outbox row). `seq`
-- orders the rows (the AuditEvents' resourceVersion, list continue tokens, watches); the columns
-- the field selectors read are copied out of `body` (the audit.k8s.io/v1 Event as JSON).
-- `received_at` (epoch milliseconds) is indexed for time ranges and for the retention delete that
-- each insert runs (FLOTILLA_AUDIT_RETENTION_DAYS). Nothing existing changes: a hub upgraded
-- from before starts with an empty log.
CREATE TABLE `audit_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`audit_id` text NOT NULL,
	`received_at` integer NOT NULL,
	`username` text NOT NULL,
	`verb` text NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`code` integer NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_received_at` ON `audit_events` (`received_at`);
