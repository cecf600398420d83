CREATE TABLE "fleet_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"host_id" text NOT NULL,
	"host_seq" bigint,
	"op_id" text,
	"instance_id" text NOT NULL,
	"kind" text NOT NULL,
	"ok" boolean NOT NULL,
	"error" text,
	"data" jsonb NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fleet_hosts" (
	"host_id" text PRIMARY KEY NOT NULL,
	"base_url" text NOT NULL,
	"key_id" text NOT NULL,
	"secret_sealed" text NOT NULL,
	"status" text DEFAULT 'up' NOT NULL,
	"registered_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone,
	"lost_at" timestamp with time zone,
	"report" jsonb,
	"healthy" boolean DEFAULT false NOT NULL,
	"last_error" text,
	"agent_seq" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fleet_machines" (
	"instance_id" uuid PRIMARY KEY NOT NULL,
	"host_id" text NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "fleet_events_host_seq" ON "fleet_events" USING btree ("host_id","host_seq");