#!/usr/bin/env bash
# archive_to end to end: the worker moves expired rows into an archive table in the same
# transaction as their delete. A plain archive and a postgres_fdw table on a second cluster,
# each with the server killed (SIGKILL) while batches archive: afterwards every row is in
# exactly one place (local archive) or archived once (foreign one, its key keeping a second copy
# out), by count and by checksum. A partitioned archive routes the rows. An owner without INSERT
# on the archive: nothing deleted, the reason in ttl_stats; granted again, the rows move.
source "$(dirname "$0")/lib.sh"
ROWS=30000
start_cluster e2e-archive 28874 "jsonb_ttl.frequency = 200" "jsonb_ttl.batch_size = 500" \
  "jsonb_ttl.max_removes_per_second = 10000" "restart_after_crash = on"
MAIN=$CLUSTER MAIN_DIR=$CLUSTER_DIR MAIN_SOCK=$SOCK MAIN_PORT=$PORT

# the second cluster: cold storage behind postgres_fdw, stopped with the first
COLD=e2e-archive-cold
COLD_PORT=$((28875 + ${E2E_PORT_OFFSET:-0}))
cleanup() {
  local status=$?
  "$ROOT/scripts/cluster.sh" destroy "$COLD"
  [ "${E2E_KEEP:-0}" = 1 ] && { echo "clusters kept: $MAIN_DIR"; exit $status; }
  "$ROOT/scripts/cluster.sh" destroy "$MAIN"
  exit $status
}
trap cleanup EXIT
"$ROOT/scripts/cluster.sh" destroy "$COLD"
"$ROOT/scripts/cluster.sh" start "$COLD" "$COLD_PORT" "jsonb_ttl.enabled = off"
COLD_SOCK=$("$ROOT/scripts/cluster.sh" dir "$COLD")/sock
cold() {
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$COLD_SOCK" -p "$COLD_PORT" \
    -U postgres -d cold -X -q -At -v ON_ERROR_STOP=1 "$@"
}
"$PGBIN/psql" -h "$COLD_SOCK" -p "$COLD_PORT" -U postgres -d postgres -X -q -c "CREATE DATABASE cold"
cold -c "CREATE TABLE archive (id bigint PRIMARY KEY, doc jsonb NOT NULL,
                               archived_at timestamptz NOT NULL DEFAULT now())"

q postgres -c "CREATE DATABASE arch"
q arch <<SQL
CREATE EXTENSION jsonb_ttl;
CREATE EXTENSION postgres_fdw;
CREATE SERVER cold FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$COLD_SOCK', port '$COLD_PORT', dbname 'cold', batch_size '500');
CREATE USER MAPPING FOR postgres SERVER cold OPTIONS (user 'postgres');
CREATE FOREIGN TABLE remote_archive (id bigint, doc jsonb) SERVER cold OPTIONS (table_name 'archive');

-- the rows, and what they add up to, kept aside to check against
CREATE TABLE events (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE events_archive (id bigint, doc jsonb, archived_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE sessions (id bigint PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO events SELECT g, jsonb_build_object('at', now() - interval '1 hour', 'n', g, 'pad', repeat('x', 100))
FROM generate_series(1, $ROWS) g;
INSERT INTO events SELECT g, jsonb_build_object('at', now() + interval '1 day', 'n', g)
FROM generate_series($ROWS + 1, $ROWS + 100) g;
INSERT INTO sessions SELECT id, doc FROM events;
CREATE TABLE expected AS
SELECT 'events' AS t, count(*) AS n, sum(hashtext(id || doc::text)) AS checksum FROM events
UNION ALL SELECT 'sessions', count(*), sum(hashtext(id || doc::text)) FROM sessions;
SQL

# place TABLE ARCHIVE: count and checksum of the rows in the table and the archive together,
# and whether each row is in exactly one of them
placed() {
  q arch -c "WITH everywhere AS (SELECT id, doc FROM $1 UNION ALL SELECT id, doc FROM $2)
             SELECT count(*) = (SELECT n FROM expected WHERE t = '$1')
                    AND sum(hashtext(id || doc::text)) = (SELECT checksum FROM expected WHERE t = '$1')
                    AND count(DISTINCT id) = count(*)
             FROM everywhere"
}
archived_any() { [ "$(q arch -c "SELECT count(*) > 0 FROM $1")" = t ] 2>/dev/null; }
up() { q postgres -c "SELECT 1" >/dev/null 2>&1; }
# kills the postmaster (SIGKILL) and starts the server again, with crash recovery
crash_and_restart() {
  local postmaster children
  postmaster=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
  children=$(pgrep -P "$postmaster" | tr '\n' ' ')
  kill -9 "$postmaster"
  pass "killed the postmaster $postmaster with SIGKILL while batches archive ($1)"
  gone() { for c in $children; do kill -0 "$c" 2>/dev/null && return 1; done; return 0; }
  wait_for "its children exit" 30 gone
  env -u RUST_BACKTRACE runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" \
    -l "$CLUSTER_DIR/server.log" -w -t 60 start >/dev/null
  wait_for "the server is back with crash recovery" 30 up
}
drained() { [ "$(q arch -c "SELECT count(*) FROM $1")" = "$2" ]; }

echo "-- 1. a plain archive, the server killed mid-archiving"
q arch -c "SELECT FROM ttl_index_create('events', 'at', 0, archive_to => 'events_archive')"
wait_for "the worker archives" 20 archived_any events_archive
crash_and_restart "local archive"
expect_eq "after the crash, every row of events in exactly one place (count, checksum)" t \
  "$(placed events events_archive)"
wait_for "all $ROWS expired rows archived in the end" 60 drained events 100
expect_eq "every row in exactly one place (count, checksum)" t "$(placed events events_archive)"
expect_eq "the archive holds exactly the expired rows" "$ROWS|$ROWS|0" \
  "$(q arch -c "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE archived_at IS NULL) FROM events_archive")"

echo "-- 2. a postgres_fdw archive on a second cluster, the server killed mid-archiving"
# the copy a crash between the remote commit and the local one leaves, made by hand for row 1:
# archived again, it is skipped (its key, ON CONFLICT DO NOTHING), not an error
cold -c "INSERT INTO archive (id, doc) VALUES (1, '$(q arch -c "SELECT doc FROM sessions WHERE id = 1")')"
q arch -c "SELECT FROM ttl_index_create('sessions', 'at', 0, archive_to => 'remote_archive')"
remote_any() { [ "$(cold -c "SELECT count(*) > 0 FROM archive")" = t ]; }
wait_for "the worker archives into the other cluster" 30 remote_any
crash_and_restart "foreign archive"
remote_drained() { [ "$(q arch -c "SELECT count(*) FROM sessions")" = 100 ]; }
wait_for "all $ROWS expired rows archived remotely in the end" 90 remote_drained
expect_eq "each row archived once (its key keeps a second copy out), none lost (count, checksum)" t \
  "$(placed sessions remote_archive)"
expect_eq "the remote archive: the expired rows, each once, stamped by its own default" "$ROWS|$ROWS|$ROWS" \
  "$(cold -c "SELECT count(*), count(DISTINCT id), count(archived_at) FROM archive")"
expect_eq "no row set aside (the copy already there was skipped)" 0 \
  "$(q arch -c "SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'sessions'::regclass")"

echo "-- 2b. the foreign server down: nothing deleted, nothing set aside, the reason in ttl_stats"
"$ROOT/scripts/cluster.sh" stop "$COLD"
q arch -c "INSERT INTO sessions SELECT g, jsonb_build_object('at', now() - interval '1 hour')
           FROM generate_series(100001, 100300) g"
eventually_eq "ttl_stats says the archive refuses the rows" 10 t arch \
  "SELECT last_error LIKE '%the archive public.remote_archive refuses the rows of public.sessions%nothing is deleted%'
   FROM ttl_stats WHERE table_name = 'sessions'::regclass"
sleep 1  # a few more passes
expect_eq "the 300 rows stay, none set aside" "400|0" \
  "$(q arch -c "SELECT (SELECT count(*) FROM sessions), (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'sessions'::regclass)")"
"$ROOT/scripts/cluster.sh" start "$COLD" "$COLD_PORT"
wait_for "the server back, they move" 20 remote_drained
expect_eq "into the remote archive, each once" "$((ROWS + 300))|$((ROWS + 300))" \
  "$(cold -c "SELECT count(*), count(DISTINCT id) FROM archive")"

echo "-- 3. a partitioned archive: rows routed to their partition"
q arch <<'SQL'
CREATE TABLE logs (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE logs_archive (id bigint, doc jsonb, archived_at timestamptz NOT NULL DEFAULT now())
    PARTITION BY RANGE (archived_at);
CREATE TABLE logs_archive_old PARTITION OF logs_archive FOR VALUES FROM (MINVALUE) TO ('2026-01-01');
CREATE TABLE logs_archive_now PARTITION OF logs_archive DEFAULT;
INSERT INTO logs SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 3000) g;
SELECT FROM ttl_index_create('logs', 'at', 0, archive_to => 'logs_archive');
SQL
wait_for "the worker archives logs" 20 drained logs 0
expect_eq "all 3,000 in the partition of now" "logs_archive_now|3000" \
  "$(q arch -c "SELECT tableoid::regclass, count(*) FROM logs_archive GROUP BY 1")"

echo "-- 4. an owner without INSERT on the archive: nothing deleted, the reason in ttl_stats"
q arch <<'SQL'
CREATE ROLE tenant LOGIN;
CREATE TABLE tokens (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE tokens_archive (id bigint, doc jsonb);
ALTER TABLE tokens OWNER TO tenant;
GRANT INSERT ON tokens_archive TO tenant;
SELECT FROM ttl_index_create('tokens', 'at', 0, archive_to => 'tokens_archive');
REVOKE INSERT ON tokens_archive FROM tenant;
INSERT INTO tokens SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 500) g;
SQL
eventually_eq "ttl_stats says why: the owner may not insert into the archive" 10 t arch \
  "SELECT last_error LIKE '%the owner of public.tokens, tenant, may not insert into the archive public.tokens_archive%nothing is deleted%'
   FROM ttl_stats WHERE table_name = 'tokens'::regclass"
sleep 1  # a few more passes
expect_eq "nothing deleted, nothing archived, no row set aside" "500|0|0" \
  "$(q arch -c "SELECT (SELECT count(*) FROM tokens), (SELECT count(*) FROM tokens_archive),
                       (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'tokens'::regclass)")"
q arch -c "GRANT INSERT ON tokens_archive TO tenant"
wait_for "granted again, the rows move" 10 drained tokens_archive 500
expect_eq "and leave the table" 0 "$(q arch -c "SELECT count(*) FROM tokens")"

echo "-- 5. the archive dropped: archive_to is '-', nothing deleted until it names another or none"
dropped=$(q arch -c "DROP TABLE tokens_archive" 2>&1)
expect_eq "the DROP says at once what stops" \
  "WARNING:  jsonb_ttl: the archive of public.tokens was dropped: nothing is deleted from it until ttl_index_alter names another archive, or none" \
  "$(echo "$dropped" | grep '^WARNING')"
q arch <<'SQL'
INSERT INTO tokens SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 50) g;
SQL
eventually_eq "ttl_stats says the archive is gone" 10 t arch \
  "SELECT last_error LIKE '%the archive table was dropped%nothing is deleted%' FROM ttl_stats WHERE table_name = 'tokens'::regclass"
expect_eq "the rows stay, none set aside; ttl_indexes shows archive_to '-'" "50|0|-" \
  "$(q arch -c "SELECT (SELECT count(*) FROM tokens), (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'tokens'::regclass),
                       (SELECT archive_to FROM ttl_indexes WHERE table_name = 'tokens'::regclass)")"
q arch -c "SELECT FROM ttl_index_alter('tokens', archive_to => '-')"
wait_for "with archive_to removed, they are deleted" 10 drained tokens 0

echo "-- 6. a local archive that refuses a row (its trigger): the table stops, nothing set aside"
q arch <<'SQL'
CREATE TABLE notes (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE notes_archive (id bigint, doc jsonb);
CREATE FUNCTION no_secrets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.doc ? 'secret' THEN RAISE EXCEPTION 'no secrets in the archive (note %)', NEW.id; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER no_secrets BEFORE INSERT ON notes_archive FOR EACH ROW EXECUTE FUNCTION no_secrets();
SELECT FROM ttl_index_create('notes', 'at', 0, archive_to => 'notes_archive');
INSERT INTO notes SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 200) g;
INSERT INTO notes VALUES (201, jsonb_build_object('at', now() - interval '1 hour', 'secret', 'x'));
SQL
eventually_eq "ttl_stats says the archive refuses the rows, with its error" 10 t arch \
  "SELECT last_error LIKE '%the archive public.notes_archive refuses the rows of public.notes: no secrets in the archive (note 201)%'
   FROM ttl_stats WHERE table_name = 'notes'::regclass"
expect_eq "no row set aside; every row still in the table or archived, once" "0|201|201" \
  "$(q arch -c "SELECT (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'notes'::regclass),
                       (SELECT count(*) FROM notes) + (SELECT count(*) FROM notes_archive),
                       (SELECT count(DISTINCT id) FROM (SELECT id FROM notes UNION ALL SELECT id FROM notes_archive) u)")"
q arch -c "UPDATE notes SET doc = doc - 'secret' WHERE id = 201"
wait_for "the row mended, all 201 move" 10 drained notes_archive 201

echo "-- 6b. DROP INDEX of a TTL index: said at the drop"
q arch -c "CREATE TABLE scratch (id int PRIMARY KEY, doc jsonb)" -c "SELECT FROM ttl_index_create('scratch', 'at', 0)" >/dev/null
dropped=$(q arch -c "DROP INDEX scratch_ttl_idx" 2>&1)
expect_eq "the DROP INDEX warns that the purge stops, and the TTL index is gone" \
  "WARNING:  jsonb_ttl: the TTL index of public.scratch went with its index: its expired rows are no longer removed|0" \
  "$(echo "$dropped" | grep '^WARNING')|$(q arch -c "SELECT count(*) FROM ttl_indexes WHERE table_name = 'scratch'::regclass")"

echo "-- 7. an archive with a key, one row's key already there: that row set aside alone, the rest move"
q arch <<'SQL'
CREATE TABLE orders (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE orders_archive (id bigint PRIMARY KEY, doc jsonb);
INSERT INTO orders_archive VALUES (7, '{"copied": "by hand"}');
INSERT INTO orders SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 20) g;
SELECT FROM ttl_index_create('orders', 'at', 0, archive_to => 'orders_archive');
SQL
wait_for "19 of the 20 expired rows move" 10 drained orders 1
expect_eq "the row whose key the archive holds stays, set aside and counted; the archive's copy untouched" \
  "7|1|20|by hand" \
  "$(q arch -c "SELECT (SELECT string_agg(id::text, ',') FROM orders),
                       (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'orders'::regclass),
                       (SELECT count(*) FROM orders_archive),
                       (SELECT doc->>'copied' FROM orders_archive WHERE id = 7)")"

echo "-- 8. an archive that takes only TTL moves (its trigger reads jsonb_ttl.expiring) and a row the table keeps"
q arch <<'SQL'
CREATE TABLE pings (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE pings_archive (id bigint, doc jsonb);
CREATE FUNCTION only_ttl_moves() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('jsonb_ttl.expiring', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'pings_archive takes only jsonb_ttl''s moves';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER only_ttl_moves BEFORE INSERT ON pings_archive FOR EACH ROW EXECUTE FUNCTION only_ttl_moves();
CREATE FUNCTION keep_42() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.id = 42 THEN RAISE EXCEPTION 'ping 42 is kept'; END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER keep_42 BEFORE DELETE ON pings FOR EACH ROW EXECUTE FUNCTION keep_42();
INSERT INTO pings SELECT g, jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 100) g;
SELECT FROM ttl_index_create('pings', 'at', 0, archive_to => 'pings_archive');
SQL
wait_for "99 of 100 move" 10 drained pings 1
expect_eq "the row the table keeps is set aside alone; the archive's guard let the trial through" "42|1|99" \
  "$(q arch -c "SELECT (SELECT string_agg(id::text, ',') FROM pings),
                       (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'pings'::regclass),
                       (SELECT count(*) FROM pings_archive)")"

echo "-- 9. an archive attached later as a partition of the table it archives: refused, no rows go round"
q arch <<'SQL'
CREATE TABLE readings (id int, created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE readings_2018 PARTITION OF readings FOR VALUES FROM ('2018-01-01') TO ('2019-01-01');
CREATE TABLE readings_archive (id int, created_at timestamptz NOT NULL);
SELECT FROM ttl_index_create('readings', 'created_at', interval '1 day', archive_to => 'readings_archive', paused => true);
ALTER TABLE readings ATTACH PARTITION readings_archive FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
INSERT INTO readings SELECT g, '2019-06-01' FROM generate_series(1, 50) g;
SELECT ttl_index_resume('readings');
SQL
eventually_eq "ttl_stats says the archive is now a partition of the table it archives" 10 t arch \
  "SELECT bool_or(last_error LIKE '%the archive public.readings_archive is now a partition of the table it archives%') FROM ttl_stats WHERE ttl_table = 'readings'::regclass"
expect_eq "its 50 rows were not moved round (no deletes counted)" "50|0" \
  "$(q arch -c "SELECT (SELECT count(*) FROM readings_archive) || '|' || (SELECT coalesce(sum(rows_deleted), 0) FROM ttl_stats WHERE ttl_table = 'readings'::regclass)")"

errors=$(grep -c 'PANIC\|server process .* was terminated by signal 11' "$MAIN_DIR/server.log" || true)
expect_eq "no crash of the server's own" 0 "$errors"
finish
