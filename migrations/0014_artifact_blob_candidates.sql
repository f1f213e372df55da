-- The S3 collector deleted every listed blob its own database did not name: two leaders on one
-- bucket prefix (staging, a restore drill) deleted each other's blobs. It now deletes only blobs
-- this leader let go of (or left half-written): candidates, recorded in the transaction that drops
-- the last artifact naming a blob (this trigger, so a job purge or pool deletion that cascades is
-- covered too) or before an upload's store write (cleared when its artifact commits). Blobs already
-- unnamed before this migration have no candidate row: on S3 they stay (the collector counts them
-- in its log); the local store still collects every unnamed blob under its own state directory.
CREATE TABLE `artifact_blob_candidates` (
	`sha256` text PRIMARY KEY NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER `artifacts_blob_let_go` AFTER DELETE ON `artifacts`
WHEN NOT EXISTS (SELECT 1 FROM `artifacts` WHERE `sha256` = OLD.`sha256`)
BEGIN
	INSERT OR IGNORE INTO `artifact_blob_candidates` (`sha256`, `since`) VALUES (OLD.`sha256`, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
