CREATE TABLE "operator_images" (
	"id" text PRIMARY KEY NOT NULL,
	"reference" text NOT NULL,
	"local_ref" text NOT NULL,
	"digest" text NOT NULL,
	"source" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"categories" jsonb NOT NULL,
	"port" integer,
	"command" text DEFAULT '' NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "operator_images_local_ref_uq" ON "operator_images" USING btree ("local_ref");--> statement-breakpoint
CREATE UNIQUE INDEX "operator_images_name_uq" ON "operator_images" USING btree ("name");