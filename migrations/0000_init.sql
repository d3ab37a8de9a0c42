CREATE TABLE "accounts" (
	"personalnummer" bigint PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "articles" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"article_number" text NOT NULL,
	"name" text NOT NULL,
	"scannable" boolean NOT NULL,
	"default_warehouse_id" uuid,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "attachments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"note_id" uuid,
	"kind" text NOT NULL,
	"reference" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cars" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" bigint NOT NULL,
	"plate" text NOT NULL,
	"plate_key" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "change_log" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"entity" text NOT NULL,
	"op" text NOT NULL,
	"entity_id" text NOT NULL,
	"tour_id" uuid,
	"account_id" bigint,
	"data" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "completions" (
	"delivery_id" uuid PRIMARY KEY NOT NULL,
	"client_event_id" uuid,
	"account_id" bigint NOT NULL,
	"author_car_id" uuid,
	"payment_method_id" uuid,
	"payment_id" uuid,
	"payment_collected" boolean DEFAULT false NOT NULL,
	"collected_amount_cents" integer DEFAULT 0 NOT NULL,
	"notes_acknowledged" boolean DEFAULT false NOT NULL,
	"acknowledged_note_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"internal_note" text,
	"customer_signature_id" uuid NOT NULL,
	"driver_signature_id" uuid NOT NULL,
	"report_attachment_id" uuid,
	"completed_at" timestamp with time zone NOT NULL,
	"erp_push_status" text DEFAULT 'pending' NOT NULL,
	"erp_push_attempts" integer DEFAULT 0 NOT NULL,
	"erp_pushed_at" timestamp with time zone,
	"erp_push_error" text,
	"erp_next_attempt_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "contact_channels" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"source_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"position" integer NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_sources" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"role" text NOT NULL,
	"roles" jsonb NOT NULL,
	"position" integer NOT NULL,
	"anrede" text,
	"titel" text,
	"name1" text,
	"name2" text,
	"name3" text,
	"abteilung" text,
	"funktion" text,
	"address" jsonb
);
--> statement-breakpoint
CREATE TABLE "credit_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"client_event_id" uuid NOT NULL,
	"delivery_id" uuid NOT NULL,
	"action" text NOT NULL,
	"amount_cents" integer,
	"reason" text,
	"account_id" bigint NOT NULL,
	"author_car_id" uuid,
	"occurred_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "customers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"erp_customer_id" bigint NOT NULL,
	"name" text NOT NULL,
	"address" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tour_id" uuid NOT NULL,
	"belegart_id" integer NOT NULL,
	"belegnummer" text NOT NULL,
	"customer_id" uuid NOT NULL,
	"delivery_address" jsonb NOT NULL,
	"state" text DEFAULT 'active' NOT NULL,
	"state_reason" text,
	"sort_order" integer NOT NULL,
	"erp_sequence" integer,
	"erp_open_amount_cents" integer DEFAULT 0 NOT NULL,
	"payment_method_id" uuid,
	"erp_payment_method_code" text,
	"payment_term" text,
	"assigned_car_id" uuid,
	"credit_amount_cents" integer,
	"credit_reason" text,
	"credit_updated_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"mail_sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "delivery_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"line_number" integer NOT NULL,
	"article_id" uuid NOT NULL,
	"warehouse_id" uuid,
	"required_quantity" integer NOT NULL,
	"scanned_quantity" integer DEFAULT 0 NOT NULL,
	"credited_quantity" integer DEFAULT 0 NOT NULL,
	"state" text DEFAULT 'InProgress' NOT NULL,
	"unit" text,
	"unit_price_cents" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "delivery_items_quantities_ck" CHECK ("delivery_items"."scanned_quantity" >= 0 AND "delivery_items"."credited_quantity" >= 0 AND "delivery_items"."required_quantity" >= 1)
);
--> statement-breakpoint
CREATE TABLE "delivery_service_values" (
	"delivery_id" uuid NOT NULL,
	"service_id" uuid NOT NULL,
	"bool_value" boolean,
	"numeric_value" integer,
	"author_car_id" uuid,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "delivery_service_values_delivery_id_service_id_pk" PRIMARY KEY("delivery_id","service_id")
);
--> statement-breakpoint
CREATE TABLE "erp_import_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"target_date" date NOT NULL,
	"trigger" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"success" boolean DEFAULT false NOT NULL,
	"counters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "meta" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"text" text,
	"image_attachment" text,
	"author_car_id" uuid,
	"credit_delivery_item_id" uuid,
	"is_amount_credit_note" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_methods" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"code" text NOT NULL,
	"name" text NOT NULL,
	"collect_on_site" boolean DEFAULT false NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_protocol" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"client_event_id" uuid NOT NULL,
	"delivery_id" uuid NOT NULL,
	"payment_method_id" uuid NOT NULL,
	"payment_method_code" text NOT NULL,
	"amount_cents" integer NOT NULL,
	"account_id" bigint NOT NULL,
	"author_car_id" uuid,
	"occurred_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "processed_events" (
	"event_id" uuid PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"client_id" text,
	"account_id" bigint NOT NULL,
	"delivery_id" uuid,
	"payload_hash" text NOT NULL,
	"occurred_at" timestamp with time zone,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "review_resolutions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"processor" text NOT NULL,
	"resolved_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scan_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"client_scan_id" uuid NOT NULL,
	"delivery_id" uuid NOT NULL,
	"delivery_item_id" uuid NOT NULL,
	"action" text NOT NULL,
	"quantity" integer,
	"reason" text,
	"scanned_quantity_after" integer NOT NULL,
	"credited_quantity_after" integer NOT NULL,
	"state_after" text NOT NULL,
	"account_id" bigint NOT NULL,
	"author_car_id" uuid,
	"occurred_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "services" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"min_value" integer,
	"max_value" integer,
	"sort_order" integer,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "services_limits_ck" CHECK ("services"."min_value" IS NULL OR "services"."max_value" IS NULL OR "services"."min_value" <= "services"."max_value")
);
--> statement-breakpoint
CREATE TABLE "tours" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" bigint NOT NULL,
	"tour_date" date NOT NULL,
	"name" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "warehouses" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"code" text NOT NULL,
	"name" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "articles" ADD CONSTRAINT "articles_default_warehouse_id_warehouses_id_fk" FOREIGN KEY ("default_warehouse_id") REFERENCES "public"."warehouses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cars" ADD CONSTRAINT "cars_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_payment_method_id_payment_methods_id_fk" FOREIGN KEY ("payment_method_id") REFERENCES "public"."payment_methods"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_payment_id_payment_protocol_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payment_protocol"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_customer_signature_id_attachments_id_fk" FOREIGN KEY ("customer_signature_id") REFERENCES "public"."attachments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_driver_signature_id_attachments_id_fk" FOREIGN KEY ("driver_signature_id") REFERENCES "public"."attachments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "completions" ADD CONSTRAINT "completions_report_attachment_id_attachments_id_fk" FOREIGN KEY ("report_attachment_id") REFERENCES "public"."attachments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_channels" ADD CONSTRAINT "contact_channels_source_id_contact_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."contact_sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_sources" ADD CONSTRAINT "contact_sources_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_events" ADD CONSTRAINT "credit_events_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_events" ADD CONSTRAINT "credit_events_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_events" ADD CONSTRAINT "credit_events_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_tour_id_tours_id_fk" FOREIGN KEY ("tour_id") REFERENCES "public"."tours"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_payment_method_id_payment_methods_id_fk" FOREIGN KEY ("payment_method_id") REFERENCES "public"."payment_methods"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_assigned_car_id_cars_id_fk" FOREIGN KEY ("assigned_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_items" ADD CONSTRAINT "delivery_items_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_items" ADD CONSTRAINT "delivery_items_article_id_articles_id_fk" FOREIGN KEY ("article_id") REFERENCES "public"."articles"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_items" ADD CONSTRAINT "delivery_items_warehouse_id_warehouses_id_fk" FOREIGN KEY ("warehouse_id") REFERENCES "public"."warehouses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_service_values" ADD CONSTRAINT "delivery_service_values_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_service_values" ADD CONSTRAINT "delivery_service_values_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_service_values" ADD CONSTRAINT "delivery_service_values_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notes" ADD CONSTRAINT "notes_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notes" ADD CONSTRAINT "notes_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notes" ADD CONSTRAINT "notes_credit_delivery_item_id_delivery_items_id_fk" FOREIGN KEY ("credit_delivery_item_id") REFERENCES "public"."delivery_items"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_protocol" ADD CONSTRAINT "payment_protocol_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_protocol" ADD CONSTRAINT "payment_protocol_payment_method_id_payment_methods_id_fk" FOREIGN KEY ("payment_method_id") REFERENCES "public"."payment_methods"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_protocol" ADD CONSTRAINT "payment_protocol_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_protocol" ADD CONSTRAINT "payment_protocol_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "processed_events" ADD CONSTRAINT "processed_events_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "processed_events" ADD CONSTRAINT "processed_events_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "review_resolutions" ADD CONSTRAINT "review_resolutions_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scan_audit" ADD CONSTRAINT "scan_audit_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scan_audit" ADD CONSTRAINT "scan_audit_delivery_item_id_delivery_items_id_fk" FOREIGN KEY ("delivery_item_id") REFERENCES "public"."delivery_items"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scan_audit" ADD CONSTRAINT "scan_audit_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scan_audit" ADD CONSTRAINT "scan_audit_author_car_id_cars_id_fk" FOREIGN KEY ("author_car_id") REFERENCES "public"."cars"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tours" ADD CONSTRAINT "tours_account_id_accounts_personalnummer_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("personalnummer") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "articles_number_uq" ON "articles" USING btree ("article_number");--> statement-breakpoint
CREATE INDEX "attachments_delivery_idx" ON "attachments" USING btree ("delivery_id");--> statement-breakpoint
CREATE INDEX "attachments_reference_idx" ON "attachments" USING btree ("reference");--> statement-breakpoint
CREATE UNIQUE INDEX "cars_plate_key_uq" ON "cars" USING btree ("plate_key");--> statement-breakpoint
CREATE INDEX "cars_account_idx" ON "cars" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "change_log_account_seq_idx" ON "change_log" USING btree ("account_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "completions_client_event_uq" ON "completions" USING btree ("client_event_id");--> statement-breakpoint
CREATE UNIQUE INDEX "contact_channels_uq" ON "contact_channels" USING btree ("source_id","kind","value");--> statement-breakpoint
CREATE INDEX "contact_sources_delivery_idx" ON "contact_sources" USING btree ("delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "credit_events_client_uq" ON "credit_events" USING btree ("client_event_id");--> statement-breakpoint
CREATE INDEX "credit_events_delivery_idx" ON "credit_events" USING btree ("delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "customers_erp_id_uq" ON "customers" USING btree ("erp_customer_id");--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_beleg_uq" ON "deliveries" USING btree ("belegart_id","belegnummer");--> statement-breakpoint
CREATE INDEX "deliveries_tour_idx" ON "deliveries" USING btree ("tour_id");--> statement-breakpoint
CREATE INDEX "deliveries_belegnummer_idx" ON "deliveries" USING btree ("belegnummer");--> statement-breakpoint
CREATE INDEX "deliveries_completed_idx" ON "deliveries" USING btree ("completed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "delivery_items_line_uq" ON "delivery_items" USING btree ("delivery_id","line_number");--> statement-breakpoint
CREATE INDEX "delivery_service_values_service_idx" ON "delivery_service_values" USING btree ("service_id");--> statement-breakpoint
CREATE INDEX "erp_import_runs_target_idx" ON "erp_import_runs" USING btree ("target_date");--> statement-breakpoint
CREATE INDEX "notes_delivery_idx" ON "notes" USING btree ("delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "payment_methods_code_uq" ON "payment_methods" USING btree ("code");--> statement-breakpoint
CREATE UNIQUE INDEX "payment_protocol_client_uq" ON "payment_protocol" USING btree ("client_event_id");--> statement-breakpoint
CREATE INDEX "payment_protocol_delivery_idx" ON "payment_protocol" USING btree ("delivery_id");--> statement-breakpoint
CREATE INDEX "review_resolutions_delivery_idx" ON "review_resolutions" USING btree ("delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "scan_audit_client_scan_uq" ON "scan_audit" USING btree ("client_scan_id");--> statement-breakpoint
CREATE INDEX "scan_audit_delivery_idx" ON "scan_audit" USING btree ("delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "services_key_uq" ON "services" USING btree ("key");--> statement-breakpoint
CREATE UNIQUE INDEX "tours_account_date_uq" ON "tours" USING btree ("account_id","tour_date");--> statement-breakpoint
CREATE UNIQUE INDEX "warehouses_code_uq" ON "warehouses" USING btree ("code");