ALTER TABLE "instances" ADD COLUMN "pending_op_kind" text;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "pending_op_params" jsonb;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "pending_op_from" text;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "pending_op_booting" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- Operations in flight when the console is upgraded go on: pending_action "kind:from[:param]" becomes
-- the columns (a task's parameter as JSON, or as the JSON string of the text written before
-- parameters were JSON, which the task's legacy reader reads), and a creation's ":boot" op id
-- (waiting for the machine's boot) the flag.
UPDATE "instances" SET
  "pending_op_kind" = split_part("pending_action", ':', 1),
  "pending_op_from" = coalesce(nullif(split_part("pending_action", ':', 2), ''), 'Stopped'),
  "pending_op_params" = CASE
    WHEN coalesce(substring("pending_action" from '^[^:]*:[^:]*:(.*)$'), '') = '' THEN NULL
    WHEN substring("pending_action" from '^[^:]*:[^:]*:(.*)$') LIKE '{%' THEN substring("pending_action" from '^[^:]*:[^:]*:(.*)$')::jsonb
    ELSE to_jsonb(substring("pending_action" from '^[^:]*:[^:]*:(.*)$'))
  END
WHERE "pending_action" IS NOT NULL;--> statement-breakpoint
UPDATE "instances" SET
  "pending_op_id" = left("pending_op_id", length("pending_op_id") - length(':boot')),
  "pending_op_booting" = true
WHERE "pending_op_id" LIKE '%:boot';
