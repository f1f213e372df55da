CREATE TABLE `artifact_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`job_id` text,
	`stage` integer,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`step` integer,
	`fellow_id` text NOT NULL,
	`received_bytes` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`job_id`) REFERENCES `jobs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `artifact_uploads_pool_idx` ON `artifact_uploads` (`pool_id`);--> statement-breakpoint
CREATE INDEX `artifact_uploads_updated_idx` ON `artifact_uploads` (`updated_at`);--> statement-breakpoint
CREATE INDEX `artifact_uploads_job_idx` ON `artifact_uploads` (`job_id`);--> statement-breakpoint
CREATE TABLE `artifacts` (
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
	`created_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`job_id`) REFERENCES `jobs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `artifacts_job_idx` ON `artifacts` (`job_id`,`stage`,`step`);--> statement-breakpoint
CREATE INDEX `artifacts_pool_idx` ON `artifacts` (`pool_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `artifacts_sha256_idx` ON `artifacts` (`sha256`);