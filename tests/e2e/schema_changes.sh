#!/usr/bin/env bash
# Schema changes while the worker is purging: ALTER TABLE RENAME / SET SCHEMA / RENAME COLUMN, DROP TABLE,
# DROP INDEX, TRUNCATE, ALTER TABLE … TYPE on the path's column, DROP EXTENSION, DROP DATABASE.
# No crash, no error loop, and the catalog stays consistent.
source "$(dirname "$0")/lib.sh"
# (autovacuum off: a DROP waiting on it would log "canceling autovacuum task" as an ERROR)
start_cluster e2e-schema 28837 "jsonb_ttl.frequency = 100" "jsonb_ttl.batch_size = 200" \
  "jsonb_ttl.max_removes_per_second = 20000" "autovacuum = off" "jsonb_ttl.lock_timeout = 1000"

backlog() {  # backlog DB TABLE: a table with 100,000 expired rows and its TTL index
  q "$1" -c "CREATE TABLE $2 (id int, doc jsonb)" \
         -c "INSERT INTO $2 SELECT g, jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 100000) g" \
         -c "SELECT FROM ttl_index_create('$2', 'at', 0)"
}
for db in ddl other; do
  q postgres -c "CREATE DATABASE $db"
  q $db -c "CREATE EXTENSION jsonb_ttl"
done
for t in t_rename t_schema t_column t_drop t_dropindex t_truncate t_type; do backlog ddl $t; done
backlog other t_other
worker() { q postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = '$1'"; }
purging() { [ "$(q ddl -c "SELECT count(*) < 100000 FROM t_rename")" = t ]; }
wait_for "the worker is purging" 10 purging
pid=$(worker ddl)

q ddl -c "ALTER TABLE t_rename RENAME TO t_renamed" && pass "ALTER TABLE RENAME under load"
q ddl -c "CREATE SCHEMA moved" -c "ALTER TABLE t_schema SET SCHEMA moved" && pass "ALTER TABLE SET SCHEMA under load"
q ddl -c "ALTER TABLE t_column RENAME COLUMN doc TO body" && pass "ALTER TABLE RENAME COLUMN (the path's) under load"
q ddl -c "DROP TABLE t_drop" && pass "DROP TABLE under load"
q ddl -c "DROP INDEX t_dropindex_ttl_idx" && pass "DROP INDEX under load"
q ddl -c "INSERT INTO t_dropindex SELECT -g, jsonb_build_object('at', 1550165973) FROM generate_series(1, 10) g"
q ddl -c "TRUNCATE t_truncate" && pass "TRUNCATE under load"
q ddl -c "ALTER TABLE t_type ALTER COLUMN doc TYPE jsonb USING doc || '{\"x\": 1}'" && pass "ALTER TABLE … TYPE (a rewrite) under load"
if q ddl -c "ALTER TABLE t_type ALTER COLUMN doc TYPE text" 2>/dev/null; then
  fail "ALTER COLUMN … TYPE text should fail: the TTL index needs jsonb"
else
  pass "ALTER COLUMN … TYPE text is refused by the TTL index's expression, the table unchanged"
fi

renamed_done() { [ "$(q ddl -c "SELECT (SELECT count(*) FROM t_renamed) + (SELECT count(*) FROM moved.t_schema) + (SELECT count(*) FROM t_column) + (SELECT count(*) FROM t_type)")" = 0 ]; }
wait_for "renamed, moved, column-renamed and rewritten tables are purged to the end" 90 renamed_done
# (each batch locks its table and then builds its statements on the names it has then)
expect_eq "renames under load cost no failed batch" "0 0 0" \
  "$(q ddl -c "SELECT string_agg(errors::text, ' ') FROM ttl_stats WHERE table_name IN ('t_renamed'::regclass, 'moved.t_schema'::regclass, 't_column'::regclass)")"
expect_eq "the catalog lists exactly the tables still with a TTL index" "moved.t_schema t_column t_renamed t_truncate t_type" \
  "$(q ddl -c "SELECT string_agg(table_name::text, ' ' ORDER BY table_name::text) FROM ttl_indexes")"
expect_eq "and every entry has its index" 0 "$(q ddl -c "SELECT count(*) FROM ttl_indexes WHERE index_size IS NULL")"
expect_eq "t_dropindex keeps the expired rows added after DROP INDEX (no TTL index any more)" 10 \
  "$(q ddl -c "SELECT count(*) FROM t_dropindex WHERE id < 0")"
expect_eq "the worker never crashed" "$pid" "$(worker ddl)"

q ddl -c "DROP EXTENSION jsonb_ttl CASCADE" && pass "DROP EXTENSION CASCADE under load"
no_worker() { [ -z "$(worker ddl)" ]; }
wait_for "the worker leaves the database" 5 no_worker
q postgres -c "DROP DATABASE other" && pass "DROP DATABASE without FORCE under load"
wait_for "and its worker is gone" 5 no_worker
errors=$(grep -c ' ERROR: ' "$CLUSTER_DIR/server.log" || true)
if [ "$errors" -le 10 ]; then pass "no error loop ($errors ERROR lines; a batch racing a DDL may fail once)"; else
  fail "$errors ERROR lines"; grep ' ERROR: ' "$CLUSTER_DIR/server.log" | sort | uniq -c | sort -rn | head -5; fi
if grep -qE 'PANIC|server process .* was terminated' "$CLUSTER_DIR/server.log"; then fail "a process crashed"; else pass "no crash"; fi
finish
