ALTER TABLE "processed_events" DROP CONSTRAINT "processed_events_account_id_accounts_personalnummer_fk";
--> statement-breakpoint
ALTER TABLE "processed_events" DROP CONSTRAINT "processed_events_delivery_id_deliveries_id_fk";
--> statement-breakpoint
ALTER TABLE "scan_audit" DROP CONSTRAINT "scan_audit_delivery_id_deliveries_id_fk";
--> statement-breakpoint
ALTER TABLE "scan_audit" DROP CONSTRAINT "scan_audit_account_id_accounts_personalnummer_fk";
--> statement-breakpoint
ALTER TABLE "scan_audit" DROP CONSTRAINT "scan_audit_author_car_id_cars_id_fk";
