ALTER TABLE "review_resolutions" ADD COLUMN "processor_subject" text;--> statement-breakpoint
ALTER TABLE "review_resolutions" ADD COLUMN "confirmed_change_at" timestamp with time zone;