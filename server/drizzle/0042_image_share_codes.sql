CREATE TABLE "user_image_grants" (
	"image_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"code" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "user_image_grants_image_id_user_id_pk" PRIMARY KEY("image_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "user_image_share_codes" (
	"code" text PRIMARY KEY NOT NULL,
	"image_id" uuid NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "user_image_grants" ADD CONSTRAINT "user_image_grants_image_id_user_images_id_fk" FOREIGN KEY ("image_id") REFERENCES "public"."user_images"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_image_grants" ADD CONSTRAINT "user_image_grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_image_grants" ADD CONSTRAINT "user_image_grants_code_user_image_share_codes_code_fk" FOREIGN KEY ("code") REFERENCES "public"."user_image_share_codes"("code") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_image_share_codes" ADD CONSTRAINT "user_image_share_codes_image_id_user_images_id_fk" FOREIGN KEY ("image_id") REFERENCES "public"."user_images"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "user_image_grants_user_idx" ON "user_image_grants" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "user_image_share_codes_live_uq" ON "user_image_share_codes" USING btree ("image_id") WHERE "user_image_share_codes"."revoked_at" is null;