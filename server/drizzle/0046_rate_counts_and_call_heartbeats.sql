CREATE TABLE "rate_counts" (
	"key" text NOT NULL,
	"second" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"expires" bigint NOT NULL,
	CONSTRAINT "rate_counts_key_second_pk" PRIMARY KEY("key","second")
);
--> statement-breakpoint
DROP INDEX "model_calls_open_idx";--> statement-breakpoint
ALTER TABLE "model_calls" ADD COLUMN "touched_at" timestamp with time zone;--> statement-breakpoint
-- Calls open before this migration: as touched when they were held (their process heartbeats from its next start on).
UPDATE "model_calls" SET "touched_at" = "created_at" WHERE "status" = 'open';--> statement-breakpoint
CREATE INDEX "model_calls_open_idx" ON "model_calls" USING btree ("touched_at") WHERE "model_calls"."status" = 'open';--> statement-breakpoint
-- Counts a call against every counter in p_keys at once, or against none (drivers/counters/postgres.ts).
-- Each counter's transaction lock is taken in key order (two calls never wait on each other in a circle)
-- and held to the commit; each statement after it sees what the calls before committed. Per counter:
-- the seconds that left its window (p_windows, seconds) are dropped, the rest summed; a counter passes
-- while the sum is under its limit and its amount more stays within it. All pass: the amounts are
-- counted in the current second of p_now_ms. Answers (0, 0), or the first counter that did not pass
-- (1-based) and in how many ms it would, as its oldest seconds leave the window.
CREATE OR REPLACE FUNCTION rate_take(p_keys text[], p_limits bigint[], p_amounts bigint[], p_windows bigint[], p_now_ms bigint)
RETURNS TABLE (refused int, retry_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := p_now_ms / 1000;
  v_key text;
  v_sum bigint;
  v_left bigint;
  v_i int;
  r record;
BEGIN
  FOR v_key IN SELECT DISTINCT k FROM unnest(p_keys) AS k ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('rate:' || v_key, 0));
  END LOOP;
  FOR v_i IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
    DELETE FROM rate_counts c WHERE c.key = p_keys[v_i] AND c.second <= v_now - p_windows[v_i];
    SELECT coalesce(sum(c.amount), 0) INTO v_sum FROM rate_counts c WHERE c.key = p_keys[v_i];
    IF NOT (v_sum < p_limits[v_i] AND v_sum + p_amounts[v_i] <= p_limits[v_i]) THEN
      v_left := v_sum;
      FOR r IN SELECT c.second, c.amount FROM rate_counts c WHERE c.key = p_keys[v_i] ORDER BY c.second LOOP
        v_left := v_left - r.amount;
        IF v_left < p_limits[v_i] AND v_left + p_amounts[v_i] <= p_limits[v_i] THEN
          RETURN QUERY SELECT v_i, greatest(1, (r.second + p_windows[v_i]) * 1000 - p_now_ms);
          RETURN;
        END IF;
      END LOOP;
      RETURN QUERY SELECT v_i, p_windows[v_i] * 1000;
      RETURN;
    END IF;
  END LOOP;
  INSERT INTO rate_counts AS c (key, second, amount, expires)
  SELECT t.k, v_now, t.a, v_now + t.w FROM unnest(p_keys, p_amounts, p_windows) AS t(k, a, w) WHERE t.a <> 0
  ON CONFLICT (key, second) DO UPDATE SET amount = c.amount + excluded.amount, expires = greatest(c.expires, excluded.expires);
  RETURN QUERY SELECT 0, 0::bigint;
END $$;
