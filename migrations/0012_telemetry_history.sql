CREATE TABLE `telemetry_buckets` (
	`fellow_id` text NOT NULL,
	`pool_id` text,
	`res` integer NOT NULL,
	`ts` integer NOT NULL,
	`samples` integer NOT NULL,
	`cpu_pct` real,
	`mem_free_mb` real,
	`mem_total_mb` real,
	`gpu_util_pct` real,
	`gpu_free_mb` real,
	`gpu_total_mb` real,
	`gpu_temp_c` real,
	PRIMARY KEY(`fellow_id`, `res`, `ts`),
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `telemetry_buckets_pool_idx` ON `telemetry_buckets` (`pool_id`,`res`,`ts`);--> statement-breakpoint
CREATE INDEX `telemetry_buckets_age_idx` ON `telemetry_buckets` (`res`,`ts`);