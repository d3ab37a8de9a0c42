ALTER TABLE "completions" ADD COLUMN "received_at" timestamp with time zone DEFAULT statement_timestamp() NOT NULL;--> statement-breakpoint
UPDATE "completions" SET "received_at" = "completed_at";
