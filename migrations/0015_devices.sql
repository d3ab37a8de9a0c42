CREATE TABLE "devices" (
	"device_id" uuid PRIMARY KEY NOT NULL,
	"account_id" bigint NOT NULL,
	"sdk_version" text NOT NULL,
	"app_name" text,
	"app_version" text,
	"platform" text NOT NULL,
	"pending_count" integer NOT NULL,
	"oldest_pending_since" timestamp with time zone,
	"oldest_pending_type" text,
	"oldest_pending_delivery_id" uuid,
	"pending_completion_count" integer NOT NULL,
	"pending_completions" jsonb NOT NULL,
	"rejected_count" integer NOT NULL,
	"outbox_bytes" bigint NOT NULL,
	"attachment_bytes" bigint NOT NULL,
	"last_push_at" timestamp with time zone,
	"last_pull_at" timestamp with time zone,
	"last_error_code" text,
	"first_seen_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "devices_account_idx" ON "devices" USING btree ("account_id","device_id");--> statement-breakpoint
CREATE INDEX "devices_last_seen_idx" ON "devices" USING btree ("last_seen_at");--> statement-breakpoint
CREATE INDEX "devices_holding_idx" ON "devices" USING btree ("account_id") WHERE "devices"."pending_completion_count" > 0;