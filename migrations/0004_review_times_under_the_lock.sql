ALTER TABLE "credit_events" ALTER COLUMN "received_at" SET DEFAULT statement_timestamp();--> statement-breakpoint
ALTER TABLE "review_resolutions" ALTER COLUMN "resolved_at" SET DEFAULT statement_timestamp();--> statement-breakpoint
ALTER TABLE "scan_audit" ALTER COLUMN "received_at" SET DEFAULT statement_timestamp();