-- Slowing down for replicas and WAL (docs/worker.md, "Slowing down for replicas and WAL"):
-- before each batch the worker checks three limits, each off at 0, the default, and waits while
-- one is passed. tests/e2e/replicas.sh shows the worker slowing down; this file shows the
-- settings and the status function as a user reads them (the worker is off here: nothing is
-- measured, nothing waits).
SHOW jsonb_ttl.max_replica_lag;    -- the replay lag of a standby (pg_stat_replication)
SHOW jsonb_ttl.max_slot_wal_keep;  -- the WAL a replication slot holds back (pg_replication_slots)
SHOW jsonb_ttl.max_wal_rate;       -- the WAL the workers' deletes write per second

-- ttl_throttle(): one row per limit, server-wide, like a pg_stat_* view. limit_value is in the
-- row's unit (0: off); last_value and measured_at are what a worker last measured (nothing yet).
SELECT * FROM ttl_throttle();

-- The limits are server settings: postgresql.conf or ALTER SYSTEM, then a reload.
SET jsonb_ttl.max_wal_rate = '1MB';
ALTER SYSTEM SET jsonb_ttl.max_replica_lag = '2s';
ALTER SYSTEM SET jsonb_ttl.max_slot_wal_keep = '1GB';
ALTER SYSTEM SET jsonb_ttl.max_wal_rate = '16MB';   -- 16 MB a second
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);    -- this session reads the new configuration before its next statement
SHOW jsonb_ttl.max_replica_lag;
SHOW jsonb_ttl.max_slot_wal_keep;
SHOW jsonb_ttl.max_wal_rate;
SELECT setting, unit, limit_value, last_value, measured_at, slowed, slowed_since, slowdowns, waited_ms
FROM ttl_throttle();

-- Units as PostgreSQL reads them: a lag in ms (or s, min), sizes in kB (or MB, GB).
ALTER SYSTEM SET jsonb_ttl.max_replica_lag = 250;
ALTER SYSTEM SET jsonb_ttl.max_slot_wal_keep = 4096;
ALTER SYSTEM SET jsonb_ttl.max_wal_rate = '-1';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT setting, unit, limit_value FROM ttl_throttle();

ALTER SYSTEM RESET jsonb_ttl.max_replica_lag;
ALTER SYSTEM RESET jsonb_ttl.max_slot_wal_keep;
ALTER SYSTEM RESET jsonb_ttl.max_wal_rate;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT setting, limit_value, slowed FROM ttl_throttle();
