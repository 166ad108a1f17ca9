#!/usr/bin/env bash
# pg_dump of a database with TTL indexes, restored into a fresh database while the worker runs
# (every 100 ms): the same ttl_indexes come back, and the worker does nothing while the restore
# is half done. pg_restore brings the TTL catalog rows (data) before their indexes (post-data),
# and expired rows before the foreign keys that reference them (post-data, after every index);
# a worker that purged in between would scan whole tables and delete rows those keys need, and
# ADD FOREIGN KEY would fail. It waits while pg_restore is connected to the database (and, for
# --single-transaction, until the transaction of its CREATE EXTENSION ends), and never purges
# a table whose TTL index is missing or not valid.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-dump 28830 "jsonb_ttl.enabled = off" "jsonb_ttl.frequency = 100"

q postgres -c "CREATE DATABASE src"
q src <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigint PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('events', 'creationDate', interval '10 minutes');
CREATE SCHEMA "odd schema";
CREATE TABLE "odd schema"."Sessions" (id text PRIMARY KEY, data jsonb, meta jsonb);
SELECT FROM ttl_index_create('"odd schema"."Sessions"', 'meta."last.seen"', 1800, 'ms');
CREATE TABLE plain (id int, at timestamptz);
SELECT FROM ttl_index_create('plain', 'at', interval '1 day');
ALTER TABLE plain RENAME TO plain_renamed;
-- an archive in another schema, named as only quotes allow: restored by name (regclass)
CREATE SCHEMA cold;
CREATE TABLE cold."Plain Archive" (id int, at timestamptz, archived_at timestamptz DEFAULT now());
SELECT FROM ttl_index_alter('plain_renamed', archive_to => 'cold."Plain Archive"');
-- a field TTL: restored with its catalog row and its index, found by what it is
CREATE TABLE codes (id int PRIMARY KEY, doc jsonb);
SELECT ttl_field_create('codes', 'otp.at', interval '1 minute');
INSERT INTO codes SELECT g, jsonb_build_object('otp', jsonb_build_object('at', '2019-01-01'), 'n', g) FROM generate_series(1, 100) g;
-- 1 live event, 2000 expired ones, and 50 expired ones that orders still reference (their key
-- restricts their deletion)
INSERT INTO events SELECT 0, '{"creationDate": "2999-01-01"}';
INSERT INTO events SELECT g, jsonb_build_object('creationDate', '2019-01-01') FROM generate_series(1, 2050) g;
CREATE TABLE orders (id int PRIMARY KEY, event_id bigint REFERENCES events);
INSERT INTO orders SELECT g, 2000 + g FROM generate_series(1, 50) g;
-- restored after the TTL index and before the foreign key: its indexes take a while to build,
-- which leaves a worker that would not wait plenty of passes in between
CREATE TABLE zz_filler (id int, a text, b text);
INSERT INTO zz_filler SELECT g, md5(g::text), md5((g * 7)::text) FROM generate_series(1, 300000) g;
CREATE INDEX zz_filler_a ON zz_filler (a);
CREATE INDEX zz_filler_b ON zz_filler (b);
SQL
listing="SELECT table_name::text, column_name, path, json_path, expire_after, numeric_unit, index_name,
                archive_to, removes
         FROM ttl_indexes ORDER BY 1, 3"
before=$(q src -c "$listing")
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$CLUSTER_DIR/src.dump" src
q src -c "ALTER SYSTEM SET jsonb_ttl.enabled = on" -c "SELECT pg_reload_conf()" >/dev/null

restore() {  # restore DB [pg_restore options…]: into a new database, with the worker on
  local db=$1
  shift
  q postgres -c "CREATE DATABASE $db"
  if "$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d "$db" --exit-on-error "$@" \
       "$CLUSTER_DIR/src.dump" 2>"$CLUSTER_DIR/restore-$db.err"; then
    pass "pg_restore $* into $db succeeds while the worker runs (ADD FOREIGN KEY included)"
  else
    fail "pg_restore $* into $db: $(head -3 "$CLUSTER_DIR/restore-$db.err")"
  fi
}
restored() {  # restored DB: what the restore must have given, and what the worker does next
  local db=$1
  expect_eq "$db: ttl_indexes identical to the source's" "$before" "$(q "$db" -c "$listing")"
  expect_eq "$db: every restored TTL index has its index" 0 \
    "$(q "$db" -c 'SELECT count(*) FROM ttl_indexes WHERE index_size IS NULL')"
  expect_eq "$db: the orders and their key are all there" "50 1" \
    "$(q "$db" -c "SELECT (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM pg_constraint WHERE conrelid = 'orders'::regclass AND contype = 'f')")"
  eventually_eq "$db: once restored, the worker removes the 2000 unreferenced expired events" 10 \
    "0 51" "$db" "SELECT count(*) FILTER (WHERE id BETWEEN 1 AND 2000) || ' ' || count(*) FROM events"
  expect_eq "$db: and keeps the live one and the 50 the orders reference" \
    "1 50" "$(q "$db" -c "SELECT count(*) FILTER (WHERE id = 0) || ' ' || count(*) FILTER (WHERE id > 2000) FROM events")"
  eventually_eq "$db: the restored field TTL's expired codes go, the 100 documents stay" 10 \
    "100 0" "$db" "SELECT count(*) || ' ' || count(*) FILTER (WHERE doc ? 'otp') FROM codes"
}

restore dst
serving() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = '$1'")" = 1 ]; }
wait_for "pg_restore's CREATE EXTENSION started a worker for the restored database" 5 serving dst
expect_eq "the worker said why it waited" 1 \
  "$(grep -c 'pg_restore is connected to this database; no pass until it is done' "$CLUSTER_DIR/server.log" || true)"
restored dst

# One transaction, under another application_name: the worker waits for the transaction of the
# CREATE EXTENSION it was started for, which is the whole restore.
PGAPPNAME=restore-tool restore dst1 --single-transaction
restored dst1

echo "== a TTL index that is not valid (a failed CREATE INDEX CONCURRENTLY): its table is left alone"
q dst -c "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'events_ttl_idx'::regclass"
eventually_eq "ttl_stats says why" 10 t dst \
  "SELECT last_error LIKE 'the TTL index events_ttl_idx is missing or not valid%' FROM ttl_stats WHERE table_name = 'events'::regclass"
q dst -c "INSERT INTO events SELECT g, jsonb_build_object('creationDate', '2019-01-01') FROM generate_series(10001, 10100) g"
visits() { q dst -c "SELECT runs FROM ttl_stats WHERE table_name = 'events'::regclass"; }
from=$(visits)
three_more() { [ "$(visits)" -ge $((from + 3)) ]; }
wait_for "three more visits of the table" 10 three_more
expect_eq "and nothing is deleted from it" 100 "$(q dst -c "SELECT count(*) FROM events WHERE id > 10000")"
q dst -c "REINDEX INDEX events_ttl_idx"
eventually_eq "REINDEX makes it valid, and the worker purges again" 10 0 dst \
  "SELECT count(*) FROM events WHERE id > 10000"
finish
