#!/usr/bin/env bash
# ALTER EXTENSION jsonb_ttl UPDATE from the released 0.1.0, 0.2.0 and 0.3.0
# (sql/jsonb_ttl--0.1.0.sql, …--0.2.0.sql and …--0.3.0.sql, kept as shipped but for security
# fixes): an updated database
# equals a fresh one, member object by member object (pg_dump --schema-only leaves an
# extension's members out, so the catalogs are compared directly), and the worker purges before
# and after the update with the TTL index in place.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-upgrade 28841 "jsonb_ttl.frequency = 100"

q postgres -c "CREATE DATABASE updated" -c "CREATE DATABASE fresh" -c "CREATE DATABASE from020" \
  -c "CREATE DATABASE from030"
LIB=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")  # the library's version, the default
q updated -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION jsonb_ttl VERSION '0.1.0';
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('events', 'at', interval '1 second');
INSERT INTO events (doc) SELECT jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 100);
-- 0.1.0 read a timestamp column as UTC, whatever the session's TimeZone
SET TimeZone = 'America/New_York';
CREATE TABLE visits (id int, seen timestamp);
SELECT FROM ttl_index_create('visits', 'seen', interval '1 day');
SQL
visits_index() { q updated -c "SELECT indexdef LIKE '%AT TIME ZONE ''UTC''%' FROM pg_indexes WHERE indexname = 'visits_ttl_idx'"; }
expect_eq "under 0.1.0's SQL the $LIB library still reads a timestamp column as UTC" t "$(visits_index)"
q fresh -c "CREATE EXTENSION jsonb_ttl"
empty() { [ "$(q updated -c "SELECT count(*) FROM events")" = 0 ]; }
wait_for "the $LIB library's worker purges a 0.1.0 database" 5 empty
expect_eq "0.1.0 is what is installed there" 0.1.0 "$(q updated -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"

# The 0.1.0 library took an hours-only offset (`+00`, PostgreSQL's timestamptz output) for no
# date, so its TTL indexes over JSON lack such rows: the update rebuilds them (a new
# relfilenode), and leaves indexes over timestamp columns alone.
files="SELECT string_agg(c.relname || ':' || c.relfilenode, ' ' ORDER BY c.relname) FROM pg_class c WHERE c.relname IN ('events_ttl_idx', 'visits_ttl_idx')"
before=$(q updated -c "$files")
q updated -c "ALTER EXTENSION jsonb_ttl UPDATE"
after=$(q updated -c "$files")
expect_eq "the update rebuilt the TTL index over JSON, not the one over a timestamp column" "events_ttl_idx changed, visits_ttl_idx kept" \
  "events_ttl_idx $([ "${before%% *}" != "${after%% *}" ] && echo changed || echo kept), visits_ttl_idx $([ "${before##* }" = "${after##* }" ] && echo kept || echo changed)"
expect_eq "the update reaches the default version" "$LIB" "$(q updated -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"

# Every member object of the extension, described by what a user or an attacker can observe.
describe='
WITH members AS (
  SELECT d.classid, d.objid FROM pg_depend d
  WHERE d.deptype = $$e$$ AND d.refclassid = $$pg_extension$$::regclass
    AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = $$jsonb_ttl$$))
SELECT $$function $$ || p.oid::regprocedure || $$ returns $$ || p.prorettype::regtype
       || $$ volatility $$ || p.provolatile::text || $$ strict $$ || p.proisstrict || $$ definer $$ || p.prosecdef
       || $$ parallel $$ || p.proparallel::text || $$ config $$ || coalesce(p.proconfig::text, $$-$$)
       || $$ acl $$ || coalesce(p.proacl::text, $$default$$) || $$ comment $$ || coalesce(obj_description(p.oid, $$pg_proc$$), $$-$$)
       || $$ arguments $$ || pg_get_function_arguments(p.oid) || $$ rows $$ || p.prorows
       || $$ body $$ || md5(p.prosrc)
FROM members m JOIN pg_proc p ON p.oid = m.objid WHERE m.classid = $$pg_proc$$::regclass
UNION ALL
SELECT $$relation $$ || c.relname || $$ kind $$ || c.relkind::text || $$ acl $$ || coalesce(c.relacl::text, $$default$$)
       || $$ comment $$ || coalesce(obj_description(c.oid, $$pg_class$$), $$-$$)
       || $$ columns $$ || (SELECT string_agg(a.attname || $$:$$ || format_type(a.atttypid, a.atttypmod) || $$:$$ || a.attnotnull
                                     || $$:$$ || coalesce(col_description(a.attrelid, a.attnum), $$-$$), $$,$$ ORDER BY a.attnum)
                          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
       || $$ view $$ || coalesce(md5(pg_get_viewdef(c.oid)), $$-$$)
       || $$ constraints $$ || coalesce((SELECT string_agg(pg_get_constraintdef(k.oid), $$; $$ ORDER BY k.conname) FROM pg_constraint k WHERE k.conrelid = c.oid), $$-$$)
FROM members m JOIN pg_class c ON c.oid = m.objid WHERE m.classid = $$pg_class$$::regclass
UNION ALL
SELECT $$type $$ || t.typname || $$ $$ || t.typtype::text || $$ attributes $$
       || coalesce((SELECT string_agg(a.attname || $$:$$ || format_type(a.atttypid, a.atttypmod), $$,$$ ORDER BY a.attnum)
                    FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), $$-$$)
FROM members m JOIN pg_type t ON t.oid = m.objid WHERE m.classid = $$pg_type$$::regclass
UNION ALL
SELECT $$event trigger $$ || e.evtname || $$ on $$ || e.evtevent::text || $$ calls $$ || e.evtfoid::regproc || $$ tags $$ || coalesce(e.evttags::text, $$-$$)
FROM members m JOIN pg_event_trigger e ON e.oid = m.objid WHERE m.classid = $$pg_event_trigger$$::regclass
UNION ALL
SELECT $$config dump $$ || x.extconfig::regclass[]::text || $$ $$ || x.extcondition::text
FROM pg_extension x WHERE x.extname = $$jsonb_ttl$$
ORDER BY 1'
q updated -c "$describe" >"$CLUSTER_DIR/updated.txt"
q fresh -c "$describe" >"$CLUSTER_DIR/fresh.txt"
expect_eq "an updated 0.1.0 database equals a fresh $LIB one ($(wc -l <"$CLUSTER_DIR/fresh.txt") member objects compared)" "" \
  "$(diff "$CLUSTER_DIR/updated.txt" "$CLUSTER_DIR/fresh.txt")"
expect_eq "the update recorded the OIDs of the existing TTL indexes" "events_ttl_idx visits_ttl_idx" \
  "$(q updated -c "SELECT string_agg(index_oid::regclass::text, ' ' ORDER BY index_oid::regclass::text) FROM jsonb_ttl_internal.index_oid")"
expect_eq "the TTL indexes survived the update" "events_ttl_idx visits_ttl_idx" \
  "$(q updated -c "SELECT string_agg(index_name, ' ' ORDER BY index_name) FROM ttl_indexes")"
expect_eq "an updated timestamp column's index keeps reading UTC (time_zone NULL), no rebuild" "t|" \
  "$(visits_index)|$(q updated -c "SELECT time_zone FROM ttl_indexes WHERE table_name = 'visits'::regclass")"

q updated -c "INSERT INTO events (doc) VALUES ('{\"at\": \"2019-01-01 10:00:00+00\"}')"
wait_for "a date with an hours-only offset expires" 5 empty
q updated -c "INSERT INTO events (doc) SELECT jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 100)"
wait_for "the worker purges after the update" 5 empty

# The options 0.2.0 brought work in the updated database, with the worker: a filter, touch,
# a per-row TTL field and hidden expired rows on one table; whole partitions dropped on another.
q updated <<'SQL'
CREATE TABLE items (id int PRIMARY KEY, kind text, doc jsonb);
SELECT FROM ttl_index_create('items', 'ts', interval '1 hour', filter => $$kind <> 'keep'$$,
                             touch => true, row_ttl_path => 'ttl', hide_expired => true);
INSERT INTO items VALUES (1, 'temp', '{"ttl": 0}'), (2, 'keep', '{"ttl": 0}'), (3, 'temp', '{"ttl": 3600}');
CREATE TABLE parted (at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE parted_2019 PARTITION OF parted FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE parted_now PARTITION OF parted FOR VALUES FROM ('2020-01-01') TO ('3000-01-01');
INSERT INTO parted VALUES ('2019-06-01'), (now());
SELECT FROM ttl_index_create('parted', 'at', interval '1 day', drop_partitions => 'drop');
SQL
eventually_eq "after the update, filter + touch + per-row TTL: only the filtered row with ttl 0 goes" 20 "2,3" updated \
  "SELECT string_agg(id::text, ',' ORDER BY id) FROM items"
eventually_eq "and an expired partition is dropped whole" 20 f updated "SELECT to_regclass('parted_2019') IS NOT NULL"

# 0.2.0 → current: a database made at 0.2.0 with every option, served by the current library
# before its update (ttl_stats, a DROP INDEX through 0.2.0's event trigger), then updated.
q from020 <<'SQL'
CREATE EXTENSION jsonb_ttl VERSION '0.2.0';
CREATE TABLE items (id int PRIMARY KEY, kind text, doc jsonb);
SELECT FROM ttl_index_create('items', 'ts', interval '1 hour', filter => $$kind <> 'keep'$$,
                             touch => true, row_ttl_path => 'ttl', hide_expired => true);
CREATE TABLE gone (id int, at timestamptz);
SELECT FROM ttl_index_create('gone', 'at', interval '1 hour', row_ttl_path => 'id');
SQL
expect_eq "0.2.0's ttl_stats reads under the $LIB library" 2 "$(q from020 -c "SELECT count(*) FROM ttl_stats")"
# any role may build on 0.2.0's views and functions: that must not block the update
q from020 <<'SQL'
CREATE ROLE tenant;
GRANT CREATE ON SCHEMA public TO tenant;
SET ROLE tenant;
CREATE VIEW public.my_stats AS SELECT table_name, runs FROM ttl_stats;
CREATE VIEW public.my_raw_stats AS SELECT table_oid FROM _ttl_stats();
CREATE VIEW public.my_indexes AS SELECT table_name, index_size FROM ttl_indexes;
SQL
q from020 -c "DROP INDEX gone_ttl_idx"
expect_eq "0.2.0's event trigger with the $LIB library: DROP INDEX removes the entry and its per-row index" "0|" \
  "$(q from020 -c "SELECT count(*) FROM ttl_index WHERE table_oid = 'gone'::regclass")|$(q from020 -c "SELECT to_regclass('gone_row_ttl_idx')")"
q from020 -c "ALTER EXTENSION jsonb_ttl UPDATE"
expect_eq "0.2.0 updates to $LIB, whatever views a tenant built on its objects" "$LIB" "$(q from020 -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"
q from020 -c "$describe" >"$CLUSTER_DIR/from020.txt"
expect_eq "an updated 0.2.0 database equals a fresh $LIB one" "" "$(diff "$CLUSTER_DIR/from020.txt" "$CLUSTER_DIR/fresh.txt")"
# (items has a per-row TTL: since 0.3.0 ttl_stats has a row for each of its two parts)
expect_eq "the tenant's views over ttl_stats and ttl_indexes still read; her view over 0.2.0's _ttl_stats() keeps it, executable by no one" \
  "2|1|f" "$(q from020 -c "SELECT count(*) FROM my_stats")|$(q from020 -c "SELECT count(*) FROM my_indexes")|$(q from020 -c "SELECT has_function_privilege('tenant', 'public._ttl_stats()', 'EXECUTE')")"
expect_eq "the update recorded both indexes of the per-row TTL index, by OID" "index_name:items_ttl_idx row_ttl_index_name:items_row_ttl_idx" \
  "$(q from020 -c "SELECT string_agg(role || ':' || index_oid::regclass::text, ' ' ORDER BY role) FROM jsonb_ttl_internal.index_oid")"
q from020 -c "INSERT INTO items VALUES (1, 'temp', '{\"ttl\": 0}'), (2, 'keep', '{\"ttl\": 0}')"
eventually_eq "after the update to $LIB the worker purges with every option" 5 "2" from020 \
  "SELECT string_agg(id::text, ',' ORDER BY id) FROM items"
q from020 -c "SELECT FROM ttl_index_drop('items')"
expect_eq "and ttl_index_drop removes both indexes, the trigger and the policies" "0|0|0" \
  "$(q from020 -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'items' AND indexname LIKE '%ttl%'")|$(q from020 -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'items'::regclass AND NOT tgisinternal")|$(q from020 -c "SELECT count(*) FROM pg_policy WHERE polrelid = 'items'::regclass")"

# 0.3.0 → current: a database made at 0.3.0, with a pause reason longer than 1 kB (0.3.0's
# library took any), served by the current library before its update, then updated.
q from030 <<'SQL'
CREATE EXTENSION jsonb_ttl VERSION '0.3.0';
CREATE TABLE events (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', interval '1 hour', max_removes_per_second => 1000);
CREATE TABLE paused (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('paused', 'at', interval '1 hour');
SELECT FROM ttl_index_pause('paused');
CREATE TABLE notes (id int PRIMARY KEY, at text);
SELECT FROM ttl_index_create('notes', 'at', interval '1 hour');
UPDATE ttl_index SET paused_reason = repeat('x', 5000) WHERE table_oid = 'paused'::regclass;
INSERT INTO paused SELECT g, '{"at": 1}' FROM generate_series(1, 10) g;
SQL
q from030 -c "INSERT INTO events SELECT g, '{\"at\": 1}' FROM generate_series(1, 10) g"
eventually_eq "the $LIB library's worker purges a 0.3.0 database" 5 "0|10" from030 \
  "SELECT (SELECT count(*) FROM events) || '|' || (SELECT count(*) FROM paused)"
expect_eq "under 0.3.0's SQL, ttl_expire_now() with no table still means every table" 0 "$(q from030 -c "SELECT ttl_expire_now()")"
q from030 -c "ALTER EXTENSION jsonb_ttl UPDATE"
expect_eq "0.3.0 updates to $LIB" "$LIB" "$(q from030 -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"
q from030 -c "$describe" >"$CLUSTER_DIR/from030.txt"
expect_eq "an updated 0.3.0 database equals a fresh $LIB one" "" "$(diff "$CLUSTER_DIR/from030.txt" "$CLUSTER_DIR/fresh.txt")"
expect_eq "the update cut the pause reason to 1 kB" 1024 \
  "$(q from030 -c "SELECT length(paused_reason) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'paused'::regclass")"
expect_eq "the update moved the catalog and the index helpers out of the user's schema; the text column's TTL index calls the moved helper" \
  "||t" "$(q from030 -c "SELECT to_regclass('public.ttl_index')")|$(q from030 -c "SELECT string_agg(p.oid::regprocedure::text, ',') FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.proname IN ('ttl_text_timestamp', 'ttl_unix_timestamp', 'ttl_row_seconds', 'ttl_expires_at')")|$(q from030 -c "SELECT indexdef LIKE '%jsonb_ttl_internal.ttl_text_timestamp(%' FROM pg_indexes WHERE indexname = 'notes_ttl_idx'")"
q from030 -c "INSERT INTO notes VALUES (1, '2019-01-01T00:00:00Z'), (2, '2999-01-01T00:00:00Z')"
eventually_eq "the worker purges through the moved helper" 5 "2" from030 "SELECT string_agg(id::text, ',') FROM notes"
expect_eq "after it, ttl_expire_now(NULL) is an error" "ttl_expire_now: the table is NULL" \
  "$(outcome postgres from030 "SELECT ttl_expire_now(to_regclass('evnets'))")"
expect_eq "and ttl_expire_now() every table, paused ones skipped" "0|10" \
  "$(q from030 -c "SELECT ttl_expire_now()")|$(q from030 -c "SELECT count(*) FROM paused")"
q from030 -c "CREATE TABLE events_archive (id int, doc jsonb)" \
  -c "SELECT FROM ttl_index_alter('events', archive_to => 'events_archive')" \
  -c "INSERT INTO events SELECT g, '{\"at\": 1}' FROM generate_series(1, 10) g"
eventually_eq "an updated 0.3.0 database archives (archive_to, a 0.4.0 option): its worker moves the rows" \
  5 "0|10" from030 "SELECT (SELECT count(*) FROM events) || '|' || (SELECT count(*) FROM events_archive)"
q from030 -c "CREATE TABLE codes (id int, doc jsonb)" \
  -c "SELECT ttl_field_create('codes', 'otp.at', interval '1 minute')" \
  -c "INSERT INTO codes SELECT g, jsonb_build_object('otp', jsonb_build_object('at', 1), 'keep', g) FROM generate_series(1, 10) g"
eventually_eq "an updated 0.3.0 database expires fields (ttl_field_create, 0.4.0): its worker removes them, the documents stay" \
  5 "10|0|10" from030 "SELECT count(*) || '|' || count(*) FILTER (WHERE doc ? 'otp') || '|' || count(*) FILTER (WHERE doc ? 'keep') FROM codes"
finish
