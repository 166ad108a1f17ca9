#!/usr/bin/env bash
# pg_dump of a database with TTL indexes, restored into a fresh database, gives the same
# ttl_indexes, and the restored TTL indexes work.
source "$(dirname "$0")/lib.sh"
# The worker runs but deletes nothing (enabled = off): ttl_expire_now() below must find the
# expired row, whenever the worker's first pass would have come.
start_cluster e2e-dump 28830 "jsonb_ttl.enabled = off"

q postgres -c "CREATE DATABASE src"
q src <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('events', 'creationDate', interval '10 minutes');
CREATE SCHEMA "odd schema";
CREATE TABLE "odd schema"."Sessions" (id text PRIMARY KEY, data jsonb, meta jsonb);
SELECT FROM ttl_index_create('"odd schema"."Sessions"', 'meta."last.seen"', 1800, 'ms');
CREATE TABLE plain (id int, at timestamptz);
SELECT FROM ttl_index_create('plain', 'at', interval '1 day');
ALTER TABLE plain RENAME TO plain_renamed;
INSERT INTO events (doc) VALUES ('{"creationDate": "2019-01-01"}'), ('{"creationDate": "2999-01-01"}');
SQL
listing="SELECT table_name::text, column_name, path, json_path, expire_after, numeric_unit, index_name
         FROM ttl_indexes ORDER BY 1"
before=$(q src -c "$listing")

"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$CLUSTER_DIR/src.dump" src
q postgres -c "CREATE DATABASE dst"
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d dst --exit-on-error "$CLUSTER_DIR/src.dump"
after=$(q dst -c "$listing")

expect_eq "three TTL indexes in the source" 3 "$(q src -c 'SELECT count(*) FROM ttl_indexes')"
expect_eq "ttl_indexes identical after pg_dump | pg_restore" "$before" "$after"
expect_eq "every restored TTL index has its index" 0 \
  "$(q dst -c 'SELECT count(*) FROM ttl_indexes WHERE index_size IS NULL')"
serving_dst() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'dst'")" = 1 ]; }
wait_for "pg_restore's CREATE EXTENSION started a worker for the restored database" 5 serving_dst
expect_eq "the restored TTL index removes expired rows" 1 "$(q dst -c "SELECT ttl_expire_now('events')")"
expect_eq "and keeps the others" 1 "$(q dst -c 'SELECT count(*) FROM events')"
finish
