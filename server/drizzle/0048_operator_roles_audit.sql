CREATE TABLE "operator_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"actor_id" uuid,
	"actor_mobile" text NOT NULL,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text NOT NULL,
	"before" jsonb,
	"after" jsonb,
	"reason" text DEFAULT '' NOT NULL,
	"request_id" text DEFAULT '' NOT NULL,
	"ip" text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operator_money_requests" (
	"id" uuid PRIMARY KEY NOT NULL,
	"direction" text NOT NULL,
	"user_id" uuid NOT NULL,
	"account" text NOT NULL,
	"amount" bigint NOT NULL,
	"gift_valid_days" integer NOT NULL,
	"reason" text NOT NULL,
	"request_key" text NOT NULL,
	"status" text NOT NULL,
	"requested_by" uuid NOT NULL,
	"decided_by" uuid,
	"decision_reason" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"decided_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "operator_roles" (
	"user_id" uuid NOT NULL,
	"role" text NOT NULL,
	"granted_by" uuid,
	"granted_at" timestamp with time zone NOT NULL,
	CONSTRAINT "operator_roles_user_id_role_pk" PRIMARY KEY("user_id","role")
);
--> statement-breakpoint
CREATE INDEX "operator_audit_at_idx" ON "operator_audit" USING btree ("at");--> statement-breakpoint
CREATE INDEX "operator_audit_actor_idx" ON "operator_audit" USING btree ("actor_id","at");--> statement-breakpoint
CREATE INDEX "operator_audit_action_idx" ON "operator_audit" USING btree ("action","at");--> statement-breakpoint
CREATE INDEX "operator_audit_target_idx" ON "operator_audit" USING btree ("target_id","at");--> statement-breakpoint
CREATE UNIQUE INDEX "operator_money_requests_key_uq" ON "operator_money_requests" USING btree ("request_key");--> statement-breakpoint
CREATE INDEX "operator_money_requests_status_idx" ON "operator_money_requests" USING btree ("status","created_at");--> statement-breakpoint
-- The audit trail is append-only for everyone, the console's own database user included: a row, once
-- written, can be neither changed nor removed (issue 32 "cannot be edited or deleted").
CREATE FUNCTION operator_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'operator_audit is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;--> statement-breakpoint
CREATE TRIGGER operator_audit_no_update_delete BEFORE UPDATE OR DELETE ON "operator_audit"
FOR EACH ROW EXECUTE FUNCTION operator_audit_append_only();--> statement-breakpoint
CREATE TRIGGER operator_audit_no_truncate BEFORE TRUNCATE ON "operator_audit"
FOR EACH STATEMENT EXECUTE FUNCTION operator_audit_append_only();--> statement-breakpoint
-- The old operator flag becomes the 管理员 role (the flag stays as "holds some operator role").
INSERT INTO "operator_roles" ("user_id", "role", "granted_by", "granted_at")
SELECT "id", 'admin', NULL, now() FROM "users" WHERE "is_operator" = true
ON CONFLICT DO NOTHING;
