CREATE TABLE "sd_dataset_images" (
	"id" uuid PRIMARY KEY NOT NULL,
	"dataset_id" uuid NOT NULL,
	"name" text NOT NULL,
	"format" text NOT NULL,
	"width" integer NOT NULL,
	"height" integer NOT NULL,
	"bytes" bigint NOT NULL,
	"caption" text NOT NULL,
	"storage_key" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sd_datasets" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"description" text NOT NULL,
	"trigger_word" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sd_dataset_images" ADD CONSTRAINT "sd_dataset_images_dataset_id_sd_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."sd_datasets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sd_datasets" ADD CONSTRAINT "sd_datasets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sd_dataset_images_name_uq" ON "sd_dataset_images" USING btree ("dataset_id","name");--> statement-breakpoint
CREATE INDEX "sd_dataset_images_dataset_idx" ON "sd_dataset_images" USING btree ("dataset_id","created_at");--> statement-breakpoint
CREATE INDEX "sd_datasets_user_idx" ON "sd_datasets" USING btree ("user_id","created_at");