ALTER TABLE "instances" ADD COLUMN "bandwidth_mbps" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "included_bandwidth_mbps" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "bandwidth_hourly_price" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sim_machines" ADD COLUMN "bandwidth_mbps" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Instances bought before bandwidth could change have what their size includes.
UPDATE "instances" SET "bandwidth_mbps" = s."bandwidth_mbps", "included_bandwidth_mbps" = s."bandwidth_mbps" FROM "catalogue_sizes" s WHERE s."id" = "instances"."size_id";
