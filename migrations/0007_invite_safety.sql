ALTER TABLE `users` ADD `email_verified_at` integer;--> statement-breakpoint
CREATE INDEX `mail_outbox_to_idx` ON `mail_outbox` (`to_email`,`created_at`);--> statement-breakpoint
CREATE INDEX `pool_invites_inviter_idx` ON `pool_invites` (`invited_by`,`status`);--> statement-breakpoint
UPDATE `users` SET `email_verified_at` = (SELECT max(`ts`) FROM `audit_log` WHERE `kind` = 'auth.email_verified' AND `target_id` = `users`.`id`);--> statement-breakpoint
UPDATE `users` SET `email_verified_at` = NULL WHERE `email_verified_at` IS NOT NULL AND EXISTS (SELECT 1 FROM `audit_log` WHERE `kind` = 'admin.user.update' AND `target_id` = `users`.`id` AND `ts` >= `users`.`email_verified_at` AND `detail` LIKE '%"email"%');
