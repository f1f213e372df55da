CREATE TABLE `contributions` (
	`user_id` text PRIMARY KEY NOT NULL,
	`gpu_seconds` real NOT NULL,
	`tokens_served` integer NOT NULL,
	`requests_served` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `rollup_state` (
	`key` text PRIMARY KEY NOT NULL,
	`window_end` integer NOT NULL,
	`gpu_seconds` real NOT NULL,
	`tokens_served` integer NOT NULL,
	`requests_served` integer NOT NULL
);
