CREATE TABLE "model_floats" (
	"id" uuid PRIMARY KEY NOT NULL,
	"payer_id" uuid NOT NULL,
	"funded" bigint NOT NULL,
	"charged" bigint DEFAULT 0 NOT NULL,
	"flushes" integer DEFAULT 0 NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"touched_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "model_floats_open_idx" ON "model_floats" USING btree ("touched_at") WHERE "model_floats"."status" = 'open';