ALTER TABLE "tours" ADD COLUMN "ordered_by_driver_at" timestamp with time zone;--> statement-breakpoint
-- Tours ordered before the mark existed: an order that differs from the ERP's was the driver's.
UPDATE "tours" SET "ordered_by_driver_at" = now() WHERE EXISTS (
  SELECT 1 FROM "deliveries" WHERE "deliveries"."tour_id" = "tours"."id" AND "deliveries"."sort_order" IS DISTINCT FROM "deliveries"."erp_sequence");
