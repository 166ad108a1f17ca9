#!/usr/bin/env bash
# The fourth correctness review (issue 46): each hole it reproduced on 0.4.0, here as it was
# reproduced, with the promise it broke.
#  1. one owner stalls no one: her REINDEX CONCURRENTLY, then an ALTER INDEX … RENAME in a
#     transaction she keeps open, must not hold the worker (another owner's rows still go);
#  2. no query queues behind the worker: drop_partitions => 'detach' of a partition whose
#     foreign key references a table one open writer holds must not take the parent's lock and
#     wait (SELECTs of the TTL table and INSERTs into the referenced table go on);
#  4. ttl_expire_now() runs the definition committed, not the one its REPEATABLE READ snapshot
#     saw: a committed archive_to or pause is never ignored (a serialization failure instead);
#  6. two concurrent ttl_index_alter(archive_to) cannot close an archive loop;
#  7. a TTL index is recognised by its shape: with build => false, an unrelated hash index under
#     its name does not make the table purgeable (no whole-table scans);
#  9. ttl_expire_now() purges a table with a deferred constraint trigger, as the worker does.
# (3, an archive guard reading jsonb_ttl.expiring, and the archive's key conflicts are in
# archive.sh; 5 and 8, the exporter's series, in prometheus.sh.)
source "$(dirname "$0")/lib.sh"
start_cluster e2e-review4 28893 "jsonb_ttl.frequency = 200" "jsonb_ttl.lock_timeout = 200ms" \
  "jsonb_ttl.max_workers = 8"
q postgres -c "CREATE ROLE alice LOGIN" -c "CREATE ROLE bob LOGIN"
q postgres -c "CREATE DATABASE r4"
q r4 <<'SQL'
CREATE EXTENSION jsonb_ttl;
GRANT CREATE ON SCHEMA public TO alice, bob;
SQL
# hold SECONDS ROLE SQL: runs SQL as ROLE in an open transaction kept SECONDS, in the background
hold() {
  local seconds=$1 role=$2 sql=$3
  as "$role" r4 -v ON_ERROR_STOP=1 -c "BEGIN" -c "$sql" -c "SELECT pg_sleep($seconds)" -c "COMMIT" >/dev/null 2>&1 &
  HELD=$!
}
# waits until a statement of the background session is waiting or sleeping
held_now() { [ "$(q r4 -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'")" -ge 1 ]; }

echo "== 1. a REINDEX CONCURRENTLY and an open ALTER INDEX … RENAME of one owner stall no one"
as alice r4 -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE hers (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('hers', 'at', interval '1 day');
SQL
as bob r4 -v ON_ERROR_STOP=1 -c "CREATE TABLE his (id int PRIMARY KEY, doc jsonb)" \
  -c "SELECT FROM ttl_index_create('his', 'at', 0)" >/dev/null
as alice r4 -v ON_ERROR_STOP=1 -c "REINDEX INDEX CONCURRENTLY hers_ttl_idx" >/dev/null
hold 8 alice "ALTER INDEX hers_ttl_idx RENAME TO hers_renamed"
wait_for "alice's rename is under way" 5 held_now
as bob r4 -c "INSERT INTO his SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 100) g" >/dev/null
eventually_eq "bob's 100 expired rows go while alice's transaction stays open" 5 0 r4 "SELECT count(*) FROM his"
wait "$HELD" || true

echo "== 2. drop_partitions => 'detach' never queues for a referenced table's lock"
q r4 <<'SQL'
CREATE TABLE accounts (id int PRIMARY KEY);
INSERT INTO accounts SELECT g FROM generate_series(1, 10) g;
CREATE TABLE audit (account int REFERENCES accounts, created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE audit_2019 PARTITION OF audit FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE audit_now PARTITION OF audit FOR VALUES FROM ('2020-01-01') TO ('3000-01-01');
INSERT INTO audit SELECT 1, '2019-06-01' FROM generate_series(1, 100);
INSERT INTO audit SELECT 1, now() FROM generate_series(1, 100);
SQL
# one open writer of accounts (ROW EXCLUSIVE: DETACH's SHARE ROW EXCLUSIVE waits for it)
hold 6 postgres "INSERT INTO accounts VALUES (1000)"
wait_for "a writer of accounts is open" 5 held_now
q r4 -c "SELECT FROM ttl_index_create('audit', 'created_at', interval '1 day', drop_partitions => 'detach')" >/dev/null
sleep 1.5  # several passes try the detach meanwhile
start=$(now_ms)
got=$(PGOPTIONS="-c statement_timeout=3s" q r4 -c "SELECT count(*) FROM audit" 2>&1 || true)
took=$(($(now_ms) - start))
expect_eq "a SELECT of the TTL table answers at once (${took} ms)" "200 fast" "$got $([ $took -lt 1000 ] && echo fast || echo slow)"
start=$(now_ms)
got=$(PGOPTIONS="-c statement_timeout=3s" q r4 -c "INSERT INTO accounts VALUES (2000)" 2>&1 && echo inserted || true)
took=$(($(now_ms) - start))
expect_eq "an INSERT into the referenced table answers at once (${took} ms)" "inserted fast" "$got $([ $took -lt 1000 ] && echo fast || echo slow)"
wait "$HELD" || true
eventually_eq "once the writer is gone, the partition is detached" 10 f r4 \
  "SELECT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = 'audit_2019'::regclass)"

echo "== 4. ttl_expire_now() under REPEATABLE READ: a committed archive_to or pause is never ignored"
# (the worker off meanwhile: only ttl_expire_now deletes here)
q postgres -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "the worker's passes stop" 10 passes_stopped r4
q r4 <<'SQL'
CREATE TABLE notes (id int PRIMARY KEY, doc jsonb);
CREATE TABLE notes_archive (id int, doc jsonb);
INSERT INTO notes SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 100) g;
SELECT FROM ttl_index_create('notes', 'at', 0, paused => true);
SQL
rr() {  # rr SQL-BETWEEN: a REPEATABLE READ transaction that reads, lets SQL-BETWEEN commit, then purges
  "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d r4 -X -q -At <<SQL 2>&1
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM notes;
\! PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d r4 -X -q -c "$1" >/dev/null
SELECT ttl_expire_now('notes');
COMMIT;
SQL
}
q r4 -c "SELECT ttl_index_resume('notes')" >/dev/null
out=$(rr "SELECT FROM ttl_index_alter('notes', archive_to => 'notes_archive')")
expect_eq "archive_to committed after the snapshot: refused, not deleted without archiving" \
  "100|0|serialization" \
  "$(q r4 -c "SELECT (SELECT count(*) FROM notes) || '|' || (SELECT count(*) FROM notes_archive)")|$(echo "$out" | grep -q 'could not serialize\|changed while ttl_expire_now' && echo serialization || echo "$out")"
out=$(rr "SELECT ttl_index_pause('notes')")
expect_eq "a pause committed after the snapshot: refused, nothing deleted" "100|serialization" \
  "$(q r4 -c "SELECT count(*) FROM notes")|$(echo "$out" | grep -q 'could not serialize\|changed while ttl_expire_now\|is paused' && echo serialization || echo "$out")"
q r4 -c "SELECT ttl_index_resume('notes')" >/dev/null
expect_eq "called again, it archives the 100 rows" "100|0|100" \
  "$(q r4 -c "SELECT ttl_expire_now('notes')")|$(q r4 -c "SELECT count(*) FROM notes")|$(q r4 -c "SELECT count(*) FROM notes_archive")"

echo "== 9. ttl_expire_now() on a table with a deferred constraint trigger"
q r4 <<'SQL'
CREATE TABLE orders (id int PRIMARY KEY, doc jsonb);
CREATE TABLE deleted_orders (id int);
CREATE FUNCTION note_delete() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO public.deleted_orders VALUES (OLD.id); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER note_delete AFTER DELETE ON orders DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION note_delete();
INSERT INTO orders SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g;
SELECT FROM ttl_index_create('orders', 'at', 0);
SQL
expect_eq "it purges, and the deferred trigger fires" "10|0|10" \
  "$(q r4 -c "SELECT ttl_expire_now('orders')" 2>&1)|$(q r4 -c "SELECT count(*) FROM orders")|$(q r4 -c "SELECT count(*) FROM deleted_orders")"

q postgres -c "ALTER SYSTEM RESET jsonb_ttl.enabled" -c "SELECT pg_reload_conf()" >/dev/null

echo "== 6. two concurrent ttl_index_alter(archive_to) cannot close a loop"
q r4 <<'SQL'
CREATE TABLE ping (id int PRIMARY KEY, doc jsonb);
CREATE TABLE pong (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('ping', 'at', 0, paused => true);
SELECT FROM ttl_index_create('pong', 'at', 0, paused => true);
SQL
hold 2 postgres "SELECT FROM ttl_index_alter('ping', archive_to => 'pong')"
wait_for "the first alter is under way" 5 held_now
second=$(q r4 -c "SELECT FROM ttl_index_alter('pong', archive_to => 'ping')" 2>&1 || true)
wait "$HELD" || true
expect_eq "the second waits for the first, then sees the loop" "ping → pong only" \
  "$(echo "$second" | grep -q 'leads back' && echo "$(q r4 -c "SELECT string_agg(table_name || ' → ' || archive_to::text, ', ' ORDER BY table_name::text) FROM ttl_indexes WHERE archive_to IS NOT NULL AND table_name::text IN ('ping', 'pong')") only" || echo "second: $second")"

echo "== 7. a TTL index not built yet is not stood in for by an index of its name"
q r4 <<'SQL'
CREATE TABLE lazy (id int PRIMARY KEY, doc jsonb);
INSERT INTO lazy SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 2000) g;
SELECT FROM ttl_index_create('lazy', 'at', 0, build => false);
CREATE INDEX lazy_ttl_idx ON lazy USING hash (id);
SQL
sleep 1.5
expect_eq "nothing purged (no pass scans the whole table for it)" 2000 "$(q r4 -c "SELECT count(*) FROM lazy")"
q r4 -c "DROP INDEX lazy_ttl_idx"
q r4 -c "SELECT unnest(build_sql) FROM ttl_index_create('lazy', 'at', 0, build => false)" | while read -r sql; do q r4 -c "$sql"; done
eventually_eq "built for real, its rows go" 10 0 r4 "SELECT count(*) FROM lazy"

echo "== suspected: a field TTL whose column is dropped does not pass to a column renamed later"
q r4 <<'SQL'
CREATE TABLE profiles (id int PRIMARY KEY, doc jsonb, extra jsonb);
INSERT INTO profiles SELECT g, '{}', jsonb_build_object('otp', jsonb_build_object('at', '2019-01-01', 'code', 'x')) FROM generate_series(1, 10) g;
SELECT ttl_field_create('profiles', 'doc.otp.at', interval '5 minutes');
SQL
dropped=$(q r4 -c "ALTER TABLE profiles DROP COLUMN doc" 2>&1)
expect_eq "the DROP COLUMN says the field TTL went with it" \
  "WARNING:  jsonb_ttl: the field TTL on doc.otp.at of public.profiles went with its column" "$(echo "$dropped" | grep '^WARNING')"
q r4 -c "ALTER TABLE profiles RENAME COLUMN extra TO doc"
sleep 1
expect_eq "renaming another column to its name brings nothing back: 10 codes kept" "0|10" \
  "$(q r4 -c "SELECT count(*) FROM ttl_indexes WHERE table_name = 'profiles'::regclass")|$(q r4 -c "SELECT count(*) FROM profiles WHERE doc ? 'otp'")"

finish
