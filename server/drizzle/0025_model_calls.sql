CREATE TABLE "model_calls" (
	"id" uuid PRIMARY KEY NOT NULL,
	"key_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"payer_id" uuid NOT NULL,
	"model" text NOT NULL,
	"channel" text,
	"prompt_tokens" integer DEFAULT 0 NOT NULL,
	"completion_tokens" integer DEFAULT 0 NOT NULL,
	"cost" bigint DEFAULT 0 NOT NULL,
	"held" bigint DEFAULT 0 NOT NULL,
	"latency_ms" integer DEFAULT 0 NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "model_calls_key_idx" ON "model_calls" USING btree ("key_id","created_at");--> statement-breakpoint
CREATE INDEX "model_calls_payer_idx" ON "model_calls" USING btree ("payer_id","created_at");--> statement-breakpoint
CREATE INDEX "model_calls_open_idx" ON "model_calls" USING btree ("created_at") WHERE "model_calls"."status" = 'open';