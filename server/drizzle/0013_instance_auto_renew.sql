ALTER TABLE "instances" ADD COLUMN "auto_renew" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "auto_renew_failed_for" timestamp with time zone;