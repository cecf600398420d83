CREATE TABLE "comfy_workflows" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"name" text NOT NULL,
	"graph" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "workflow" jsonb;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "workflow_id" uuid;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "workflow_name" text;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "comfy" jsonb;--> statement-breakpoint
ALTER TABLE "comfy_workflows" ADD CONSTRAINT "comfy_workflows_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "comfy_workflows_name_uq" ON "comfy_workflows" USING btree ("user_id","name");--> statement-breakpoint
CREATE INDEX "comfy_workflows_user_idx" ON "comfy_workflows" USING btree ("user_id","updated_at");