#!/usr/bin/env bash
# Race: rows expiring across a window while concurrent sessions keep moving random rows' dates
# into the future, into the past, and right onto the expiry boundary, and the worker purges in
# small batches. Every deletion is logged by a trigger in the deleting transaction. Afterwards:
# no row was deleted unexpired, no row vanished without a logged deletion, and nothing expired
# is left. The same race runs beside it on a table whose expired rows move into an archive
# (archive_to: each row archived once, none premature, none lost) and on one whose documents lose
# an expiring field (a field TTL: the field removed only once expired). RACE_ROWS (default
# 100000; `make test-long`: 1000000; the archive's and the field's tables a tenth of it each) and
# RACE_SECONDS set the size.
source "$(dirname "$0")/lib.sh"
ROWS=${RACE_ROWS:-100000}
SECS=${RACE_SECONDS:-20}
start_cluster e2e-race 28835 "jsonb_ttl.frequency = 100" "jsonb_ttl.batch_size = 100" \
  "jsonb_ttl.max_table_removes = 2000000000" "jsonb_ttl.max_total_removes = 2000000000"

q postgres -c "CREATE DATABASE race"
q race <<SQL
CREATE EXTENSION jsonb_ttl;
CREATE TABLE race (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('race', 'at', 0);
CREATE TABLE race_log (id int, reference timestamptz, deleted_at timestamptz);
CREATE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
\$\$ BEGIN INSERT INTO race_log VALUES (OLD.id, ttl_timestamp(OLD.doc -> 'at'), now()); RETURN OLD; END \$\$;
CREATE TRIGGER log_delete AFTER DELETE ON race FOR EACH ROW EXECUTE FUNCTION log_delete();
CREATE FUNCTION iso(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS
\$\$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') \$\$;
-- dates spread over a window from $SECS seconds ago to $SECS seconds ahead
INSERT INTO race SELECT g, jsonb_build_object('at', iso(now() + (random() * 2 - 1) * $SECS * interval '1 second'))
FROM generate_series(1, $ROWS) g;
-- the archive's race: each row moved is archived, stamped by the archive's default
CREATE TABLE race_arch (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE race_archive (id int, doc jsonb NOT NULL, archived_at timestamptz DEFAULT now());
CREATE TRIGGER log_delete AFTER DELETE ON race_arch FOR EACH ROW EXECUTE FUNCTION log_delete();
CREATE TABLE race_arch_log (LIKE race_log);
CREATE OR REPLACE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
\$\$ BEGIN
  IF TG_TABLE_NAME = 'race' THEN INSERT INTO race_log VALUES (OLD.id, ttl_timestamp(OLD.doc -> 'at'), now());
  ELSE INSERT INTO race_arch_log VALUES (OLD.id, ttl_timestamp(OLD.doc -> 'at'), now()); END IF;
  RETURN OLD;
END \$\$;
INSERT INTO race_arch SELECT g, jsonb_build_object('at', iso(now() + (random() * 2 - 1) * $SECS * interval '1 second'))
FROM generate_series(1, $ROWS / 10) g;
SELECT FROM ttl_index_create('race_arch', 'at', 0, archive_to => 'race_archive');
-- the field's race: the worker removes doc.f once doc.f.at has passed, and logs it
CREATE TABLE race_field (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE race_field_log (id int, reference timestamptz, removed_at timestamptz);
CREATE FUNCTION log_field() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
\$\$ BEGIN
  IF OLD.doc ? 'f' AND NOT NEW.doc ? 'f' THEN
    INSERT INTO race_field_log VALUES (OLD.id, ttl_timestamp(OLD.doc -> 'f' -> 'at'), now());
  END IF;
  RETURN NEW;
END \$\$;
CREATE TRIGGER log_field AFTER UPDATE ON race_field FOR EACH ROW EXECUTE FUNCTION log_field();
INSERT INTO race_field SELECT g, jsonb_build_object('f', jsonb_build_object('at', iso(now() + (random() * 2 - 1) * $SECS * interval '1 second'), 'code', g))
FROM generate_series(1, $ROWS / 10) g;
SELECT FROM ttl_field_create('race_field', 'f.at', 0);
SQL
cat >"$CLUSTER_DIR/movers.sql" <<SQL
\set id random(1, $ROWS)
\set how random(0, 2)
UPDATE race SET doc = jsonb_build_object('at', iso(now() + CASE :how WHEN 0 THEN interval '1 hour' WHEN 1 THEN interval '-1 hour' ELSE (random() - 0.5) * interval '20 ms' END)) WHERE id = :id;
UPDATE race_arch SET doc = jsonb_build_object('at', iso(now() + CASE :how WHEN 0 THEN interval '1 hour' WHEN 1 THEN interval '-1 hour' ELSE (random() - 0.5) * interval '20 ms' END)) WHERE id = :id;
UPDATE race_field SET doc = jsonb_build_object('f', jsonb_build_object('at', iso(now() + CASE :how WHEN 0 THEN interval '1 hour' WHEN 1 THEN interval '-1 hour' ELSE (random() - 0.5) * interval '20 ms' END), 'code', :id)) WHERE id = :id AND doc ? 'f';
SQL
moves=$("$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -c 4 -j 2 -T "$SECS" -f "$CLUSTER_DIR/movers.sql" race 2>"$CLUSTER_DIR/pgbench.err" \
  | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' || true)
[ -n "$moves" ] || { fail "pgbench did not run"; cat "$CLUSTER_DIR/pgbench.err"; }
pass "$moves date moves by 4 sessions over ${SECS}s while the worker purged $ROWS rows"
# The window has closed: every row left should be one a mover sent an hour out. Once that holds
# the worker has nothing more to delete for an hour, so the counts below stand still.
settled() { [ "$(q race -c "SELECT (SELECT count(*) FROM race WHERE ttl_timestamp(doc -> 'at') < now() + interval '30 minutes')
                                   + (SELECT count(*) FROM race_arch WHERE ttl_timestamp(doc -> 'at') < now() + interval '30 minutes')
                                   + (SELECT count(*) FROM race_field WHERE ttl_timestamp(doc -> 'f' -> 'at') < now() + interval '30 minutes')")" = 0 ]; }
wait_for "nothing expired is left once the movers stop, only rows an hour out" $((30 + ROWS / 2000)) settled
deleted=$(q race -c "SELECT count(*) FROM race_log")
expect_eq "premature deletes among $deleted logged (reference not before the deleting transaction's now())" 0 \
  "$(q race -c "SELECT count(*) FROM race_log WHERE reference >= deleted_at")"
expect_eq "rows gone without a logged deletion" 0 \
  "$(q race -c "SELECT count(*) FROM generate_series(1, $ROWS) g WHERE NOT EXISTS (SELECT FROM race WHERE id = g) AND NOT EXISTS (SELECT FROM race_log WHERE id = g)")"
# (No check that a row was deleted twice: PostgreSQL never deletes a row version twice and no id
# comes back, so such a check could not fail. The pick's predicate and its row lock are what
# these checks guard: loosen either and the premature deletes above go red.)
expect_eq "every row accounted for: present + deleted = $ROWS" "$ROWS" \
  "$(q race -c "SELECT (SELECT count(*) FROM race) + (SELECT count(*) FROM race_log)")"
# ttl_stats counts each batch right after it commits: allow it that instant.
eventually_eq "what ttl_stats counts is what was deleted" 2 "$deleted" race "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'race'::regclass"

echo "== with an archive"
AROWS=$((ROWS / 10))
archived=$(q race -c "SELECT count(*) FROM race_archive")
expect_eq "premature moves among $archived archived (reference not before the moving transaction's now())" 0 \
  "$(q race -c "SELECT count(*) FROM race_arch_log WHERE reference >= deleted_at")"
expect_eq "each row in exactly one place: the table or the archive, once (and every move logged)" "$AROWS|0|$archived" \
  "$(q race -c "SELECT (SELECT count(*) FROM race_arch) + (SELECT count(*) FROM race_archive) || '|' ||
                      (SELECT count(*) FROM (SELECT id FROM (SELECT id FROM race_arch UNION ALL SELECT id FROM race_archive) u GROUP BY id HAVING count(*) > 1) twice) || '|' ||
                      (SELECT count(*) FROM race_arch_log)")"
expect_eq "the archive holds each row as it was when it expired" 0 \
  "$(q race -c "SELECT count(*) FROM race_archive a JOIN race_arch_log l USING (id) WHERE ttl_timestamp(a.doc -> 'at') IS DISTINCT FROM l.reference")"

echo "== with a field TTL"
removed=$(q race -c "SELECT count(*) FROM race_field_log")
expect_eq "premature removals among $removed fields removed (reference not before the removing transaction's now())" 0 \
  "$(q race -c "SELECT count(*) FROM race_field_log WHERE reference >= removed_at")"
expect_eq "every document still there, each without its field only once it was removed" "$AROWS|0" \
  "$(q race -c "SELECT (SELECT count(*) FROM race_field) || '|' ||
                      (SELECT count(*) FROM race_field f WHERE NOT f.doc ? 'f' AND NOT EXISTS (SELECT FROM race_field_log l WHERE l.id = f.id))")"
finish
