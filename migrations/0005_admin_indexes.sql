CREATE INDEX `users_created_email_idx` ON `users` (`created_at`,`email`);--> statement-breakpoint
CREATE INDEX `users_last_login_email_idx` ON `users` (`last_login_at`,`email`);--> statement-breakpoint
CREATE INDEX `users_status_created_idx` ON `users` (`status`,`created_at`,`email`);--> statement-breakpoint
CREATE INDEX `users_role_created_idx` ON `users` (`role`,`created_at`,`email`);--> statement-breakpoint
CREATE INDEX `users_name_asc_idx` ON `users` ((display_name IS NULL),display_name COLLATE NOCASE,`email`);--> statement-breakpoint
CREATE INDEX `users_name_desc_idx` ON `users` ((display_name IS NULL),display_name COLLATE NOCASE DESC,email DESC);