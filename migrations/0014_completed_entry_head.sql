ALTER TABLE "deliveries" ADD COLUMN "completed_entry_head" text;
-- The deliveries completed before are filled after the migrations, a batch at a time
-- (server/db/backfills.ts, 0014_completed_entry_head).
