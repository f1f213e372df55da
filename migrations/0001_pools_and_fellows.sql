CREATE TABLE `fellows` (
	`id` text PRIMARY KEY NOT NULL,
	`hostname` text NOT NULL,
	`token_hash` text NOT NULL,
	`state` text NOT NULL,
	`registered_at` integer NOT NULL,
	`last_seen_at` integer,
	`status` text,
	`step` integer,
	`loss` real,
	`bytes_sent` integer,
	`bytes_received` integer,
	`hardware` text,
	`address` text,
	`agent_version` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fellows_token_uq` ON `fellows` (`token_hash`);--> statement-breakpoint
CREATE TABLE `join_requests` (
	`pool_id` text NOT NULL,
	`user_id` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`pool_id`, `user_id`),
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `join_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`created_by` text,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `join_sessions_token_uq` ON `join_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `join_sessions_pool_idx` ON `join_sessions` (`pool_id`);--> statement-breakpoint
CREATE TABLE `pool_invites` (
	`id` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`email` text NOT NULL,
	`invited_by` text,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pool_invites_email_idx` ON `pool_invites` (`email`);--> statement-breakpoint
CREATE INDEX `pool_invites_pool_idx` ON `pool_invites` (`pool_id`);--> statement-breakpoint
CREATE TABLE `pool_members` (
	`pool_id` text NOT NULL,
	`user_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`pool_id`, `user_id`),
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pool_members_user_idx` ON `pool_members` (`user_id`);--> statement-breakpoint
CREATE TABLE `pool_nodes` (
	`fellow_id` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`owner_user_id` text,
	`join_session_id` text,
	`attached_at` integer NOT NULL,
	FOREIGN KEY (`fellow_id`) REFERENCES `fellows`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`pool_id`) REFERENCES `pools`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`owner_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `pool_nodes_pool_idx` ON `pool_nodes` (`pool_id`);--> statement-breakpoint
CREATE INDEX `pool_nodes_owner_idx` ON `pool_nodes` (`owner_user_id`);--> statement-breakpoint
CREATE TABLE `pools` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`description` text NOT NULL,
	`visibility` text NOT NULL,
	`node_limit` integer,
	`open_join` integer NOT NULL,
	`owner_user_id` text,
	`is_default` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`owner_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pools_slug_uq` ON `pools` (`slug`);--> statement-breakpoint
CREATE INDEX `pools_owner_idx` ON `pools` (`owner_user_id`);--> statement-breakpoint
CREATE INDEX `pools_visibility_idx` ON `pools` (`visibility`);--> statement-breakpoint
CREATE TABLE `role_limits` (
	`role` text PRIMARY KEY NOT NULL,
	`max_pools` integer,
	`max_nodes_per_pool` integer,
	`allowed_visibilities` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `role_limits` (`role`, `max_pools`, `max_nodes_per_pool`, `allowed_visibilities`) VALUES ('user', 1, 2, 'private'), ('admin', NULL, NULL, 'public,private');
