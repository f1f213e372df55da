CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`pool_id` text NOT NULL,
	`created_by` text,
	`status` text NOT NULL,
	`reason` text,
	`stages` integer NOT NULL,
	`min_free_vram_mb` integer NOT NULL,
	`config` text NOT NULL,
	`transport` text,
	`assignments` text NOT NULL,
	`step` integer NOT NULL,
	`loss` real,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `jobs_pool_idx` ON `jobs` (`pool_id`);--> statement-breakpoint
CREATE INDEX `jobs_status_idx` ON `jobs` (`status`);