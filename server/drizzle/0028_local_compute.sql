CREATE TABLE "local_events" (
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
CREATE TABLE "local_machines" (
	"instance_id" uuid PRIMARY KEY NOT NULL,
	"host_id" text NOT NULL,
	"power" text NOT NULL,
	"gpu" boolean NOT NULL,
	"disk_gb" integer NOT NULL,
	"bandwidth_mbps" integer DEFAULT 0 NOT NULL,
	"ssh_port" integer NOT NULL,
	"spec" jsonb NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "local_operations" (
	"op_id" text PRIMARY KEY NOT NULL,
	"instance_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"params" jsonb NOT NULL,
	"state" text NOT NULL,
	"error" text,
	"created_at" timestamp with time zone NOT NULL
);
