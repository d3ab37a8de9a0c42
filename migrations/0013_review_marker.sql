ALTER TABLE "deliveries" ADD COLUMN "review_changed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "review_resolved_at" timestamp with time zone;--> statement-breakpoint
-- Backfill from the audit: only the deliveries that ever deviated or were confirmed are written
-- (3 % of them in the bench's history; at a year of it, docs/operations.md has how long the
-- table lock of this transaction is held).
UPDATE "deliveries" d SET "review_changed_at" = c.at FROM (
  SELECT delivery_id, max(received_at) AS at FROM (
    SELECT delivery_id, received_at FROM scan_audit WHERE action IN ('remove', 'unremove')
    UNION ALL SELECT delivery_id, received_at FROM credit_events) AS change
  GROUP BY delivery_id) AS c
WHERE d.id = c.delivery_id;--> statement-breakpoint
UPDATE "deliveries" d SET "review_resolved_at" = r.at FROM (
  SELECT delivery_id, max(resolved_at) AS at FROM review_resolutions GROUP BY delivery_id) AS r
WHERE d.id = r.delivery_id;
