CREATE TABLE "compute_cursors" (
	"driver" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instance_operations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"instance_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"actor_id" uuid,
	"action" text NOT NULL,
	"from_status" text,
	"to_status" text NOT NULL,
	"detail" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instances" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"category" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"no_card" boolean DEFAULT false NOT NULL,
	"last_error" text,
	"region_id" text NOT NULL,
	"room_id" text,
	"host_id" text,
	"gpu_type_id" text,
	"gpu_count" integer DEFAULT 0 NOT NULL,
	"gpu_held" integer DEFAULT 0 NOT NULL,
	"size_id" text,
	"cpu" integer NOT NULL,
	"memory_gb" integer NOT NULL,
	"image_id" text,
	"application_id" text,
	"data_disk_gb" integer NOT NULL,
	"free_data_disk_gb" integer NOT NULL,
	"cycle" text NOT NULL,
	"hourly_price" bigint NOT NULL,
	"no_card_hourly_price" bigint NOT NULL,
	"disk_daily_price" bigint NOT NULL,
	"expire_at" timestamp with time zone,
	"release_at" timestamp with time zone,
	"release_notice_at" timestamp with time zone,
	"order_id" uuid,
	"usage_order_id" uuid,
	"meter_rate" bigint DEFAULT 0 NOT NULL,
	"meter_since" timestamp with time zone,
	"meter_segment" timestamp with time zone,
	"meter_ms" bigint DEFAULT 0 NOT NULL,
	"meter_charged" bigint DEFAULT 0 NOT NULL,
	"disk_billed_until" timestamp with time zone,
	"arrears" bigint DEFAULT 0 NOT NULL,
	"ssh_host" text,
	"ssh_port" integer,
	"ssh_user" text DEFAULT 'root' NOT NULL,
	"ssh_password_enc" text NOT NULL,
	"jupyter_token" text NOT NULL,
	"pending_op_id" text,
	"pending_action" text,
	"op_started_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"stopped_at" timestamp with time zone,
	"released_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sim_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"op_id" text,
	"instance_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"ok" boolean NOT NULL,
	"error" text,
	"data" jsonb NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sim_faults" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"host_id" text,
	"remaining" integer NOT NULL,
	"message" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sim_lost_hosts" (
	"host_id" text PRIMARY KEY NOT NULL,
	"lost_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sim_machines" (
	"instance_id" uuid PRIMARY KEY NOT NULL,
	"host_id" text,
	"power" text NOT NULL,
	"gpu" boolean NOT NULL,
	"disk_gb" integer NOT NULL,
	"ssh_port" integer NOT NULL,
	"spec" jsonb NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sim_operations" (
	"op_id" text PRIMARY KEY NOT NULL,
	"instance_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"params" jsonb NOT NULL,
	"due_at" timestamp with time zone NOT NULL,
	"state" text NOT NULL,
	"error" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "instances" ADD CONSTRAINT "instances_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "instance_operations_user_idx" ON "instance_operations" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "instance_operations_instance_idx" ON "instance_operations" USING btree ("instance_id","id");--> statement-breakpoint
CREATE INDEX "instances_user_idx" ON "instances" USING btree ("user_id","category","created_at");--> statement-breakpoint
CREATE INDEX "instances_order_idx" ON "instances" USING btree ("order_id");--> statement-breakpoint
CREATE INDEX "instances_meter_idx" ON "instances" USING btree ("meter_since") WHERE "instances"."meter_since" is not null;--> statement-breakpoint
CREATE INDEX "instances_busy_idx" ON "instances" USING btree ("op_started_at") WHERE "instances"."pending_op_id" is not null;--> statement-breakpoint
CREATE INDEX "instances_release_idx" ON "instances" USING btree ("release_at") WHERE "instances"."release_at" is not null and "instances"."released_at" is null;--> statement-breakpoint
CREATE INDEX "instances_expire_idx" ON "instances" USING btree ("expire_at") WHERE "instances"."expire_at" is not null and "instances"."released_at" is null;--> statement-breakpoint
CREATE INDEX "sim_operations_due_idx" ON "sim_operations" USING btree ("due_at") WHERE "sim_operations"."state" = 'pending';