CREATE TABLE "account_reviews" (
	"id" uuid PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"subject_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"decision" text NOT NULL,
	"reason" text DEFAULT '' NOT NULL,
	"actor_id" uuid,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "certifications" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"real_name" text DEFAULT '' NOT NULL,
	"id_number_sealed" text DEFAULT '' NOT NULL,
	"id_number_masked" text DEFAULT '' NOT NULL,
	"company_name" text DEFAULT '' NOT NULL,
	"credit_code" text DEFAULT '' NOT NULL,
	"legal_person" text DEFAULT '' NOT NULL,
	"contact_name" text DEFAULT '' NOT NULL,
	"contact_mobile" text DEFAULT '' NOT NULL,
	"licence_key" text,
	"provider_ref" text,
	"reason" text DEFAULT '' NOT NULL,
	"submitted_at" timestamp with time zone,
	"decided_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "student_verifications" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"school" text DEFAULT '' NOT NULL,
	"level" text,
	"enroll_year" integer,
	"graduate_year" integer,
	"email" text DEFAULT '' NOT NULL,
	"email_verified_at" timestamp with time zone,
	"image_key" text,
	"reason" text DEFAULT '' NOT NULL,
	"submitted_at" timestamp with time zone,
	"decided_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
DROP INDEX "users_child_name_uq";--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "child_remark" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "deleted_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "account_reviews_created_idx" ON "account_reviews" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "account_reviews_user_idx" ON "account_reviews" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "certifications_user_type_uq" ON "certifications" USING btree ("user_id","type");--> statement-breakpoint
CREATE INDEX "certifications_status_idx" ON "certifications" USING btree ("type","status","submitted_at");--> statement-breakpoint
CREATE INDEX "student_verifications_status_idx" ON "student_verifications" USING btree ("status","submitted_at");--> statement-breakpoint
CREATE UNIQUE INDEX "users_live_child_name_uq" ON "users" USING btree ("parent_id","child_name") WHERE "users"."is_child" and "users"."deleted_at" is null;