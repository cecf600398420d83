CREATE TABLE "sd_train_epochs" (
	"job_id" uuid NOT NULL,
	"epoch" integer NOT NULL,
	"lora_key" text NOT NULL,
	"lora_bytes" bigint NOT NULL,
	"sample_keys" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "sd_train_epochs_job_id_epoch_pk" PRIMARY KEY("job_id","epoch")
);
--> statement-breakpoint
CREATE TABLE "sd_train_jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"request_id" uuid NOT NULL,
	"dataset_id" uuid,
	"dataset_name" text NOT NULL,
	"kind" text NOT NULL,
	"trigger_word" text NOT NULL,
	"image_ids" jsonb NOT NULL,
	"name" text NOT NULL,
	"base_model" text NOT NULL,
	"params" jsonb NOT NULL,
	"status" text NOT NULL,
	"steps_per_epoch" integer NOT NULL,
	"steps_total" integer NOT NULL,
	"step" integer DEFAULT 0 NOT NULL,
	"epoch" integer DEFAULT 0 NOT NULL,
	"estimate_seconds" integer NOT NULL,
	"rate_per_hour" bigint NOT NULL,
	"held" bigint NOT NULL,
	"charged" bigint DEFAULT 0 NOT NULL,
	"refunded" bigint DEFAULT 0 NOT NULL,
	"loss" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"log" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"error" text,
	"runner" text,
	"heartbeat_at" timestamp with time zone,
	"runs" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sd_train_epochs" ADD CONSTRAINT "sd_train_epochs_job_id_sd_train_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."sd_train_jobs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sd_train_jobs" ADD CONSTRAINT "sd_train_jobs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sd_train_jobs_request_uq" ON "sd_train_jobs" USING btree ("user_id","request_id");--> statement-breakpoint
CREATE INDEX "sd_train_jobs_user_idx" ON "sd_train_jobs" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "sd_train_jobs_active_idx" ON "sd_train_jobs" USING btree ("created_at") WHERE "sd_train_jobs"."status" in ('queued', 'preparing', 'training', 'saving');