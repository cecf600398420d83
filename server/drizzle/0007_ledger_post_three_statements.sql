-- ledger_post in three statements instead of five (issue 5's bench: ledger transfers against pgbench).
-- The accounts are locked in code order first and created only when one is missing; the balances move
-- and the entries are written in one statement. A spendable account that would go below zero is refused
-- by the table's own CHECK (ledger_accounts_not_negative): the error's failing row carries the balance it
-- would have had, which is how the service tells the user how much is missing (modules/ledger/service.ts).
CREATE OR REPLACE FUNCTION ledger_post(
  p_transfer_id uuid, p_key text, p_kind text, p_memo text, p_actor uuid, p_order text, p_now timestamptz,
  p_codes text[], p_user_ids uuid[], p_kinds text[], p_may_go_negative boolean[], p_amounts bigint[]
) RETURNS TABLE (outcome text, transfer_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid;
  v_found int;
BEGIN
  INSERT INTO ledger_transfers (id, idempotency_key, kind, memo, actor_id, order_id, created_at)
  VALUES (p_transfer_id, p_key, p_kind, p_memo, p_actor, p_order, p_now)
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING id INTO v_id;
  IF v_id IS NULL THEN
    RETURN QUERY SELECT 'replayed'::text, t.id FROM ledger_transfers t WHERE t.idempotency_key = p_key;
    RETURN;
  END IF;

  PERFORM 1 FROM ledger_accounts a WHERE a.code = ANY (p_codes) ORDER BY a.code FOR UPDATE;
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(p_codes) THEN
    INSERT INTO ledger_accounts (id, code, user_id, kind, may_go_negative, created_at)
    SELECT gen_random_uuid(), l.code, l.user_id, l.kind, l.neg, p_now
    FROM unnest(p_codes, p_user_ids, p_kinds, p_may_go_negative) AS l(code, user_id, kind, neg)
    ORDER BY l.code
    ON CONFLICT (code) DO NOTHING;
    PERFORM 1 FROM ledger_accounts a WHERE a.code = ANY (p_codes) ORDER BY a.code FOR UPDATE;
  END IF;

    WITH moved AS (
      UPDATE ledger_accounts a SET balance = a.balance + l.amount
      FROM unnest(p_codes, p_amounts) WITH ORDINALITY AS l(code, amount, ord)
      WHERE a.code = l.code
      RETURNING l.ord, a.id AS account_id, l.amount, a.balance AS balance_after
    )
    INSERT INTO ledger_entries (transfer_id, account_id, amount, balance_after, created_at)
    SELECT p_transfer_id, m.account_id, m.amount, m.balance_after, p_now FROM moved m ORDER BY m.ord;

  RETURN QUERY SELECT 'posted'::text, p_transfer_id;
END;
$$;
