-- Every transfer rewrites two ledger_accounts rows (their balance, which no index covers). With room
-- left on each page the new row version stays on the same page (a HOT update) and neither index
-- (code, user_id) is touched: issue 5's bench, ledger transfers against pgbench.
ALTER TABLE "ledger_accounts" SET (fillfactor = 70);
