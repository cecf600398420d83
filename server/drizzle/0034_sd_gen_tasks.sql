CREATE TABLE "sd_gen_images" (
	"id" uuid PRIMARY KEY NOT NULL,
	"task_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"index" integer NOT NULL,
	"seed" bigint NOT NULL,
	"storage_key" text NOT NULL,
	"bytes" bigint NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sd_gen_tasks" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"request_id" uuid NOT NULL,
	"params" jsonb NOT NULL,
	"loras" jsonb NOT NULL,
	"status" text NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"step" integer DEFAULT 0 NOT NULL,
	"unit_price" bigint NOT NULL,
	"held" bigint NOT NULL,
	"charged" bigint DEFAULT 0 NOT NULL,
	"refunded" bigint DEFAULT 0 NOT NULL,
	"error" text,
	"runner" text,
	"heartbeat_at" timestamp with time zone,
	"runs" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sd_gen_images" ADD CONSTRAINT "sd_gen_images_task_id_sd_gen_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."sd_gen_tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD CONSTRAINT "sd_gen_tasks_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sd_gen_images_task_uq" ON "sd_gen_images" USING btree ("task_id","index");--> statement-breakpoint
CREATE INDEX "sd_gen_images_user_idx" ON "sd_gen_images" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "sd_gen_tasks_request_uq" ON "sd_gen_tasks" USING btree ("user_id","request_id");--> statement-breakpoint
CREATE INDEX "sd_gen_tasks_user_idx" ON "sd_gen_tasks" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "sd_gen_tasks_active_idx" ON "sd_gen_tasks" USING btree ("created_at") WHERE "sd_gen_tasks"."status" in ('queued', 'running');