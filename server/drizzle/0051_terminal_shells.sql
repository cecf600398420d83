CREATE TABLE "terminal_shells" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"instance_id" uuid NOT NULL,
	"replica" text NOT NULL,
	"opened_at" timestamp with time zone NOT NULL,
	"touched_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "terminal_shells_user_idx" ON "terminal_shells" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "terminal_shells_touched_idx" ON "terminal_shells" USING btree ("touched_at");