ALTER TABLE "users" ADD COLUMN "balance_floor" bigint;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "scheduled_stop_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "instances_scheduled_stop_idx" ON "instances" USING btree ("scheduled_stop_at") WHERE "instances"."scheduled_stop_at" is not null;