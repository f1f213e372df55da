CREATE TABLE `servables` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`version` text NOT NULL,
	`format` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`pool_id` text,
	`job_id` text,
	`fellow_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `servables_pool_name_version_uq` ON `servables` (`pool_id`,`name`,`version`);--> statement-breakpoint
CREATE INDEX `servables_name_idx` ON `servables` (`name`);