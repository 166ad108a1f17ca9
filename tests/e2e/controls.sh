#!/usr/bin/env bash
# The operator's controls and health at a glance, with the worker: the first backlog, held at
# creation when it is most of the table (released by ttl_index_resume, the review), while a
# shortened expire_after later still trips the safety brake; a pause is no error; created paused, nothing goes before ttl_index_resume();
# pause by hand; a daily delete window in the index's time zone; an index's own rate and batch
# limits; and ttl_stats' last_success_at, last_run_ms, backlog and rows_never_expire.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-controls 28852 "jsonb_ttl.frequency = 200" "jsonb_ttl.max_table_fraction = 0.5" \
  "jsonb_ttl.brake_min_rows = 1000"

q postgres -c "CREATE DATABASE controls"
q controls <<'SQL'
CREATE EXTENSION jsonb_ttl;
-- a new user's logs: 50,000 documents spanning 35 days, one in 35 written an hour ago
CREATE TABLE logs (id int PRIMARY KEY, doc jsonb);
INSERT INTO logs SELECT g, jsonb_build_object('ts', now() - (g % 35) * interval '1 day' - interval '1 hour')
FROM generate_series(1, 50000) g;
SELECT pg_sleep(1.1);
ANALYZE logs;
SQL

echo "the first backlog: 97 % of logs expired at creation, held until the owner says so"
created=$(q controls -c "SET client_min_messages = notice" -c "SELECT rows_expired FROM ttl_index_create('logs', 'ts', '1 day')" 2>&1)
expect_eq "ttl_index_create says how many are expired, and that the index is held" \
  "NOTICE:  jsonb_ttl: 48572 of 50000 row(s) of public.logs would expire at once: the TTL index is held, nothing goes until it is resumed|48572" \
  "$(echo "$created" | grep -E '^(NOTICE|[0-9])' | paste -sd '|')"
sleep 1
expect_eq "held: nothing goes" "50000|brake" \
  "$(q controls -c "SELECT (SELECT count(*) FROM logs) || '|' || paused_by FROM ttl_stats WHERE table_name = 'logs'::regclass")"
q controls -c "SELECT ttl_index_resume('logs')" >/dev/null
eventually_eq "resumed, the worker deletes them: the brake lets the reviewed backlog go" 20 1428 controls "SELECT count(*) FROM logs"
eventually_eq "ttl_stats: not paused, no error, backlog 0, a last success, a last run's duration" 5 "false|0|0|true|true" controls \
  "SELECT paused::text || '|' || errors || '|' || backlog || '|' || (last_success_at > now() - interval '1 minute')::text || '|' || (last_run_ms > 0)::text
   FROM ttl_stats WHERE table_name = 'logs'::regclass"
eventually_eq "the brake holds again once the backlog is gone" 5 f controls \
  "SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'logs'::regclass"
q controls -c "SELECT FROM ttl_index_alter('logs', '1 minute')"
eventually_eq "a shortened expire_after later is held at the alter (100 % of 1,428 rows)" 5 "true|brake" controls \
  "SELECT paused::text || '|' || coalesce(paused_by, '') FROM ttl_stats WHERE table_name = 'logs'::regclass"
expect_eq "the pause is not an error; skipped says why; nothing was deleted" "0|true|1428" \
  "$(q controls -c "SELECT errors || '|' || (skipped LIKE 'held by the safety brake: 1428 of 1428 rows would expire at once%')::text || '|' || (SELECT count(*) FROM logs) FROM ttl_stats WHERE table_name = 'logs'::regclass")"
q controls -c "SELECT ttl_index_resume('logs')" >/dev/null
eventually_eq "resumed, it drains" 10 0 controls "SELECT count(*) FROM logs"

echo "created paused"
q controls <<'SQL'
CREATE TABLE events (id int PRIMARY KEY, doc jsonb);
INSERT INTO events SELECT g, jsonb_build_object('at', now() - interval '2 days') FROM generate_series(1, 3000) g;
INSERT INTO events SELECT g, jsonb_build_object('at', now()) FROM generate_series(3001, 4000) g;
SELECT FROM ttl_index_create('events', 'at', '1 day', paused => true);
SQL
sleep 1.2  # six passes
expect_eq "nothing goes before someone looks: 4,000 rows, paused by the operator, no error" "4000|true|operator|0" \
  "$(q controls -c "SELECT (SELECT count(*) FROM events) || '|' || paused::text || '|' || paused_by || '|' || errors FROM ttl_stats WHERE table_name = 'events'::regclass")"
expect_eq "ttl_index_resume: it was paused" t "$(q controls -c "SELECT ttl_index_resume('events')")"
eventually_eq "then the 3,000 expired go (75 %, without the brake: that was the review)" 10 1000 controls "SELECT count(*) FROM events"

echo "pause by hand"
expect_eq "ttl_index_pause: it was running" t "$(q controls -c "SELECT ttl_index_pause('events', 'archiving first')")"
q controls -c "INSERT INTO events SELECT g, jsonb_build_object('at', now() - interval '2 days') FROM generate_series(5001, 5100) g"
sleep 1.2
expect_eq "paused, the new expired rows stay; skipped gives the reason" "1100|true" \
  "$(q controls -c "SELECT (SELECT count(*) FROM events) || '|' || (skipped LIKE 'paused by postgres: archiving first')::text FROM ttl_stats WHERE table_name = 'events'::regclass")"
q controls -c "SELECT ttl_index_resume('events')" >/dev/null
eventually_eq "resumed, they go" 10 1000 controls "SELECT count(*) FROM events"

echo "a delete window, in the index's time zone"
q controls <<'SQL'
CREATE TABLE visits (id int PRIMARY KEY, at timestamp NOT NULL);
INSERT INTO visits SELECT g, localtimestamp - interval '2 days' FROM generate_series(1, 500) g;
-- a window of ten minutes around the time of day now in UTC + 12 (Fiji, no summer time): not now in UTC
SELECT FROM ttl_index_create('visits', 'at', '1 day', time_zone => 'Pacific/Fiji', paused => true);
SQL
fiji_window="$(q controls -c "SELECT to_char(timezone('Pacific/Fiji', now()) - interval '5 minutes', 'HH24:MI') || '-' || to_char(timezone('Pacific/Fiji', now()) + interval '5 minutes', 'HH24:MI')")"
utc_window="$(q controls -c "SELECT to_char(timezone('UTC', now()) + interval '3 hours', 'HH24:MI') || '-' || to_char(timezone('UTC', now()) + interval '3 hours 10 minutes', 'HH24:MI')")"
q controls -c "SELECT FROM ttl_index_alter('visits', delete_window => '$utc_window')" -c "SELECT ttl_index_resume('visits')" >/dev/null
sleep 1.2
expect_eq "outside its window ($utc_window, Pacific/Fiji) nothing goes, and skipped says so" \
  "500|outside its delete_window $utc_window (Pacific/Fiji)" \
  "$(q controls -c "SELECT (SELECT count(*) FROM visits) || '|' || skipped FROM ttl_stats WHERE table_name = 'visits'::regclass")"
q controls -c "SELECT FROM ttl_index_alter('visits', delete_window => '$fiji_window')" >/dev/null
eventually_eq "inside it ($fiji_window in Fiji, not in UTC) they go" 10 0 controls "SELECT count(*) FROM visits"
expect_eq "ttl_indexes shows the window" "$fiji_window" \
  "$(q controls -c "SELECT delete_window FROM ttl_indexes WHERE table_name = 'visits'::regclass")"

echo "its own rate and batch limits"
q controls <<'SQL'
CREATE TABLE cache (id int PRIMARY KEY, doc jsonb);
INSERT INTO cache SELECT g, jsonb_build_object('at', now() - interval '2 days') FROM generate_series(1, 6000) g;
SELECT FROM ttl_index_create('cache', 'at', '1 day', paused => true, batch_size => 400,
                             max_removes_per_second => 2000);
SQL
start=$(now_ms)
q controls -c "SELECT ttl_index_resume('cache')" >/dev/null
batches=""
while [ "$(q controls -c "SELECT count(*) FROM cache")" != 0 ] && [ $(($(now_ms) - start)) -lt 20000 ]; do
  batches+=" $(q controls -c "SELECT substring(query FROM 'cache \(batch of ([0-9]+)\)') FROM pg_stat_activity WHERE backend_type LIKE 'jsonb_ttl%' AND query LIKE '%cache (batch of%'")"
  sleep 0.1
done
took=$(($(now_ms) - start))
expect_eq "6,000 rows at 2,000 a second take 2 s or more (took $took ms)" t "$([ "$took" -ge 2000 ] && echo t || echo f)"
largest=$(echo $batches | tr ' ' '\n' | grep -E '^[0-9]+$' | sort -n | tail -1)
expect_eq "no batch over its own batch_size of 400 (largest seen: ${largest:-none})" t \
  "$([ -n "$largest" ] && [ "$largest" -le 400 ] && echo t || echo f)"

echo "rows that never expire, and the backlog a limit leaves"
q controls <<'SQL'
CREATE TABLE mixed (id int PRIMARY KEY, doc jsonb);
INSERT INTO mixed SELECT g, jsonb_build_object('at', now()) FROM generate_series(1, 1000) g;
INSERT INTO mixed SELECT g, '{"at": "next tuesday"}' FROM generate_series(1001, 1030) g;
INSERT INTO mixed SELECT g, '{"other": 1}' FROM generate_series(1031, 1050) g;
SELECT FROM ttl_index_create('mixed', 'at', '1 day');
ANALYZE mixed;
SQL
expect_eq "rows_never_expire: the 50 rows whose value is missing or unreadable" 50 \
  "$(q controls -c "SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'mixed'::regclass")"
# (the brake off: this is about the backlog a limit leaves)
q controls -c "ALTER SYSTEM SET jsonb_ttl.max_table_removes = 1000" -c "ALTER SYSTEM SET jsonb_ttl.max_table_fraction = 1" \
  -c "SELECT pg_reload_conf()" >/dev/null
q controls -c "INSERT INTO mixed SELECT g, jsonb_build_object('at', now() - interval '2 days') FROM generate_series(2001, 5000) g"
eventually_eq "a visit cut short by max_table_removes leaves a backlog, counted" 10 t controls \
  "SELECT backlog BETWEEN 1 AND 2000 AND limit_reached > 0 FROM ttl_stats WHERE table_name = 'mixed'::regclass"
eventually_eq "and once drained, backlog 0" 15 0 controls \
  "SELECT backlog FROM ttl_stats WHERE table_name = 'mixed'::regclass AND (SELECT count(*) FROM mixed) = 1050"
q controls -c "ALTER SYSTEM RESET jsonb_ttl.max_table_removes" -c "ALTER SYSTEM RESET jsonb_ttl.max_table_fraction" \
  -c "SELECT pg_reload_conf()" >/dev/null

echo "idle passes write nothing"
# (a paused table, one outside its window, drained ones: five passes a second, no WAL at all —
# a read that assigned a transaction ID would write a commit record each pass)
q controls -c "SELECT ttl_index_pause('events')" -c "SELECT FROM ttl_index_alter('visits', delete_window => '$utc_window')" >/dev/null
sleep 0.5
# (WAL is no measure: the bgwriter logs a standby snapshot, RUNNING_XACTS, every 15 s after any
# write; a pass that wrote would have assigned a transaction ID first)
xid() { q controls -c "SELECT pg_snapshot_xmax(pg_current_snapshot())"; }
before=$(xid)
sleep 1.5
expect_eq "1.5 s of passes over paused, windowed and drained tables: no transaction ID assigned, nothing written" \
  "$before" "$(xid)"
finish
