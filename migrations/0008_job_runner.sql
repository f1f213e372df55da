ALTER TABLE `jobs` ADD `runner` text DEFAULT 'mlp' NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `resumed_from_step` integer;