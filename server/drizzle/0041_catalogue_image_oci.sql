CREATE TABLE "instance_idle_stops" (
	"instance_id" uuid PRIMARY KEY NOT NULL,
	"payer_id" uuid NOT NULL,
	"category" text NOT NULL,
	"hours" integer NOT NULL,
	"idle_since" timestamp with time zone,
	"seen_at" timestamp with time zone,
	"warned_for" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instance_metrics" (
	"instance_id" uuid NOT NULL,
	"step_seconds" smallint NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"cpu_percent" double precision,
	"memory_used_bytes" bigint,
	"memory_limit_bytes" bigint,
	"data_disk_used_bytes" bigint,
	"data_disk_size_bytes" bigint,
	"system_disk_used_bytes" bigint,
	"system_disk_size_bytes" bigint,
	"net_rx_bytes_per_sec" double precision,
	"net_tx_bytes_per_sec" double precision,
	"gpus" jsonb NOT NULL,
	"gpu_util_max" double precision,
	"gpu_unavailable" text,
	"simulated" boolean NOT NULL,
	CONSTRAINT "instance_metrics_instance_id_step_seconds_at_pk" PRIMARY KEY("instance_id","step_seconds","at")
);
--> statement-breakpoint
CREATE TABLE "local_gpu_claims" (
	"minor" integer PRIMARY KEY NOT NULL,
	"instance_id" uuid NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "catalogue_images" ADD COLUMN "oci" text;--> statement-breakpoint
ALTER TABLE "instance_idle_stops" ADD CONSTRAINT "instance_idle_stops_instance_id_instances_id_fk" FOREIGN KEY ("instance_id") REFERENCES "public"."instances"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "instance_idle_stops_idle_idx" ON "instance_idle_stops" USING btree ("idle_since");--> statement-breakpoint
CREATE INDEX "instance_metrics_step_at_idx" ON "instance_metrics" USING btree ("step_seconds","at");