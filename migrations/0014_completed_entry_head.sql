ALTER TABLE "deliveries" ADD COLUMN "completed_entry_head" text;--> statement-breakpoint
-- Backfill every completed delivery with the expression of engine/completedEntries.ts (at a year
-- of history docs/operations.md has how long this transaction holds its locks).
UPDATE "deliveries" SET "completed_entry_head" = (
  SELECT left(row_to_json(e)::text, -1) || ',"customer_name":' FROM (SELECT "deliveries"."belegnummer" AS belegnummer,
      (COALESCE("deliveries"."credit_amount_cents", 0) > 0 OR EXISTS (
        SELECT 1 FROM "delivery_items" WHERE "delivery_items"."delivery_id" = "deliveries"."id"
          AND ("delivery_items"."state" = 'Removed' OR "delivery_items"."credited_quantity" > 0))) AS positions_modified,
      "deliveries"."id" AS delivery_id, "deliveries"."belegart_id" AS belegart_id,
      to_char("deliveries"."completed_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS completed_at,
      to_char(("deliveries"."completed_at" AT TIME ZONE 'Europe/Berlin')::date, 'YYYY-MM-DD') AS completed_day,
      "tours"."tour_date"::text AS tour_date, "tours"."account_id" AS driver_personalnummer
    FROM "tours" WHERE "tours"."id" = "deliveries"."tour_id") AS e)
WHERE "state" = 'completed';
