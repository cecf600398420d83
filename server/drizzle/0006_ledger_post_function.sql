-- One ledger transfer in one round trip (see modules/ledger/service.ts): the transfer row under its
-- idempotency key, missing accounts created before any lock is taken, the accounts locked in code
-- order, spendable ones checked, balances moved and entries written with their running balances.
-- Returns 'posted', or 'replayed' with the id of the transfer already posted under the key.
-- A spendable account that would go below zero raises SQLSTATE P0001 with 'INSUFFICIENT_BALANCE:<short>'.
CREATE OR REPLACE FUNCTION ledger_post(
  p_transfer_id uuid, p_key text, p_kind text, p_memo text, p_actor uuid, p_order text, p_now timestamptz,
  p_codes text[], p_user_ids uuid[], p_kinds text[], p_may_go_negative boolean[], p_amounts bigint[]
) RETURNS TABLE (outcome text, transfer_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid;
  v_short bigint;
BEGIN
  INSERT INTO ledger_transfers (id, idempotency_key, kind, memo, actor_id, order_id, created_at)
  VALUES (p_transfer_id, p_key, p_kind, p_memo, p_actor, p_order, p_now)
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING id INTO v_id;
  IF v_id IS NULL THEN
    RETURN QUERY SELECT 'replayed'::text, t.id FROM ledger_transfers t WHERE t.idempotency_key = p_key;
    RETURN;
  END IF;

  INSERT INTO ledger_accounts (id, code, user_id, kind, may_go_negative, created_at)
  SELECT gen_random_uuid(), l.code, l.user_id, l.kind, l.neg, p_now
  FROM unnest(p_codes, p_user_ids, p_kinds, p_may_go_negative) AS l(code, user_id, kind, neg)
  WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.code = l.code)
  ON CONFLICT (code) DO NOTHING;

  PERFORM 1 FROM ledger_accounts a WHERE a.code = ANY (p_codes) ORDER BY a.code FOR UPDATE;

  SELECT min(a.balance + l.amount) INTO v_short
  FROM unnest(p_codes, p_amounts) AS l(code, amount)
  JOIN ledger_accounts a ON a.code = l.code
  WHERE NOT a.may_go_negative AND a.balance + l.amount < 0;
  IF v_short IS NOT NULL THEN
    RAISE EXCEPTION 'INSUFFICIENT_BALANCE:%', -v_short;
  END IF;

  WITH l AS (
    SELECT l.ord, a.id AS account_id, l.amount, a.balance + l.amount AS balance_after
    FROM unnest(p_codes, p_amounts) WITH ORDINALITY AS l(code, amount, ord)
    JOIN ledger_accounts a ON a.code = l.code
  ), moved AS (
    UPDATE ledger_accounts a SET balance = l.balance_after FROM l WHERE a.id = l.account_id
  )
  INSERT INTO ledger_entries (transfer_id, account_id, amount, balance_after, created_at)
  SELECT p_transfer_id, l.account_id, l.amount, l.balance_after, p_now FROM l ORDER BY l.ord;

  RETURN QUERY SELECT 'posted'::text, p_transfer_id;
END;
$$;
