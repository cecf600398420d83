CREATE TABLE "user_images" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"created_by" uuid NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"fail_reason" text,
	"category" text NOT NULL,
	"source_instance_id" uuid NOT NULL,
	"source_instance_name" text NOT NULL,
	"base_image_id" text,
	"gpu_type_id" text,
	"size_gb" integer,
	"shared" boolean DEFAULT false NOT NULL,
	"op_id" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "user_image_id" uuid;--> statement-breakpoint
ALTER TABLE "user_images" ADD CONSTRAINT "user_images_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "user_images_user_idx" ON "user_images" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "user_images_name_uq" ON "user_images" USING btree ("user_id","name") WHERE "user_images"."deleted_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "user_images_op_uq" ON "user_images" USING btree ("op_id");