#!/usr/bin/env bash
# The safety brake: a TTL index whose next visit would remove more than
# jsonb_ttl.max_table_fraction (0.5) of a table of at least jsonb_ttl.brake_min_rows (10,000)
# rows is paused, logged and shown, until its owner calls ttl_index_resume(); the brake holds
# again once the table is drained. Small tables and steady ones are purged as ever.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-brake 28846 "jsonb_ttl.frequency = 200" "jsonb_ttl.max_table_fraction = 0.5"
expect_eq "0.5 and 10,000 rows are the defaults" "0.5 10000" \
  "$(q postgres -c "SELECT string_agg(boot_val, ' ' ORDER BY name DESC) FROM pg_settings WHERE name IN ('jsonb_ttl.max_table_fraction', 'jsonb_ttl.brake_min_rows')")"

q postgres -c "CREATE DATABASE brake"
q brake <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE tenant LOGIN;
GRANT CREATE ON SCHEMA public TO tenant;
CREATE TABLE sessions (id int PRIMARY KEY, doc jsonb);
-- a mistake: '1 minute' meant '1 month'; 15,000 of 20,000 sessions are a few days old
INSERT INTO sessions SELECT g, jsonb_build_object('seen', now() - CASE WHEN g <= 15000 THEN interval '3 days' ELSE interval '0' END + interval '1 hour')
FROM generate_series(1, 20000) g;
-- (the inserts' statistics reach the counters before ANALYZE: an ANALYZE within a second of
-- its own session's INSERT has the INSERT counted twice in n_live_tup, a PostgreSQL quirk the
-- brake's size estimate would inherit; see the mass-expiry check below)
SELECT pg_sleep(1.1);
ANALYZE sessions;
ALTER TABLE sessions OWNER TO tenant;
-- the owner's code: a forced row security policy that notes who evaluates it (the brake's
-- count reads the table as its owner, never as the superuser the worker is)
CREATE TABLE seen (who name);
GRANT INSERT ON seen TO PUBLIC;
CREATE FUNCTION note_reader() RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO public.seen VALUES (current_user); RETURN true; END $$;
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY readers ON sessions USING (public.note_reader());
CREATE TABLE steady (id int PRIMARY KEY, doc jsonb);
INSERT INTO steady SELECT g, jsonb_build_object('seen', now() - CASE WHEN g <= 1000 THEN interval '3 days' ELSE interval '0' END + interval '1 hour')
FROM generate_series(1, 20000) g;
SELECT pg_sleep(1.1);
ANALYZE steady;
CREATE TABLE tiny (id int PRIMARY KEY, doc jsonb);
INSERT INTO tiny VALUES (1, '{"seen": "2019-01-01"}'), (2, '{"seen": "2019-01-02"}');
SQL
# (created right, then shortened by mistake: the alter counts what its new definition expires,
# finds 75 % of the table and holds the index there and then; the worker's own brake is for the
# surprises no statement makes, such as the clock jump of steady below)
q brake -c "SET ROLE tenant" -c "SELECT FROM ttl_index_create('sessions', 'seen', interval '30 days')" \
        -c "SELECT FROM ttl_index_alter('sessions', interval '1 minute')" \
        -c "RESET ROLE" -c "SELECT FROM ttl_index_create('steady', 'seen', interval '1 day')" \
        -c "SELECT FROM ttl_index_create('tiny', 'seen', interval '1 day')"
expect_eq "the preview shows what a pass would remove" 15000 "$(q brake -c "SELECT rows FROM ttl_expire_preview('sessions')")"

paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'sessions'::regclass")" = t ]; }
wait_for "the alter holds the TTL index of sessions (75 % expired at once)" 10 paused
expect_eq "and nothing of sessions was deleted" 20000 "$(q brake -c "SELECT count(*) FROM sessions")"
expect_eq "its owner's policy ran while the alter counted the table, as the owner only" tenant \
  "$(q brake -c "SELECT string_agg(DISTINCT who::text, ',') FROM seen")"
expect_eq "ttl_stats says why, and how to go on" t \
  "$(q brake -c "SELECT skipped LIKE 'held by the safety brake: 15000 of 20000 rows would expire at once%ttl_index_resume(''public.sessions'')' FROM ttl_stats WHERE table_name = 'sessions'::regclass")"
expect_eq "ttl_stats says the brake paused it" brake \
  "$(q brake -c "SELECT paused_by FROM ttl_stats WHERE table_name = 'sessions'::regclass")"
eventually_eq "a steady table (5 % expired) is purged as ever" 10 19000 brake "SELECT count(*) FROM steady"
eventually_eq "a table of two rows, both expired, is purged" 10 0 brake "SELECT count(*) FROM tiny"
sleep 1
expect_eq "a held index stays paused pass after pass (the worker pauses nothing itself)" "20000 0" \
  "$(q brake -c "SELECT count(*) FROM sessions") $(grep -c 'jsonb_ttl: paused by the safety brake' "$CLUSTER_DIR/server.log" || true)"

expect_eq "only the owner may resume" "must be owner of table public.sessions" \
  "$(q brake -c "CREATE ROLE other" -c "SET ROLE other" -c "SELECT ttl_index_resume('sessions')" 2>&1 | grep -o 'must be owner of table [a-z.]*' | head -1)"
expect_eq "the owner resumes: it was paused" t "$(q brake -c "SET ROLE tenant" -c "SELECT ttl_index_resume('sessions')")"
eventually_eq "then the worker removes the 15,000" 10 5000 brake "SELECT count(*) FROM sessions"
eventually_eq "and the brake holds again once the table is drained" 10 f brake \
  "SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass"
expect_eq "resume on an index that is not paused says so, and leaves its brake on" "f f" \
  "$(q brake -c "SET ROLE tenant" -c "SELECT ttl_index_resume('sessions')") $(q brake -c "SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass")"
expect_eq "a tenant naming a session pg_restore does not stop the worker" 0 \
  "$(PGAPPNAME=pg_restore "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U tenant -d brake -X -q -At \
       -c "INSERT INTO sessions SELECT 100000 + g, '{\"seen\": \"2019-01-01\"}' FROM generate_series(1, 10) g" \
       -c "SELECT pg_sleep(1.5)" -c "SELECT count(*) FROM sessions WHERE id > 100000" | tail -1)"
q brake -c "SELECT ttl_index_alter('steady', interval '1 day')" >/dev/null
# a clock jump, as far as the documents go: most of steady's dates move three days back
q brake -c "UPDATE steady SET doc = jsonb_build_object('seen', now() - interval '3 days') WHERE id <= 15000" -c "ANALYZE steady"
steady_paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'steady'::regclass")" = t ]; }
wait_for "the worker's brake catches a mass expiry no statement made" 10 steady_paused
expect_eq "with the rows still there" 19000 "$(q brake -c "SELECT count(*) FROM steady")"
expect_eq "ttl_stats says why, and how to go on" t \
  "$(q brake -c "SELECT skipped LIKE 'paused by the safety brake: more than % of about % rows of public.steady%ttl_index_resume(''public.steady'')' FROM ttl_stats WHERE table_name = 'steady'::regclass")"
expect_eq "the server log says so once" 1 "$(grep -c 'jsonb_ttl: paused by the safety brake' "$CLUSTER_DIR/server.log" || true)"

echo "== a backlog the brake let through is counted again once expire_after changes"
q postgres -c "ALTER SYSTEM SET jsonb_ttl.max_table_removes = 100" -c "SELECT pg_reload_conf()" >/dev/null
q brake <<'SQL'
CREATE TABLE slow (id int PRIMARY KEY, doc jsonb);
-- 5,000 of 20,000 expired under 1 day: let through, and not drained at 100 rows a pass
INSERT INTO slow SELECT g, jsonb_build_object('seen', now() - CASE WHEN g <= 5000 THEN interval '3 days' ELSE interval '1 hour' END)
FROM generate_series(1, 20000) g;
ANALYZE slow;
SELECT FROM ttl_index_create('slow', 'seen', interval '1 day');
SQL
going() { [ "$(q brake -c "SELECT count(*) < 20000 FROM slow")" = t ]; }
wait_for "the worker purges slow's backlog, 100 rows a pass" 10 going
q brake -c "SELECT FROM ttl_index_alter('slow', interval '1 minute')"
slow_paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'slow'::regclass")" = t ]; }
wait_for "a wrong expire_after on it (all rows expired) pauses it at once" 10 slow_paused
echo "== a table that only grows is measured at its size now, not at its last ANALYZE"
q postgres -c "ALTER SYSTEM RESET jsonb_ttl.max_table_removes" -c "SELECT pg_reload_conf()" >/dev/null
# Issue 25: a table fed for a while after its first (auto)ANALYZE holds far more rows than
# reltuples says; its steady quarter of expired rows must not look like a mass expiry.
q brake <<'SQL'
CREATE TABLE growing (id int PRIMARY KEY, doc jsonb) WITH (autovacuum_enabled = off);
INSERT INTO growing SELECT g, jsonb_build_object('seen', now()) FROM generate_series(1, 10000) g;
ANALYZE growing;
-- then 30,000 more, 12,000 of them already expired: 30 % of 40,000, but 120 % of reltuples
INSERT INTO growing SELECT g, jsonb_build_object('seen', now() - CASE WHEN g <= 22000 THEN interval '3 days' ELSE interval '0' END)
FROM generate_series(10001, 40000) g;
SQL
expect_eq "reltuples still says 10,000" 10000 "$(q brake -c "SELECT reltuples::int FROM pg_class WHERE oid = 'growing'::regclass")"
q brake -c "SELECT FROM ttl_index_create('growing', 'seen', interval '1 day')"
eventually_eq "its 12,000 expired rows are purged, not paused" 10 28000 brake "SELECT count(*) FROM growing"
expect_eq "not paused" f "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'growing'::regclass")"
# and a shortened expire_after on the grown table still pauses it (all 28,000 rows at once)
# (every row over a second old first, so that all of them expire at the instant of the change)
q brake -c "SELECT pg_sleep(1.1)" -c "SELECT FROM ttl_index_alter('growing', interval '1 second')" >/dev/null
growing_paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'growing'::regclass")" = t ]; }
wait_for "a wrong expire_after on the grown table still pauses it" 10 growing_paused
expect_eq "with its rows still there" 28000 "$(q brake -c "SELECT count(*) FROM growing")"
# a mass UPDATE doubles the pages without adding a row: measured by its live rows, it still pauses
q brake >/dev/null <<'SQL'
SELECT ttl_index_drop('growing');
VACUUM ANALYZE growing;
SELECT FROM ttl_index_create('growing', 'seen', interval '1 day');  -- nothing expired
SELECT ttl_index_pause('growing');  -- (while the UPDATE runs)
UPDATE growing SET doc = jsonb_build_object('seen', now() - interval '3 days') WHERE id <= 10000 OR id > 30000;  -- 20,000 of 28,000
SQL
sleep 1  # the UPDATE's statistics (its dead rows, the live ones unchanged) reach the counters
# (set the pause aside as the worker would find it after the UPDATE: running, brake armed)
q brake -c "UPDATE jsonb_ttl_internal.ttl_index SET paused_at = NULL, paused_by = NULL, paused_reason = NULL WHERE table_oid = 'growing'::regclass"
wait_for "a mass UPDATE without ANALYZE (pages doubled) still pauses it" 10 growing_paused
expect_eq "with its rows still there" 28000 "$(q brake -c "SELECT count(*) FROM growing")"
echo "== a table partitioned by time is measured whole: its oldest partition expires whole, normally"
# Issue 24 (bench/steady.sh): in the steady state of a table range-partitioned by its reference
# time, each partition in turn becomes wholly expired. Measured alone, each would pause the TTL
# index; measured against the whole table (all its partitions' expired rows counted), it is
# a steady third, and a wrong expire_after on all of them still pauses it.
q brake >/dev/null <<'SQL'
CREATE TABLE parted (id int, seen timestamptz NOT NULL, doc jsonb) PARTITION BY RANGE (seen);
DO $$ BEGIN
  EXECUTE format('CREATE TABLE parted_old PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (%L)', now() - interval '2 days');
  EXECUTE format('CREATE TABLE parted_new PARTITION OF parted FOR VALUES FROM (%L) TO (MAXVALUE)', now() - interval '2 days');
END $$;
-- 12,000 rows of 40,000 three days old (all of parted_old), the others an hour old
INSERT INTO parted SELECT g, now() - CASE WHEN g <= 12000 THEN interval '3 days' ELSE interval '1 hour' END FROM generate_series(1, 40000) g;
ALTER TABLE parted OWNER TO tenant;
ALTER TABLE parted_old OWNER TO tenant;
ALTER TABLE parted_new OWNER TO tenant;
-- the owner's code on the partitioned table: a forced policy that notes who evaluates it (the
-- brake counts the whole table through it, as its owner, never as the superuser)
ALTER TABLE parted ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY readers ON parted USING (public.note_reader());
TRUNCATE seen;
SELECT pg_sleep(1.1);
ANALYZE parted;
SELECT FROM ttl_index_create('parted', 'seen', interval '1 week');  -- nothing expired
SQL
sleep 1  # a pass finds nothing: the brake holds from then on
q brake -c "SELECT FROM ttl_index_alter('parted', interval '1 day')"
eventually_eq "its oldest partition (30 % of the table, all of itself) is purged, not paused" 10 "0 28000" brake \
  "SELECT (SELECT count(*) FROM parted_old) || ' ' || (SELECT count(*) FROM parted_new)"
expect_eq "not paused" f "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'parted'::regclass")"
q brake -c "SELECT FROM ttl_index_alter('parted', interval '1 minute')"
parted_paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'parted'::regclass")" = t ]; }
wait_for "a wrong expire_after on all its partitions holds it" 10 parted_paused
expect_eq "the partitioned table's policy ran while the alter counted it, as its owner only" tenant \
  "$(q brake -c "SELECT string_agg(DISTINCT who::text, ',') FROM seen")"
expect_eq "with its rows still there, and the whole table named" "28000 true" \
  "$(q brake -c "SELECT (SELECT count(*) FROM parted) || ' ' || (paused_reason LIKE 'held by the safety brake: 28000 of 28000 rows would expire at once%''public.parted''%') FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'parted'::regclass")"
echo "== index entries of deleted rows do not pause a table: past the btree's bound, the rows are counted"
# Issue 24: the brake first reads the TTL index's btree alone (entries before the cutoff, up to
# the limit, dead rows' included); only past that bound does it count the rows through the
# heap, as the owner. 12,000 deleted rows left their old entries (no VACUUM): the bound says
# more than the limit, the rows say 3,000 of 11,000.
q brake >/dev/null <<'SQL'
CREATE TABLE churn (id int, doc jsonb) WITH (autovacuum_enabled = off);
INSERT INTO churn SELECT g, jsonb_build_object('seen', now()) FROM generate_series(1, 20000) g;
SELECT pg_sleep(1.1);
ANALYZE churn;
SELECT FROM ttl_index_create('churn', 'seen', interval '1 day');  -- nothing expired
SQL
sleep 1  # a pass finds nothing: the brake holds from then on
q brake >/dev/null <<'SQL'
BEGIN;
UPDATE churn SET doc = jsonb_build_object('seen', now() - interval '3 days') WHERE id <= 12000;
DELETE FROM churn WHERE id <= 12000;
INSERT INTO churn SELECT g, jsonb_build_object('seen', now() - interval '3 days') FROM generate_series(20001, 23000) g;
COMMIT;
SQL
eventually_eq "its 3,000 expired rows are purged, not paused" 10 8000 brake "SELECT count(*) FROM churn"
expect_eq "not paused" f "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'churn'::regclass")"
echo "== the btree's count, read leaf page by leaf page, after a VACUUM removed leaves and with entries marked dead"
# docs/worker.md, PAGE COUNT: the first half of the index's leaves emptied and removed by a
# VACUUM (the descent goes through the downlinks it left), then 5,000 entries at the new head
# marked LP_DEAD by an index scan (their rows deleted, no VACUUM): a count that stopped at
# them would see nothing expired and let a mass expiry through.
q brake >/dev/null <<'SQL'
CREATE TABLE vacuumed (id int, seen timestamptz NOT NULL, doc jsonb) WITH (autovacuum_enabled = off);
INSERT INTO vacuumed SELECT g, now() - interval '2 hours' + g * interval '10 ms', '{}' FROM generate_series(1, 60000) g;
SELECT FROM ttl_index_create('vacuumed', 'seen', interval '1 day');  -- nothing expired
DELETE FROM vacuumed WHERE id <= 30000;
SQL
q brake -c "VACUUM vacuumed" -c "DELETE FROM vacuumed WHERE id <= 35000" >/dev/null
q brake >/dev/null <<'SQL'
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM vacuumed WHERE seen < now();  -- (through the TTL index: marks the 5,000 dead)
SELECT pg_sleep(1.1);
ANALYZE vacuumed;
SQL
expect_eq "the index holds 25,000 live rows" 25000 \
  "$(q brake -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*) FROM vacuumed WHERE seen < now()")"
sleep 1  # a pass finds nothing expired: the brake holds from then on
q brake -c "SELECT FROM ttl_index_alter('vacuumed', interval '1 minute')"
vacuumed_paused() { [ "$(q brake -c "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'vacuumed'::regclass")" = t ]; }
wait_for "all of its 25,000 rows expired at once pauses it" 10 vacuumed_paused
expect_eq "with its rows still there" 25000 "$(q brake -c "SELECT count(*) FROM vacuumed")"
finish
