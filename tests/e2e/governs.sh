#!/usr/bin/env bash
# A committed definition governs the very next batch (docs/guarantees.md), and no owner stalls
# the worker. Each scenario runs while a visit is under way: the tables are rate-limited
# (max_removes_per_second), so a visit is a string of batches spread over seconds.
# - ttl_index_alter(filter), (time_zone) and ttl_index_pause committed mid-visit: no row the new
#   definition keeps is deleted afterwards (an AFTER DELETE trigger logs every deletion);
# - the safety brake counts every widening: a shortened expire_after mid-visit, a removed
#   filter, and pause → shorter expire_after → resume (an operator's resume releases nothing);
# - a pause reason is bounded, and a catalog row no jsonb can hold (a 256 MiB reason written by
#   a superuser) stops no one's purge, nor its owner's resume;
# - one owner's rate limit of 1 row/s does not hold another owner's purge;
# - a tenant's names (63 × U+0001, six bytes each in JSON) blank no one's metrics: the shipped
#   exporter queries (monitoring/postgres_exporter.yaml), run as a pg_monitor role;
# - ttl_expire_now(): a named paused table refused, the unnamed form skips paused tables, and a
#   table owner's call purges theirs beside another owner's schema they cannot use;
# - a server in binary-upgrade mode (pg_upgrade's `postgres -b`) runs no worker.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-governs 28864 "jsonb_ttl.frequency = 200" "jsonb_ttl.max_table_fraction = 0.5" \
  "jsonb_ttl.brake_min_rows = 100" "jsonb_ttl.max_workers = 8"

runs() { q "$1" -c "SELECT runs FROM ttl_statistics()"; }
# passes DB N: waits until N more passes of the worker have ended
passes() {
  local db=$1 n=$2 target
  target=$(($(runs "$db") + n))
  wait_for "$n more passes of the worker in $db" 30 eval "[ \$(runs $db) -ge $target ]" >/dev/null
}
setup_log() {  # the deletion log of table $2 in database $1
  q "$1" <<SQL
CREATE TABLE IF NOT EXISTS gone (tbl text, id int, kind text, at timestamptz DEFAULT clock_timestamp());
CREATE OR REPLACE FUNCTION log_gone() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
\$\$ BEGIN INSERT INTO gone (tbl, id, kind) VALUES (TG_TABLE_NAME, OLD.id, OLD.kind); RETURN OLD; END \$\$;
CREATE TRIGGER log_gone AFTER DELETE ON $2 FOR EACH ROW EXECUTE FUNCTION log_gone();
SQL
}

echo "1. a filter committed mid-visit governs the next batch"
q postgres -c "CREATE DATABASE filter"
q filter <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE t (id int PRIMARY KEY, kind text, doc jsonb);
INSERT INTO t SELECT g, CASE WHEN g % 10 < 3 THEN 'log' ELSE 'keep' END, '{"at": "2019-01-01"}'
FROM generate_series(1, 2000) g;
SQL
setup_log filter t
# (every row expired at once: held at creation, released by its owner)
q filter -c "SELECT FROM ttl_index_create('t', 'doc.at', 0, max_removes_per_second => 100)" -c "SELECT ttl_index_resume('t')" >/dev/null
wait_for "the rate-limited visit is under way" 10 eval '[ $(q filter -c "SELECT count(*) FROM gone") -gt 0 ]'
q filter -c "SELECT FROM ttl_index_alter('t', filter => \$\$kind = 'log'\$\$)"
kept=$(q filter -c "SELECT count(*) FROM t WHERE kind = 'keep'")
wait_for "the visit goes on under the new filter: every 'log' row goes" 30 \
  eval '[ $(q filter -c "SELECT count(*) FROM t WHERE kind = '"'log'"'") = 0 ]'
expect_eq "'keep' rows deleted after the filter committed" "$kept" "$(q filter -c "SELECT count(*) FROM t WHERE kind = 'keep'")"

echo "2. a time zone committed mid-visit governs the next batch"
q postgres -c "CREATE DATABASE zone"
q zone <<'SQL'
CREATE EXTENSION jsonb_ttl;
-- local times 30 minutes old in UTC: expired in UTC+14 (14.5 hours old there), not in UTC
CREATE TABLE t (id int PRIMARY KEY, kind text, seen timestamp);
INSERT INTO t SELECT g, 'visit', (now() AT TIME ZONE 'UTC') - interval '30 minutes' FROM generate_series(1, 2000) g;
SQL
setup_log zone t
# (every row expired at once: held at creation, released by its owner)
q zone -c "SELECT FROM ttl_index_create('t', 'seen', interval '1 hour', time_zone => 'Pacific/Kiritimati', max_removes_per_second => 100)" -c "SELECT ttl_index_resume('t')" >/dev/null
wait_for "the rate-limited visit is under way" 10 eval '[ $(q zone -c "SELECT count(*) FROM gone") -gt 0 ]'
q zone -c "SELECT FROM ttl_index_alter('t', time_zone => 'UTC')"
left=$(q zone -c "SELECT count(*) FROM t")
passes zone 10
expect_eq "rows deleted after time_zone => 'UTC' committed (none is expired in UTC)" "$left" "$(q zone -c "SELECT count(*) FROM t")"

echo "3. a pause committed mid-visit governs the next batch"
q postgres -c "CREATE DATABASE pause"
q pause <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE t (id int PRIMARY KEY, kind text, doc jsonb);
INSERT INTO t SELECT g, 'log', '{"at": "2019-01-01"}' FROM generate_series(1, 2000) g;
SQL
setup_log pause t
# (every row expired at once: held at creation, released by its owner)
q pause -c "SELECT FROM ttl_index_create('t', 'doc.at', 0, max_removes_per_second => 100)" -c "SELECT ttl_index_resume('t')" >/dev/null
wait_for "the rate-limited visit is under way" 10 eval '[ $(q pause -c "SELECT count(*) FROM gone") -gt 0 ]'
q pause -c "SELECT ttl_index_pause('t', 'archiving')" >/dev/null
left=$(q pause -c "SELECT count(*) FROM t")
passes pause 10
expect_eq "rows deleted after the pause committed" "$left|true" \
  "$(q pause -c "SELECT (SELECT count(*) FROM t) || '|' || paused FROM ttl_stats")"
q pause -c "SELECT ttl_index_resume('t')" >/dev/null
wait_for "resumed, the visit goes on" 10 eval '[ $(q pause -c "SELECT count(*) FROM t") -lt '"$left"' ]'

echo "4. the safety brake counts every widening"
q postgres -c "CREATE DATABASE brake"
q brake <<'SQL'
CREATE EXTENSION jsonb_ttl;
-- 200 rows 2 hours old, 800 rows 30 minutes old
CREATE TABLE shorter (id int PRIMARY KEY, kind text, doc jsonb);
INSERT INTO shorter SELECT g, 'log', jsonb_build_object('at', now() - CASE WHEN g <= 200 THEN interval '2 hours' ELSE interval '30 minutes' END)
FROM generate_series(1, 1000) g;
CREATE TABLE unfiltered (LIKE shorter INCLUDING ALL);
INSERT INTO unfiltered SELECT g, CASE WHEN g <= 200 THEN 'log' ELSE 'keep' END, '{"at": "2019-01-01"}' FROM generate_series(1, 1000) g;
CREATE TABLE resumed (LIKE shorter INCLUDING ALL);
INSERT INTO resumed SELECT * FROM shorter;
ANALYZE;
SQL
setup_log brake shorter
q brake -c "SELECT FROM ttl_index_create('shorter', 'doc.at', interval '1 hour', max_removes_per_second => 50)"
wait_for "the rate-limited visit of shorter is under way" 20 eval '[ $(q brake -c "SELECT count(*) FROM gone") -gt 0 ]'
q brake -c "SELECT FROM ttl_index_alter('shorter', interval '10 minutes')"
eventually_eq "expire_after shortened mid-visit (800 more rows, over 80 %): the brake pauses" 10 "true|brake" brake \
  "SELECT paused::text || '|' || coalesce(paused_by, '') FROM ttl_stats WHERE table_name = 'shorter'::regclass"
expect_eq "none of the 800 rows only the new expire_after expires was deleted" 800 \
  "$(q brake -c "SELECT count(*) FROM shorter WHERE (doc->>'at')::timestamptz > now() - interval '1 hour'")"

q brake -c "SELECT FROM ttl_index_create('unfiltered', 'doc.at', 0, filter => \$\$kind = 'log'\$\$, max_removes_per_second => 50)"
wait_for "the rate-limited visit of unfiltered is under way" 10 eval '[ $(q brake -c "SELECT count(*) FROM unfiltered") -lt 1000 ]'
q brake -c "SELECT FROM ttl_index_alter('unfiltered', filter => '')"
eventually_eq "the filter removed mid-visit (800 'keep' rows expire): the brake pauses" 10 "true|brake" brake \
  "SELECT paused::text || '|' || coalesce(paused_by, '') FROM ttl_stats WHERE table_name = 'unfiltered'::regclass"
expect_eq "no 'keep' row the old filter kept was deleted" 800 "$(q brake -c "SELECT count(*) FROM unfiltered WHERE kind = 'keep'")"

q brake -c "SELECT FROM ttl_index_create('resumed', 'doc.at', interval '1 hour')"
eventually_eq "the first backlog (200 rows) goes" 10 800 brake "SELECT count(*) FROM resumed"
eventually_eq "the brake holds again once it is gone" 5 f brake \
  "SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'resumed'::regclass"
q brake -c "SELECT ttl_index_pause('resumed')" -c "SELECT FROM ttl_index_alter('resumed', interval '10 minutes')" \
  -c "SELECT ttl_index_resume('resumed')" >/dev/null
eventually_eq "pause, shorter expire_after, resume: the operator's resume releases nothing, the brake pauses" 20 \
  "true|brake|800" brake \
  "SELECT paused::text || '|' || coalesce(paused_by, '') || '|' || (SELECT count(*) FROM resumed) FROM ttl_stats WHERE table_name = 'resumed'::regclass" \
  || true
[ "$E2E_FAILURES" = 0 ] || q brake -c "SELECT * FROM ttl_stats WHERE table_name = 'resumed'::regclass" -c "SELECT * FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'resumed'::regclass" -x

echo "5. a reason no one can read stops no one"
q postgres -c "CREATE DATABASE reasons" -c "CREATE ROLE alice LOGIN" -c "CREATE ROLE bob LOGIN"
q reasons -c "CREATE EXTENSION jsonb_ttl" -c "GRANT CREATE ON SCHEMA public TO alice, bob"
for who in alice bob; do
  as $who reasons -v ON_ERROR_STOP=1 -c "CREATE TABLE ${who}_t (id int PRIMARY KEY, doc jsonb)" \
    -c "SELECT FROM ttl_index_create('${who}_t', 'at', 0)" >/dev/null
done
expect_eq "a 2 kB reason is refused" "the reason of a pause is at most 1024 bytes, not 2048" \
  "$(outcome alice reasons "SELECT ttl_index_pause('alice_t', repeat('x', 2048))")"
as alice reasons -c "SELECT ttl_index_pause('alice_t', 'archiving first')" >/dev/null
# what 0.3.0 let an owner write, or a superuser may write by hand: more than jsonb can hold
q reasons -c "UPDATE jsonb_ttl_internal.ttl_index SET paused_reason = repeat('x', 268435456) WHERE table_oid = 'alice_t'::regclass"
# (fewer rows than jsonb_ttl.brake_min_rows: the safety brake lets tables this small go whole)
as bob reasons -c "INSERT INTO bob_t SELECT g, '{\"at\": 1}' FROM generate_series(1, 90) g"
eventually_eq "bob's expired rows go while alice's catalog row holds a 256 MiB reason" 10 0 reasons "SELECT count(*) FROM bob_t"
expect_eq "alice's own resume works" "ok" "$(outcome alice reasons "SELECT ttl_index_resume('alice_t')")"

echo "6. one owner's rate limit holds no one else"
q postgres -c "CREATE DATABASE rates"
q rates <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE slow (id int PRIMARY KEY, kind text, doc jsonb);
INSERT INTO slow SELECT g, 'log', '{"at": 1}' FROM generate_series(1, 1000) g;
CREATE TABLE other (LIKE slow);
SELECT FROM ttl_index_create('slow', 'doc.at', 0, max_removes_per_second => 1);
SELECT ttl_index_resume('slow');  -- (all of it expired at once: held at creation)
SELECT FROM ttl_index_create('other', 'doc.at', 0);
SQL
wait_for "the 1 row/s table's first batch went" 10 eval '[ $(q rates -c "SELECT count(*) FROM slow") -lt 1000 ]'
q rates -c "INSERT INTO other SELECT g, 'log', '{\"at\": 1}' FROM generate_series(1, 90) g"
start=$(now_ms)
wait_for "another table's expired rows go within two passes while the 1 row/s table waits its turn" 2 \
  eval '[ $(q rates -c "SELECT count(*) FROM other") = 0 ]'
echo "  (other drained $(($(now_ms) - start)) ms after its insert; slow has $(q rates -c "SELECT count(*) FROM slow") rows left)"
expect_eq "and the slow table keeps its rate: at most 2 batches of 100 in its first seconds" t \
  "$(q rates -c "SELECT count(*) >= 800 FROM slow")"

echo "7. a tenant's names blank no one's metrics"
# the query of namespace $1 in the shipped exporter file
exporter_query() {
  awk -v ns="$1:" '$0 == ns { on = 1; next } on && /^  query: \|/ { q = 1; next }
                   on && q && /^  metrics:/ { exit } on && q { sub(/^    /, ""); print }' "${EXPORTER_FILE:-$ROOT/monitoring/postgres_exporter.yaml}"
}
q postgres -c "CREATE ROLE monitor LOGIN IN ROLE pg_monitor" -c "CREATE ROLE tenant LOGIN"
q reasons -c "GRANT CREATE ON DATABASE reasons TO tenant"
as tenant reasons -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT format('CREATE SCHEMA %I', repeat(chr(1), 63)) \gexec
SELECT format('CREATE TABLE %I.%I (id int, doc jsonb)', repeat(chr(1), 63), repeat(chr(1), 63)) \gexec
SELECT format('SELECT FROM ttl_index_create(%L, %L, 0)', quote_ident(repeat(chr(1), 63)) || '.' || quote_ident(repeat(chr(1), 63)), 'at') \gexec
SQL
out=$(exporter_query jsonb_ttl_table | as monitor reasons -v ON_ERROR_STOP=1 -f - 2>&1)
expect_eq "jsonb_ttl_table as pg_monitor: every TTL table's series, bob's among them" "1|3" \
  "$(echo "$out" | awk -F'|' '$2 == "bob_t" { b++ } { n++ } END { print b + 0 "|" n + 0 }')"
for ns in jsonb_ttl_backlog jsonb_ttl_never_expire jsonb_ttl_pause; do
  expect_eq "$ns as pg_monitor: no error" "" "$(exporter_query $ns | as monitor reasons -v ON_ERROR_STOP=1 -f - 2>&1 | grep ERROR || true)"
done

echo "8. ttl_expire_now as an operator types it"
q postgres -c "CREATE DATABASE now_db" -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
q now_db -c "CREATE EXTENSION jsonb_ttl" -c "GRANT CREATE ON DATABASE now_db TO alice, bob"
for who in alice bob; do
  as $who now_db -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE SCHEMA ${who}_s;
CREATE TABLE ${who}_s.t (id int, doc jsonb);
INSERT INTO ${who}_s.t SELECT g, '{"at": 1}' FROM generate_series(1, 50) g;
SELECT FROM ttl_index_create('${who}_s.t', 'at', 0);
SQL
done
expect_eq "alice's ttl_expire_now() purges her table beside bob's schema she cannot use" "ok|50" \
  "$(outcome alice now_db "SELECT ttl_expire_now()")|$(q now_db -c "SELECT count(*) FROM bob_s.t")"
as bob now_db -c "SELECT ttl_index_pause('bob_s.t')" >/dev/null
expect_eq "the superuser's ttl_expire_now() skips bob's paused table" "0|50" \
  "$(q now_db -c "SELECT ttl_expire_now()")|$(q now_db -c "SELECT count(*) FROM bob_s.t")"
expect_eq "a named paused table is refused" "the TTL index of bob_s.t is paused" \
  "$(outcome bob now_db "SELECT ttl_expire_now('bob_s.t')")"
q postgres -c "ALTER SYSTEM RESET jsonb_ttl.enabled" -c "SELECT pg_reload_conf()" >/dev/null

echo "9. no worker in binary-upgrade mode (pg_upgrade)"
"$ROOT/scripts/cluster.sh" stop "$CLUSTER"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w -o "-b" start >/dev/null
q rates -c "INSERT INTO other SELECT g, 'log', '{\"at\": 1}' FROM generate_series(1, 90) g"
sleep 1.5  # 7 of the worker's frequencies: a worker would have drained it
expect_eq "in binary-upgrade mode: no launcher, no worker, nothing deleted" "0|90" \
  "$(q rates -c "SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'jsonb_ttl%') || '|' || (SELECT count(*) FROM other)")"
"$ROOT/scripts/cluster.sh" stop "$CLUSTER"
"$ROOT/scripts/cluster.sh" start "$CLUSTER" "$PORT"
eventually_eq "started normally again, the worker purges them" 10 0 rates "SELECT count(*) FROM other"
finish
