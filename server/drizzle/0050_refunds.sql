CREATE TABLE "refunds" (
	"id" uuid PRIMARY KEY NOT NULL,
	"refund_no" text NOT NULL,
	"payment_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"method" text NOT NULL,
	"amount" bigint NOT NULL,
	"bonus_from_gift" bigint DEFAULT 0 NOT NULL,
	"bonus_from_cash" bigint DEFAULT 0 NOT NULL,
	"gift_takes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"reason" text NOT NULL,
	"status" text DEFAULT 'Processing' NOT NULL,
	"gateway_refund_no" text,
	"fail_reason" text DEFAULT '' NOT NULL,
	"operator_id" uuid,
	"last_queried_at" timestamp with time zone,
	"settled_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "refunds_amount_positive" CHECK ("refunds"."amount" > 0)
);
--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_refund_no_uq" ON "refunds" USING btree ("refund_no");--> statement-breakpoint
CREATE INDEX "refunds_payment_idx" ON "refunds" USING btree ("payment_id");--> statement-breakpoint
CREATE INDEX "refunds_user_idx" ON "refunds" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "refunds_processing_idx" ON "refunds" USING btree ("status","last_queried_at");
