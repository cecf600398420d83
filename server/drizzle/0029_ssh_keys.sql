CREATE TABLE "ssh_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text NOT NULL,
	"algorithm" text NOT NULL,
	"blob" text NOT NULL,
	"fingerprint" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"last_used_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "ssh_keys" ADD CONSTRAINT "ssh_keys_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ssh_keys_user_fingerprint_uq" ON "ssh_keys" USING btree ("user_id","fingerprint");--> statement-breakpoint
CREATE INDEX "ssh_keys_fingerprint_idx" ON "ssh_keys" USING btree ("fingerprint");