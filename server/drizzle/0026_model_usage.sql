CREATE TABLE "model_conversations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"title" text NOT NULL,
	"model" text NOT NULL,
	"system" text NOT NULL,
	"temperature" double precision NOT NULL,
	"max_tokens" integer NOT NULL,
	"messages" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "model_rollup_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"rolled_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "model_usage_hourly" (
	"hour" timestamp with time zone NOT NULL,
	"payer_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"key_id" uuid NOT NULL,
	"model" text NOT NULL,
	"requests" integer NOT NULL,
	"failed" integer NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"package_tokens" bigint NOT NULL,
	"cost" bigint NOT NULL,
	CONSTRAINT "model_usage_hourly_payer_id_hour_key_id_model_pk" PRIMARY KEY("payer_id","hour","key_id","model")
);
--> statement-breakpoint
ALTER TABLE "resource_package_usages" ALTER COLUMN "instance_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "resource_package_usages" ALTER COLUMN "segment" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "resource_package_usages" ADD COLUMN "model_call_id" uuid;--> statement-breakpoint
ALTER TABLE "model_api_keys" ADD COLUMN "playground" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "model_calls" ADD COLUMN "held_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "model_calls" ADD COLUMN "package_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "model_conversations" ADD CONSTRAINT "model_conversations_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "model_conversations_user_idx" ON "model_conversations" USING btree ("user_id","updated_at");--> statement-breakpoint
CREATE INDEX "model_usage_hourly_user_idx" ON "model_usage_hourly" USING btree ("user_id","hour");--> statement-breakpoint
CREATE INDEX "resource_package_usages_call_idx" ON "resource_package_usages" USING btree ("model_call_id") WHERE "resource_package_usages"."model_call_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "model_api_keys_playground_uq" ON "model_api_keys" USING btree ("owner_id") WHERE "model_api_keys"."playground";--> statement-breakpoint
CREATE INDEX "model_calls_user_idx" ON "model_calls" USING btree ("user_id","created_at");