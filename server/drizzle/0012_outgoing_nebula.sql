CREATE TABLE "invoices" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"requested_by" uuid NOT NULL,
	"kind" text NOT NULL,
	"title_type" text NOT NULL,
	"title" text NOT NULL,
	"tax_no" text DEFAULT '' NOT NULL,
	"email" text NOT NULL,
	"amount" bigint NOT NULL,
	"status" text DEFAULT 'Pending' NOT NULL,
	"invoice_no" text,
	"reject_reason" text,
	"operator_id" uuid,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"closed_at" timestamp with time zone,
	CONSTRAINT "invoices_amount_positive" CHECK ("invoices"."amount" > 0)
);
--> statement-breakpoint
CREATE TABLE "resource_package_usages" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"package_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"instance_id" uuid NOT NULL,
	"segment" timestamp with time zone NOT NULL,
	"amount" bigint NOT NULL,
	"key" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "resource_packages" ADD COLUMN "gpu_type_id" text;--> statement-breakpoint
ALTER TABLE "resource_packages" ADD COLUMN "unit_scale" bigint DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "invoices_user_idx" ON "invoices" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "invoices_status_idx" ON "invoices" USING btree ("status","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "resource_package_usages_key_uq" ON "resource_package_usages" USING btree ("key");--> statement-breakpoint
CREATE INDEX "resource_package_usages_run_idx" ON "resource_package_usages" USING btree ("instance_id","segment");--> statement-breakpoint
CREATE INDEX "resource_package_usages_package_idx" ON "resource_package_usages" USING btree ("package_id");--> statement-breakpoint
ALTER TABLE "resource_packages" ADD CONSTRAINT "resource_packages_remain_range" CHECK ("resource_packages"."remain" >= 0 and "resource_packages"."remain" <= "resource_packages"."total");--> statement-breakpoint
-- Card-hour packages sold before packages knew their GPU type: the one such product was for RTX 4090.
UPDATE "resource_packages" SET "gpu_type_id" = 'rtx4090', "unit_scale" = 3600000, "total" = "total" * 3600000, "remain" = "remain" * 3600000 WHERE "product_id" = 'gpu-hours-4090-100' AND "gpu_type_id" IS NULL;
