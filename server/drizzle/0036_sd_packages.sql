ALTER TABLE "sd_train_jobs" ADD COLUMN "package_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sd_train_jobs" ADD COLUMN "package_used_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "image_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sd_gen_tasks" ADD COLUMN "package_images" integer DEFAULT 0 NOT NULL;