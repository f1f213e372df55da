-- People upload artifacts too (svc artifacts upload): an upload is begun by a fellow or a user,
-- and an artifact remembers the user who uploaded it. SQLite cannot drop NOT NULL from a column,
-- so artifact_uploads is rebuilt; nothing references it. (The migrator runs this in a
-- transaction, where PRAGMA foreign_keys cannot change: none is needed.)
CREATE TABLE `__new_artifact_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`job_id` text,
	`stage` integer,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`step` integer,
	`fellow_id` text,
	`user_id` text,
	`received_bytes` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`job_id`) REFERENCES `jobs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_artifact_uploads`("id", "pool_id", "job_id", "stage", "kind", "name", "size_bytes", "sha256", "step", "fellow_id", "user_id", "received_bytes", "created_at", "updated_at") SELECT "id", "pool_id", "job_id", "stage", "kind", "name", "size_bytes", "sha256", "step", "fellow_id", NULL, "received_bytes", "created_at", "updated_at" FROM `artifact_uploads`;--> statement-breakpoint
DROP TABLE `artifact_uploads`;--> statement-breakpoint
ALTER TABLE `__new_artifact_uploads` RENAME TO `artifact_uploads`;--> statement-breakpoint
CREATE INDEX `artifact_uploads_pool_idx` ON `artifact_uploads` (`pool_id`);--> statement-breakpoint
CREATE INDEX `artifact_uploads_updated_idx` ON `artifact_uploads` (`updated_at`);--> statement-breakpoint
CREATE INDEX `artifact_uploads_job_idx` ON `artifact_uploads` (`job_id`);--> statement-breakpoint
ALTER TABLE `artifacts` ADD `user_id` text REFERENCES `users`(`id`) ON DELETE set null;
