DROP INDEX "instances_meter_idx";--> statement-breakpoint
CREATE INDEX "instances_meter_run_idx" ON "instances" USING btree ("user_id","id") WHERE "instances"."meter_segment" is not null;--> statement-breakpoint
-- Rows every meter tick rewrites (an instance's metering columns, its usage order's running total):
-- room on each page so those updates, which change no indexed column, stay HOT (no index entries).
ALTER TABLE "instances" SET (fillfactor = 80);--> statement-breakpoint
ALTER TABLE "orders" SET (fillfactor = 80);
