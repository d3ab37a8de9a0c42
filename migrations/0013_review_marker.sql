ALTER TABLE "deliveries" ADD COLUMN "review_changed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "review_resolved_at" timestamp with time zone;
-- The times of the deliveries changed before are filled after the migrations, a batch at a time
-- (server/db/backfills.ts, 0013_review_marker).
