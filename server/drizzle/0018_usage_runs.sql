CREATE TABLE "usage_runs" (
	"order_id" uuid NOT NULL,
	"resource_id" text NOT NULL,
	"segment_start" timestamp with time zone NOT NULL,
	"no_card" boolean NOT NULL,
	"cards" integer NOT NULL,
	"rate_per_hour" bigint NOT NULL,
	"bandwidth_per_hour" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "usage_runs_order_id_resource_id_segment_start_pk" PRIMARY KEY("order_id","resource_id","segment_start")
);
--> statement-breakpoint
ALTER TABLE "usage_runs" ADD CONSTRAINT "usage_runs_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;