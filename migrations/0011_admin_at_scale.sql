DROP INDEX `audit_ts_idx`;--> statement-breakpoint
DROP INDEX `audit_kind_idx`;--> statement-breakpoint
DROP INDEX `audit_actor_idx`;--> statement-breakpoint
CREATE INDEX `audit_ts_id_idx` ON `audit_log` (`ts`,`id`);--> statement-breakpoint
CREATE INDEX `audit_kind_ts_idx` ON `audit_log` (`kind`,`ts`,`id`);--> statement-breakpoint
CREATE INDEX `audit_actor_ts_idx` ON `audit_log` (`actor_user_id`,`ts`,`id`);--> statement-breakpoint
CREATE INDEX `audit_target_ts_idx` ON `audit_log` (`target_id`,`ts`,`id`);--> statement-breakpoint
ALTER TABLE `users` ADD `pool_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `node_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `users_status_login_idx` ON `users` (`status`,`last_login_at`,`email`);--> statement-breakpoint
CREATE INDEX `users_pool_count_idx` ON `users` (`pool_count`,`email`);--> statement-breakpoint
CREATE INDEX `users_node_count_idx` ON `users` (`node_count`,`email`);--> statement-breakpoint
UPDATE `users` SET
  `pool_count` = (SELECT count(*) FROM `pool_members` pm WHERE pm.`user_id` = `users`.`id`),
  `node_count` = (SELECT count(*) FROM `pool_nodes` pn WHERE pn.`owner_user_id` = `users`.`id`);
--> statement-breakpoint
CREATE TRIGGER `pool_members_count_ins` AFTER INSERT ON `pool_members` BEGIN
  UPDATE `users` SET `pool_count` = `pool_count` + 1 WHERE `id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `pool_members_count_del` AFTER DELETE ON `pool_members` BEGIN
  UPDATE `users` SET `pool_count` = `pool_count` - 1 WHERE `id` = OLD.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `pool_members_count_upd` AFTER UPDATE OF `user_id` ON `pool_members` WHEN OLD.`user_id` IS NOT NEW.`user_id` BEGIN
  UPDATE `users` SET `pool_count` = `pool_count` - 1 WHERE `id` = OLD.`user_id`;
  UPDATE `users` SET `pool_count` = `pool_count` + 1 WHERE `id` = NEW.`user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `pool_nodes_count_ins` AFTER INSERT ON `pool_nodes` BEGIN
  UPDATE `users` SET `node_count` = `node_count` + 1 WHERE `id` = NEW.`owner_user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `pool_nodes_count_del` AFTER DELETE ON `pool_nodes` BEGIN
  UPDATE `users` SET `node_count` = `node_count` - 1 WHERE `id` = OLD.`owner_user_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `pool_nodes_count_upd` AFTER UPDATE OF `owner_user_id` ON `pool_nodes` WHEN OLD.`owner_user_id` IS NOT NEW.`owner_user_id` BEGIN
  UPDATE `users` SET `node_count` = `node_count` - 1 WHERE `id` = OLD.`owner_user_id`;
  UPDATE `users` SET `node_count` = `node_count` + 1 WHERE `id` = NEW.`owner_user_id`;
END;
--> statement-breakpoint
CREATE VIRTUAL TABLE `users_fts` USING fts5(`email`, `display_name`, tokenize = 'trigram');
--> statement-breakpoint
INSERT INTO `users_fts` (`rowid`, `email`, `display_name`) SELECT `rowid`, `email`, `display_name` FROM `users`;
--> statement-breakpoint
CREATE TRIGGER `users_fts_ins` AFTER INSERT ON `users` BEGIN
  INSERT INTO `users_fts` (`rowid`, `email`, `display_name`) VALUES (NEW.`rowid`, NEW.`email`, NEW.`display_name`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_fts_upd` AFTER UPDATE OF `email`, `display_name` ON `users` BEGIN
  UPDATE `users_fts` SET `email` = NEW.`email`, `display_name` = NEW.`display_name` WHERE `rowid` = NEW.`rowid`;
END;
--> statement-breakpoint
CREATE TRIGGER `users_fts_del` AFTER DELETE ON `users` BEGIN
  DELETE FROM `users_fts` WHERE `rowid` = OLD.`rowid`;
END;
