CREATE INDEX "articles_default_warehouse_idx" ON "articles" USING btree ("default_warehouse_id");--> statement-breakpoint
CREATE INDEX "deliveries_customer_idx" ON "deliveries" USING btree ("customer_id");--> statement-breakpoint
CREATE INDEX "delivery_items_article_idx" ON "delivery_items" USING btree ("article_id");--> statement-breakpoint
CREATE INDEX "delivery_items_warehouse_idx" ON "delivery_items" USING btree ("warehouse_id");