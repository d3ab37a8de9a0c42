CREATE TABLE "erp_cancellations" (
	"delivery_id" uuid PRIMARY KEY NOT NULL,
	"canceled_at" timestamp with time zone NOT NULL,
	"reason" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
	"push_status" text DEFAULT 'pending' NOT NULL,
	"push_attempts" integer DEFAULT 0 NOT NULL,
	"pushed_at" timestamp with time zone,
	"push_error" text,
	"next_attempt_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "attachments" ADD COLUMN "sha256" text;--> statement-breakpoint
ALTER TABLE "erp_import_runs" ADD COLUMN "skipped" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "erp_import_runs" ADD COLUMN "details" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "erp_cancellations" ADD CONSTRAINT "erp_cancellations_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "erp_cancellations_due_idx" ON "erp_cancellations" USING btree ("received_at") WHERE push_status IN ('pending', 'failed');--> statement-breakpoint
CREATE INDEX "erp_import_runs_started_idx" ON "erp_import_runs" USING btree ("started_at","id");