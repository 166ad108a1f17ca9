#!/usr/bin/env bash
# drop_partitions with the worker running: expired partitions are dropped (or detached) whole,
# rows of the others deleted one by one, the default partition kept; a partition whose lock is
# taken is left for a later pass without making anyone queue; the drop runs as the table's
# owner; and the safety brake holds a drop that would remove most of a table.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-partitions 28848 "jsonb_ttl.frequency = 200" "jsonb_ttl.max_table_fraction = 0.5"

q postgres -c "CREATE DATABASE parts"
q parts <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE tenant LOGIN;
GRANT CREATE ON SCHEMA public TO tenant;
SET ROLE tenant;
CREATE TABLE events (id bigserial, created_at timestamptz NOT NULL, doc jsonb)
  PARTITION BY RANGE (created_at);
CREATE TABLE events_2019_01 PARTITION OF events FOR VALUES FROM ('2019-01-01') TO ('2019-02-01');
CREATE TABLE events_2019_02 PARTITION OF events FOR VALUES FROM ('2019-02-01') TO ('2019-03-01');
CREATE TABLE events_2019_03 PARTITION OF events FOR VALUES FROM ('2019-03-01') TO ('2019-04-01');
CREATE TABLE events_recent PARTITION OF events FOR VALUES FROM ('2019-04-01') TO ('2999-01-01');
CREATE TABLE events_later PARTITION OF events DEFAULT;
INSERT INTO events (created_at) SELECT '2019-01-01'::timestamptz + g * interval '1 hour' FROM generate_series(0, 2000) g;
INSERT INTO events (created_at) SELECT now() - interval '40 days' FROM generate_series(1, 100);
INSERT INTO events (created_at) SELECT now() FROM generate_series(1, 100);
INSERT INTO events (created_at) VALUES ('3000-01-01');
SQL
# a long reader of one old partition holds a lock the DROP conflicts with
q parts -c "BEGIN" -c "SELECT count(*) FROM events_2019_02" -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
reader=$!
sleep 0.5
q parts -c "SET ROLE tenant" -c "SELECT FROM ttl_index_create('events', 'created_at', interval '30 days', drop_partitions => 'drop')"
partitions() { q parts -c "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass"; }
eventually_eq "the expired partitions not in use are dropped" 5 "events_2019_02,events_later,events_recent" parts \
  "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass"
start=$(now_ms)
q parts -c "SELECT count(*) FROM events" >/dev/null
took=$(($(now_ms) - start))
expect_eq "while the busy one waits, the worker's lock requests make no query queue (a read of the table took < 500 ms)" t \
  "$([ $took -lt 500 ] && echo t || echo "f: $took ms")"
expect_eq "the busy partition is still there while its reader runs" t \
  "$(q parts -c "SELECT to_regclass('events_2019_02') IS NOT NULL")"
wait $reader
eventually_eq "once its reader is done, it goes at a later pass" 5 "events_later,events_recent" parts \
  "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass"
eventually_eq "rows of the other partitions are deleted one by one: the expired go, the rest and the default partition's stay" 5 "101" parts \
  "SELECT count(*) FROM events"
expect_eq "the server log names each partition dropped" 3 "$(grep -c 'jsonb_ttl: dropped partition public.events_2019_0' "$CLUSTER_DIR/server.log")"
expect_eq "ttl_statistics() counts their rows (estimated: 0 before any ANALYZE) with the deleted ones" t \
  "$(q parts -c "SELECT rows_deleted >= 100 FROM ttl_statistics()")"

echo "detach"
q parts <<'SQL'
SET ROLE tenant;
CREATE TABLE archive (created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE archive_2019 PARTITION OF archive FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE archive_now PARTITION OF archive FOR VALUES FROM ('2020-01-01') TO ('3000-01-01');
INSERT INTO archive VALUES ('2019-06-01'), (now());
SQL
# a reader holds the expired partition for a while: it is left whole until then, its rows
# are not deleted one by one meanwhile
q parts -c "BEGIN" -c "SELECT count(*) FROM archive_2019" -c "SELECT pg_sleep(1.5)" -c "COMMIT" >/dev/null &
reader=$!
sleep 0.3
q parts -c "SET ROLE tenant" -c "SELECT FROM ttl_index_create('archive', 'created_at', interval '1 day', drop_partitions => 'detach')"
wait $reader
eventually_eq "an expired partition is detached, with its rows, for archiving, once its reader is done" 5 "false 1" parts \
  "SELECT relispartition || ' ' || (SELECT count(*) FROM archive_2019) FROM pg_class WHERE oid = 'archive_2019'::regclass"
expect_eq "and the table keeps the rest" 1 "$(q parts -c "SELECT count(*) FROM archive")"

echo "the attack: a partition its table's owner does not own"
q parts <<'SQL'
CREATE ROLE victim;
SET ROLE tenant;
CREATE TABLE shared (created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE shared_2019 PARTITION OF shared FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
INSERT INTO shared VALUES ('2019-06-01');
RESET ROLE;
ALTER TABLE shared_2019 OWNER TO victim;  -- as a superuser could
SET ROLE tenant;
SELECT FROM ttl_index_create('shared', 'created_at', interval '1 day', drop_partitions => 'drop');
SQL
sleep 1
expect_eq "the worker drops as the table's owner: not a partition someone else owns" "t" \
  "$(q parts -c "SELECT to_regclass('shared_2019') IS NOT NULL")"
expect_eq "and logs why" t "$(grep -q 'cannot drop public.shared_2019: must be owner of table shared_2019' "$CLUSTER_DIR/server.log" && echo t || echo f)"

echo "the safety brake"
q parts <<'SQL'
SET ROLE tenant;
CREATE TABLE audit (created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE audit_old PARTITION OF audit FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE audit_now PARTITION OF audit FOR VALUES FROM ('2020-01-01') TO ('3000-01-01');
INSERT INTO audit SELECT '2019-06-01' FROM generate_series(1, 15000);
INSERT INTO audit SELECT now() FROM generate_series(1, 5000);
ANALYZE audit;
SELECT FROM ttl_index_create('audit', 'created_at', interval '100 years', drop_partitions => 'drop');
-- later, a mistake: '1 minute' meant '100 years' (the alter counts what the new definition
-- expires, finds 75 % of the table, and holds the TTL index there and then)
SELECT FROM ttl_index_alter('audit', interval '1 minute');
SQL
eventually_eq "dropping 75 % of a table at once pauses its TTL index instead" 5 t parts \
  "SELECT paused_at IS NOT NULL FROM ttl_indexes WHERE table_name = 'audit'::regclass"
expect_eq "nothing was dropped, and ttl_stats says why" "t t" \
  "$(q parts -c "SELECT to_regclass('audit_old') IS NOT NULL") $(q parts -c "SELECT bool_and(skipped LIKE 'held by the safety brake: 15000 of 20000 rows would expire at once%') FROM ttl_stats WHERE ttl_table = 'audit'::regclass")"
q parts -c "SET ROLE tenant" -c "SELECT ttl_index_resume('audit')" >/dev/null
eventually_eq "after ttl_index_resume() it goes" 5 f parts "SELECT to_regclass('audit_old') IS NOT NULL"

echo "a partition that expires whole before the next pass is left for the drop"
# frequency 5 s; feed_soon is made 3 s after a pass, and its upper bound expires 3.5 s later:
# the next pass (2 s after) finds its 100 rows expired, and leaves them to go with the partition
# at the pass after, none deleted one by one (a trigger on it counts the deletes); feed_rest
# keeps its rows
q postgres -c "ALTER SYSTEM SET jsonb_ttl.frequency = 5000" -c "SELECT pg_reload_conf()" >/dev/null
pass_after() { [ "$(q parts -c "SELECT last_pass_at > '$1'::timestamptz FROM ttl_statistics()")" = t ]; }
since=$(q parts -c "SELECT clock_timestamp()")
wait_for "a pass at the new frequency" 7 pass_after "$since"
since=$(q parts -c "SELECT clock_timestamp()")
wait_for "the pass after it" 7 pass_after "$since"
sleep 3
q parts <<'SQL'
SET ROLE tenant;
CREATE TABLE feed (created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE feed_deletes (n int);
CREATE FUNCTION count_delete() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO feed_deletes VALUES (1); RETURN OLD; END $$;
DO $$ BEGIN
  EXECUTE format('CREATE TABLE feed_soon PARTITION OF feed FOR VALUES FROM (%L) TO (%L)',
                 now() - interval '1 day 1 hour', now() - interval '1 day' + interval '3.5 seconds');
  EXECUTE format('CREATE TABLE feed_rest PARTITION OF feed FOR VALUES FROM (%L) TO (%L)',
                 now() - interval '1 day' + interval '3.5 seconds', now() + interval '1 day');
END $$;
CREATE TRIGGER count_delete AFTER DELETE ON feed_soon FOR EACH ROW EXECUTE FUNCTION count_delete();
INSERT INTO feed SELECT now() - interval '1 day 30 minutes' FROM generate_series(1, 100);
INSERT INTO feed SELECT now() FROM generate_series(1, 100);
SELECT FROM ttl_index_create('feed', 'created_at', interval '1 day', drop_partitions => 'drop');
SQL
eventually_eq "the partition is dropped once it has expired whole" 15 f parts "SELECT to_regclass('feed_soon') IS NOT NULL"
expect_eq "none of its rows was deleted one by one before" 0 "$(q parts -c "SELECT count(*) FROM feed_deletes")"
expect_eq "the other partition keeps its rows" 100 "$(q parts -c "SELECT count(*) FROM feed")"
q postgres -c "ALTER SYSTEM RESET jsonb_ttl.frequency" -c "SELECT pg_reload_conf()" >/dev/null
finish
