#!/usr/bin/env bash
# The options of ttl_index_create with the worker running:
# - filter: only matching rows expire, read as the owner, and no search_path redirects it;
# - row_ttl_path: each row expires at its own time, or at expire_after, or never;
# - touch: a row written lately stays, an idle one goes;
# - hide_expired: readers stop seeing a row when it expires, before the worker can delete it;
# - build => false: writes keep flowing while a 1M-row table's TTL index is built
#   (OPTIONS_ROWS rows), where the default CREATE INDEX stops them; the worker leaves the
#   table alone until the index is valid, then purges it.
source "$(dirname "$0")/lib.sh"
ROWS=${OPTIONS_ROWS:-1000000}
start_cluster e2e-options 28847 "jsonb_ttl.frequency = 100" "log_min_messages = log"

q postgres -c "CREATE DATABASE app"
q app <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE tenant LOGIN;
GRANT CREATE ON SCHEMA public TO tenant;
GRANT CREATE ON DATABASE app TO tenant;
SQL

echo "filter"
q app <<'SQL'
SET ROLE tenant;
CREATE TABLE cache (id int, kind text, doc jsonb);
-- the owner's IMMUTABLE function in the filter says who evaluates it
CREATE FUNCTION is_disposable(kind text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS
$$ BEGIN RAISE LOG 'e2e-options: filter evaluated by %', current_user; RETURN kind <> 'account'; END $$;
SELECT FROM ttl_index_create('cache', 'doc.at', 0, filter => 'public.is_disposable(kind)');
-- the attack: an operator = (text, text) that is always true, ahead of pg_catalog in the
-- owner's search_path; a filter written with a bare = would pick it up as the owner
CREATE SCHEMA evil;
CREATE FUNCTION evil.yes(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.yes);
RESET ROLE;
ALTER ROLE tenant SET search_path = evil, pg_catalog, public;
SET ROLE tenant;
CREATE TABLE visits (id int, kind text, doc jsonb);
SELECT FROM ttl_index_create('visits', 'doc.at', 0, filter => $$kind = 'guest'$$);
INSERT INTO cache SELECT g, CASE WHEN g % 2 = 0 THEN 'account' ELSE 'page' END,
                         '{"at": "2019-01-01"}' FROM generate_series(1, 1000) g;
INSERT INTO visits SELECT g, CASE WHEN g % 2 = 0 THEN 'member' ELSE 'guest' END,
                          '{"at": "2019-01-01"}' FROM generate_series(1, 1000) g;
SQL
eventually_eq "the worker removes the matching rows only" 10 "500 account" app \
  "SELECT count(*) || ' ' || string_agg(DISTINCT kind, ',') FROM cache"
eventually_eq "a bare = in the filter does not become the owner's operator" 10 "500 member" app \
  "SELECT count(*) || ' ' || string_agg(DISTINCT kind, ',') FROM visits"
expect_eq "the filter's function ran as the owner, never as the worker's superuser" "tenant" \
  "$(grep -o 'e2e-options: filter evaluated by [a-z]*' "$CLUSTER_DIR/server.log" | awk '{print $NF}' | sort -u | paste -sd,)"

echo "touch"
q app <<'SQL'
SET ROLE tenant;
CREATE TABLE sessions (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('sessions', 'lastWrite', interval '2 seconds', touch => true);
INSERT INTO sessions VALUES (1, '{"user": "active"}'), (2, '{"user": "idle"}');
SQL
# the active session is written every 0.3 s for 4 s; the idle one never again
for _ in $(seq 1 13); do
  q app -c "UPDATE sessions SET doc = doc || '{\"clicks\": 1}' WHERE id = 1"
  sleep 0.3
done
expect_eq "after 4 s the idle session is gone, the active one stays" "active" \
  "$(q app -c "SELECT string_agg(doc->>'user', ',') FROM sessions")"
eventually_eq "once idle for 2 s the active one goes too" 10 0 app "SELECT count(*) FROM sessions"

echo "the attack: hostile names through the superuser's event trigger paths"
# RENAME COLUMN makes the event trigger (SECURITY DEFINER) write the touch trigger and the
# filter again as a superuser, and DROP INDEX makes it drop the trigger and policies: names
# must stay names
q app <<'SQL'
SET ROLE tenant;
CREATE TABLE canary (id int);
CREATE TABLE "evil'); DROP TABLE canary; --" ("at'); DROP TABLE canary; --" jsonb);
SELECT FROM ttl_index_create($t$public."evil'); DROP TABLE canary; --"$t$, $p$"at'); DROP TABLE canary; --".x$p$,
                             interval '1 day', touch => true, hide_expired => true,
                             filter => $f$"at'); DROP TABLE canary; --" ? 'x'$f$);
ALTER TABLE "evil'); DROP TABLE canary; --" RENAME COLUMN "at'); DROP TABLE canary; --" TO "b"")); DROP TABLE canary; --";
INSERT INTO "evil'); DROP TABLE canary; --" VALUES ('{}');
SQL
expect_eq "the filter names the renamed column" t \
  "$(q app -c "SELECT filter_sql LIKE '%\"b\"\")); DROP TABLE canary; --\" OPERATOR(pg_catalog.?)%' FROM jsonb_ttl_internal.ttl_index WHERE table_oid = '\"evil''); DROP TABLE canary; --\"'::regclass")"
expect_eq "the renamed column is touched, and the canary lives" "t t" \
  "$(q app -c "SELECT (\"b\"\")); DROP TABLE canary; --\" -> 'x') IS NOT NULL FROM \"evil'); DROP TABLE canary; --\"") $(q app -c "SELECT to_regclass('canary') IS NOT NULL")"
q app -c "SET ROLE tenant" -c "DROP INDEX \"evil'); DROP TABLE canary; --_ttl_idx\""
expect_eq "DROP INDEX took its trigger and policies along, and the canary lives" "0 0 t" \
  "$(q app -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = '\"evil''); DROP TABLE canary; --\"'::regclass") $(q app -c "SELECT count(*) FROM pg_policy WHERE polrelid = '\"evil''); DROP TABLE canary; --\"'::regclass") $(q app -c "SELECT to_regclass('canary') IS NOT NULL")"

echo "row_ttl_path"
q app <<'SQL'
SET ROLE tenant;
CREATE TABLE items (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('items', 'ts', interval '3 seconds', row_ttl_path => 'ttl');
INSERT INTO items VALUES
  (1, jsonb_build_object('ts', now(), 'ttl', 1)),     -- its own second
  (2, jsonb_build_object('ts', now())),               -- expire_after: 3 s
  (3, jsonb_build_object('ts', now(), 'ttl', -1)),    -- never
  (4, jsonb_build_object('ts', now(), 'ttl', 3600));  -- its own hour
SQL
start=$(now_ms)
left="SELECT string_agg(id::text, ',' ORDER BY id) FROM items"
eventually_eq "the row with a TTL of 1 s goes first" 5 "2,3,4" app "$left"
first=$(($(now_ms) - start))
eventually_eq "then the row that falls back to expire_after (3 s)" 8 "3,4" app "$left"
expect_eq "in that order, the first after about 1 s" t "$([ $first -lt 2500 ] && echo t || echo "f: $first ms")"
sleep 1
expect_eq "the row with -1 and the one with an hour stay; ttl_stats counts each part" "3,4 expire_after:1,row_ttl:1" \
  "$(q app -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM items") $(q app -c "SELECT string_agg(part || ':' || rows_deleted, ',' ORDER BY part) FROM ttl_stats WHERE table_name = 'items'::regclass")"
# two more rows with a second of their own, one of which its owner's trigger will not let go
q app <<'SQL' >/dev/null
SET ROLE tenant;
CREATE FUNCTION keep_five() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'row 5 is kept'; END $$;
CREATE TRIGGER keep_five BEFORE DELETE ON items FOR EACH ROW WHEN (OLD.id = 5) EXECUTE FUNCTION keep_five();
INSERT INTO items VALUES (5, jsonb_build_object('ts', now(), 'ttl', 1)), (6, jsonb_build_object('ts', now(), 'ttl', 1));
SQL
eventually_eq "each part has its own oldest_expired (the kept row's expiry) and counts (row 6)" 8 \
  "expire_after:1:,row_ttl:2:true" app \
  "SELECT string_agg(part || ':' || rows_deleted || ':' || coalesce((oldest_expired BETWEEN now() - interval '1 minute' AND now())::text, ''), ',' ORDER BY part)
   FROM ttl_stats WHERE table_name = 'items'::regclass"
q app -c "DROP TRIGGER keep_five ON items" -c "DELETE FROM items WHERE id = 5" >/dev/null

echo "hide_expired"
q app <<'SQL'
CREATE ROLE reader LOGIN;
SET ROLE tenant;
CREATE TABLE offers (id int PRIMARY KEY, doc jsonb);
GRANT SELECT ON offers TO reader;
SELECT FROM ttl_index_create('offers', 'until', 0, hide_expired => true);
INSERT INTO offers VALUES (1, jsonb_build_object('until', now() + interval '1.5 seconds')),
                          (2, '{"until": "2999-01-01"}');
SQL
reader_sees() { q app -c "SET ROLE reader" -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM offers"; }
expect_eq "before it expires a reader sees the offer" "1,2" "$(reader_sees)"
# a transaction holds the offer's row lock, so the worker (SKIP LOCKED) cannot delete it yet
q app -c "BEGIN" -c "SELECT FROM offers WHERE id = 1 FOR UPDATE" -c "SELECT pg_sleep(4)" -c "COMMIT" >/dev/null &
locker=$!
sleep 2.5
expect_eq "once it expires, readers no longer see it, though the worker could not delete it yet" "2 2" \
  "$(q app -c "SELECT count(*) FROM offers") $(reader_sees)"
wait $locker
eventually_eq "then the worker deletes it" 10 0 app "SELECT count(*) FROM offers WHERE id = 1"

echo "build => false on a table of $ROWS rows"
q app <<SQL
CREATE TABLE big (id bigserial PRIMARY KEY, doc jsonb, written_at timestamptz);
-- every row expired a year ago, so the worker would start at once
INSERT INTO big (doc) SELECT jsonb_build_object('at', now() - interval '1 year') FROM generate_series(1, $ROWS);
CREATE TABLE big_copy AS SELECT * FROM big;
VACUUM ANALYZE big, big_copy;
SQL
# a writer that inserts rows one after another for SECONDS seconds into TABLE, each stamped with
# the time its INSERT ran; the largest gap between two rows is how long writes were stopped
writer() {
  local table=$1 seconds=$2
  "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres -n -c 1 -T "$seconds" app \
    -f <(echo "INSERT INTO $table (doc, written_at) VALUES ('{\"at\": \"2999-01-01\"}', clock_timestamp());") \
    >/dev/null 2>&1
}
gap_ms() {
  q app -c "SELECT coalesce(round(extract(epoch FROM max(gap)) * 1000), -1) FROM (
              SELECT written_at - lag(written_at) OVER (ORDER BY written_at) AS gap
              FROM $1 WHERE written_at IS NOT NULL) g"
}

q app -c "SELECT FROM ttl_index_create('big', 'at', interval '1 day', build => false)"
sleep 1
expect_eq "until its index is built the worker leaves the table alone, and ttl_stats says why" "$ROWS t" \
  "$(q app -c "SELECT count(*) FROM big") $(q app -c "SELECT rows_deleted = 0 AND last_error LIKE '%big_ttl_idx is missing or not valid%' FROM ttl_stats WHERE table_name = 'big'::regclass")"
writer big 12 &
writer_pid=$!
sleep 1
start=$(now_ms)
q app <<<"SELECT unnest(build_sql) FROM ttl_index_create('big', 'at', interval '1 day') \gexec"
build_ms=$(($(now_ms) - start))
wait $writer_pid
concurrent_gap=$(gap_ms big)
echo "  build => false: the concurrent build took $build_ms ms; writes stopped for at most $concurrent_gap ms"

# the control: the default build, CREATE INDEX, on the same rows
writer big_copy 12 &
writer_pid=$!
sleep 1
start=$(now_ms)
q app -c "SELECT FROM ttl_index_create('big_copy', 'at', interval '1 day')"
plain_ms=$(($(now_ms) - start))
wait $writer_pid
plain_gap=$(gap_ms big_copy)
echo "  default build: CREATE INDEX took $plain_ms ms; writes stopped for $plain_gap ms"
expect_eq "the default CREATE INDEX stops writes for most of its build (the control)" t \
  "$([ "$plain_gap" -ge $((plain_ms / 2)) ] && echo t || echo "f: $plain_gap ms of $plain_ms")"
expect_eq "the concurrent build never stops writes for long (< 1 s, < a quarter of the build)" t \
  "$([ "$concurrent_gap" -ge 0 ] && [ "$concurrent_gap" -lt 1000 ] && [ "$concurrent_gap" -lt $((build_ms / 4)) ] && echo t || echo "f: $concurrent_gap ms of $build_ms")"
expect_eq "the index is valid, and ttl_index_create has nothing left to run" "t " \
  "$(q app -c "SELECT indisvalid FROM pg_index WHERE indexrelid = 'big_ttl_idx'::regclass") $(q app -c "SELECT build_sql FROM ttl_index_create('big', 'at', interval '1 day')")"
eventually_eq "then the worker purges the expired rows, and keeps the new ones" 120 0 app \
  "SELECT count(*) FROM big WHERE written_at IS NULL"

finish
