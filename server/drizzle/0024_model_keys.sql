CREATE TABLE "model_api_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_id" uuid NOT NULL,
	"payer_id" uuid NOT NULL,
	"name" text NOT NULL,
	"secret_hash" text NOT NULL,
	"masked" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"expires_at" timestamp with time zone,
	"spend_limit" bigint,
	"spent" bigint DEFAULT 0 NOT NULL,
	"allowed_models" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"allowed_ips" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"rpm_limit" integer,
	"tpm_limit" integer,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "model_api_keys" ADD CONSTRAINT "model_api_keys_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_api_keys" ADD CONSTRAINT "model_api_keys_payer_id_users_id_fk" FOREIGN KEY ("payer_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "model_api_keys_secret_hash_uq" ON "model_api_keys" USING btree ("secret_hash");--> statement-breakpoint
CREATE INDEX "model_api_keys_owner_idx" ON "model_api_keys" USING btree ("owner_id","created_at") WHERE "model_api_keys"."deleted_at" is null;