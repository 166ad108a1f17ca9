#!/usr/bin/env bash
# Race of definitions: while the worker purges a rate-limited table (its visits a string of
# batches, waiting for their rate and yielding between passes) and new rows keep expiring, one
# session commits a change of the TTL index's definition again and again: a filter (kind 'a',
# kind 'b', none), a pause and a resume, expire_after (1 hour, 100 years), the time zone the
# `timestamp` column is read in (UTC, or UTC+14 where every row is expired), the path (the column
# `seen`, or `fresh`, by which no row is expired in UTC: the index rebuilt), and the table's own
# rate. Each change records the definition it committed, in its own transaction; a trigger logs
# every deletion with its transaction. With track_commit_timestamp, every deletion is checked
# against the definition committed last before the deletion committed: it must have expired that
# row then. RACE_DEF_SECONDS (default 60) sets the length.
source "$(dirname "$0")/lib.sh"
SECS=${RACE_DEF_SECONDS:-60}
start_cluster e2e-race-defs 28865 "jsonb_ttl.frequency = 100" "jsonb_ttl.batch_size = 100" \
  "track_commit_timestamp = on" "jsonb_ttl.max_table_removes = 2000000000" \
  "jsonb_ttl.max_total_removes = 2000000000"

q postgres -c "CREATE DATABASE race"
q race >/dev/null <<'SQL'
CREATE EXTENSION jsonb_ttl;
-- local times (UTC): half 20 hours old (expired under 1 hour in any zone), half 30 minutes old
-- (expired under 1 hour only when read in UTC+14)
CREATE TABLE t (id bigserial PRIMARY KEY, kind text NOT NULL, seen timestamp NOT NULL,
                fresh timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'));
CREATE TABLE gone (id bigint, kind text, seen timestamp, fresh timestamp, at timestamptz, xid xid8);
CREATE FUNCTION log_gone() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
$$ BEGIN INSERT INTO gone VALUES (OLD.id, OLD.kind, OLD.seen, OLD.fresh, now(), pg_current_xact_id()); RETURN OLD; END $$;
CREATE TRIGGER log_gone AFTER DELETE ON t FOR EACH ROW EXECUTE FUNCTION log_gone();
CREATE TABLE defs (xid xid8, kind text, paused boolean, expire_after interval, time_zone text, path text);
CREATE FUNCTION note_def() RETURNS void LANGUAGE sql AS $$
  INSERT INTO defs SELECT pg_current_xact_id(), substring(filter FROM '''(\w)'''), paused_at IS NOT NULL,
                          expire_after, time_zone, path
  FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 't'::regclass $$;
CREATE FUNCTION refill(n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO t (kind, seen) SELECT CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END,
         (now() AT TIME ZONE 'UTC') - CASE WHEN random() < 0.5 THEN interval '20 hours' ELSE interval '30 minutes' END
  FROM generate_series(1, n) $$;
SELECT refill(20000);
BEGIN;
SELECT FROM ttl_index_create('t', 'seen', interval '1 hour', time_zone => 'UTC', max_removes_per_second => 2000);
SELECT note_def();
COMMIT;
SQL

cat >"$CLUSTER_DIR/defs.sql" <<'SQL'
\set what random(0, 11)
BEGIN;
\if :what = 0
SELECT FROM ttl_index_alter('t', filter => $$kind = 'a'$$);
\elif :what = 1
SELECT FROM ttl_index_alter('t', filter => $$kind = 'b'$$);
\elif :what = 2
SELECT FROM ttl_index_alter('t', filter => '');
\elif :what = 3
SELECT FROM ttl_index_pause('t');
\elif :what = 4
SELECT FROM ttl_index_resume('t');
\elif :what = 5
SELECT FROM ttl_index_alter('t', interval '100 years');
\elif :what = 6
SELECT FROM ttl_index_alter('t', interval '1 hour');
\elif :what = 7
SELECT FROM ttl_index_alter('t', time_zone => 'Pacific/Kiritimati');
\elif :what = 8
SELECT FROM ttl_index_alter('t', time_zone => 'UTC');
\elif :what = 9
SELECT FROM ttl_index_alter('t', path => 'fresh');
\elif :what = 10
SELECT FROM ttl_index_alter('t', path => 'seen');
\else
SELECT FROM ttl_index_alter('t', max_removes_per_second => (random() * 3000)::int + 100);
\endif
SELECT note_def();
COMMIT;
SQL
echo "SELECT refill(200);" >"$CLUSTER_DIR/refill.sql"
"$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -c 1 -T "$SECS" -R 20 -f "$CLUSTER_DIR/refill.sql" race \
  >"$CLUSTER_DIR/refill.out" 2>&1 &
refill=$!
changes=$("$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -c 1 -T "$SECS" -f "$CLUSTER_DIR/defs.sql" race 2>"$CLUSTER_DIR/defs.err" \
  | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' || true)
wait $refill || true
[ -n "$changes" ] || { fail "pgbench did not run"; cat "$CLUSTER_DIR/defs.err"; }
deleted=$(q race -c "SELECT count(*) FROM gone")
pass "$changes changes of the definition committed in ${SECS}s while the worker deleted $deleted rows"
[ "$deleted" -gt 100 ] && pass "the worker deleted between the changes ($deleted rows)" || fail "the worker deleted only $deleted rows"
expect_eq "deletions not expired under the definition committed last before them" 0 "$(q race -c "
  SELECT count(*) FROM gone g
  CROSS JOIN LATERAL (SELECT * FROM defs d
                      WHERE pg_xact_commit_timestamp(d.xid::text::xid) < pg_xact_commit_timestamp(g.xid::text::xid)
                      ORDER BY pg_xact_commit_timestamp(d.xid::text::xid) DESC LIMIT 1) d
  WHERE d.paused OR (d.kind IS NOT NULL AND g.kind <> d.kind)
     OR timezone(coalesce(d.time_zone, 'UTC'), CASE d.path WHEN 'fresh' THEN g.fresh ELSE g.seen END)
        >= g.at - d.expire_after")"
# (counted as the deletions without one: the worker goes on deleting after the changes stop)
expect_eq "every deletion has a committed definition before it" 0 "$(q race -c "
  SELECT count(*) FROM gone g WHERE NOT EXISTS (SELECT FROM defs d
    WHERE pg_xact_commit_timestamp(d.xid::text::xid) < pg_xact_commit_timestamp(g.xid::text::xid))")"
expect_eq "every row accounted for: present + deleted = inserted" t \
  "$(q race -c "SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM gone) = (SELECT last_value FROM t_id_seq)")"
finish
