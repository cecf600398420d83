CREATE TABLE "gpu_subscriptions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"gpu_type_id" text NOT NULL,
	"region_id" text NOT NULL,
	"gpu_count" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"notified_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "notice_flags" (
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"raised_at" timestamp with time zone NOT NULL,
	CONSTRAINT "notice_flags_user_id_kind_pk" PRIMARY KEY("user_id","kind")
);
--> statement-breakpoint
CREATE TABLE "notice_messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"title" text NOT NULL,
	"body" text NOT NULL,
	"link" text,
	"subject" text,
	"period" text,
	"sms" text,
	"mail" text,
	"created_at" timestamp with time zone NOT NULL,
	"read_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "notice_preferences" (
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"sms" boolean NOT NULL,
	"mail" boolean NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "notice_preferences_user_id_kind_pk" PRIMARY KEY("user_id","kind")
);
--> statement-breakpoint
ALTER TABLE "gpu_subscriptions" ADD CONSTRAINT "gpu_subscriptions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notice_flags" ADD CONSTRAINT "notice_flags_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notice_messages" ADD CONSTRAINT "notice_messages_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notice_preferences" ADD CONSTRAINT "notice_preferences_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "gpu_subscriptions_waiting_uq" ON "gpu_subscriptions" USING btree ("user_id","gpu_type_id","region_id","gpu_count") WHERE "gpu_subscriptions"."notified_at" is null;--> statement-breakpoint
CREATE INDEX "gpu_subscriptions_waiting_idx" ON "gpu_subscriptions" USING btree ("gpu_type_id","region_id") WHERE "gpu_subscriptions"."notified_at" is null;--> statement-breakpoint
CREATE INDEX "gpu_subscriptions_user_idx" ON "gpu_subscriptions" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "notice_messages_user_idx" ON "notice_messages" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "notice_messages_unread_idx" ON "notice_messages" USING btree ("user_id") WHERE "notice_messages"."read_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "notice_messages_occasion_uq" ON "notice_messages" USING btree ("user_id","kind","subject","period");