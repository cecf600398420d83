ALTER TABLE "users" ADD COLUMN "perm_finance" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "spend_limit" bigint;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "spend_limit_period" text;--> statement-breakpoint
CREATE INDEX "orders_child_created_idx" ON "orders" USING btree ("created_by","created_at") WHERE "orders"."created_by" <> "orders"."user_id";