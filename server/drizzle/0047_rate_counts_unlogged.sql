-- The rate counters (drivers/counters/postgres.ts) need no durability: without WAL a counted call costs no
-- WAL flush at commit (about 2.2 ms down to 0.5 ms per call on the development machine's PostgreSQL).
-- After a crash of the database server the table starts empty, and a physical standby does not carry it:
-- at worst a key gets up to one more window's calls after a database crash or failover.
ALTER TABLE "rate_counts" SET UNLOGGED;
