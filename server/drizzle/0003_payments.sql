CREATE TABLE "gift_grants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"source" text NOT NULL,
	"amount" bigint NOT NULL,
	"remain" bigint NOT NULL,
	"status" integer DEFAULT 1 NOT NULL,
	"expire_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "gift_grants_remain_range" CHECK ("gift_grants"."remain" >= 0 and "gift_grants"."remain" <= "gift_grants"."amount")
);
--> statement-breakpoint
CREATE TABLE "payment_notifications" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"method" text NOT NULL,
	"out_trade_no" text DEFAULT '' NOT NULL,
	"outcome" text NOT NULL,
	"reason" text DEFAULT '' NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"out_trade_no" text NOT NULL,
	"method" text NOT NULL,
	"purpose" text NOT NULL,
	"subject_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"status" text DEFAULT 'Pending' NOT NULL,
	"gateway_trade_no" text,
	"qr_content" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"paid_at" timestamp with time zone,
	"last_queried_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "recharges" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"bonus" bigint NOT NULL,
	"method" text NOT NULL,
	"status" text DEFAULT 'Unpaid' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"paid_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sandbox_trades" (
	"out_trade_no" text PRIMARY KEY NOT NULL,
	"data" jsonb NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "gift_grants" ADD CONSTRAINT "gift_grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "recharges" ADD CONSTRAINT "recharges_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "gift_grants_user_idx" ON "gift_grants" USING btree ("user_id","expire_at");--> statement-breakpoint
CREATE INDEX "payment_notifications_trade_idx" ON "payment_notifications" USING btree ("out_trade_no");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_out_trade_no_uq" ON "payments" USING btree ("out_trade_no");--> statement-breakpoint
CREATE INDEX "payments_subject_idx" ON "payments" USING btree ("subject_id");--> statement-breakpoint
CREATE INDEX "payments_pending_idx" ON "payments" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "recharges_user_idx" ON "recharges" USING btree ("user_id","created_at");