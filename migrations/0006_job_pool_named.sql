ALTER TABLE `jobs` ADD `pool_named` integer DEFAULT true NOT NULL;--> statement-breakpoint
UPDATE `jobs` SET `pool_named` = 0 WHERE `status` = 'queued' AND `pool_id` IN (SELECT `id` FROM `pools` WHERE `is_default` = 1);
