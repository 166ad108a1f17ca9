#!/usr/bin/env bash
# monitoring/postgres_exporter.yaml against Debian's prometheus-postgres-exporter (0.11.1):
# the exporter, started on a loopback port as a non-superuser monitoring role with
# --auto-discover-databases, scrapes two databases with jsonb_ttl (one with it in a schema of
# its own) and one without; every metric of the file is there with its type and its database /
# table labels, its values are what ttl_stats and ttl_statistics() say after a purge (rows
# deleted, runs, errors, rows set aside, the oldest expired row's age, a table the safety brake
# paused), the database without the extension fails no query, and the exporter logs no error
# about ours. A table with a TTL index, a per-row TTL and field TTLs (one whose path is 2,113
# characters) has one series per part, each with its own expire_after, its long part shortened
# (HTTP 200, pg_up 1, no series repeated, no error logged); every query of the file, and each
# statement it runs, is planned below jit_above_cost and JIT-compiles nothing, in databases
# with jsonb_ttl and without. monitoring/grafana-dashboard.json is well-formed and uses only
# metrics of the file.
source "$(dirname "$0")/lib.sh"
# E2E_EXPORTER_QUERIES: another queries file, e.g. an older one, to see what this test finds in it
QUERIES=${E2E_EXPORTER_QUERIES:-$ROOT/monitoring/postgres_exporter.yaml}
DASHBOARD=$ROOT/monitoring/grafana-dashboard.json

# The exporter: Debian's package (scripts/install-deps.sh installs it). Its own service does
# not start here (no systemd, and its /etc/default file has no DATA_SOURCE_NAME); this test
# runs its own exporter, on its own port, and stops it on exit.
missing=()
command -v prometheus-postgres-exporter >/dev/null || missing+=(prometheus-postgres-exporter)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "prometheus.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}" >/dev/null ||
    { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}" >/dev/null; }
fi
EXPORTER=$(command -v prometheus-postgres-exporter)

# (autovacuum off: the planner's statistics, which rows_never_expire reads, stand still between a
# scrape and the check of its values)
start_cluster e2e-prometheus 28880 "jsonb_ttl.frequency = 200" \
  "jsonb_ttl.max_table_fraction = 0.5" "jsonb_ttl.brake_min_rows = 100" "autovacuum = off"
EXPORTER_PORT=$((28881 + ${E2E_PORT_OFFSET:-0}))
EXPORTER_PID=
EXPORTER_LOG=$CLUSTER_DIR/exporter.log
SCRAPE=$CLUSTER_DIR/metrics.txt
stop_exporter() {
  if [ -n "$EXPORTER_PID" ]; then
    kill "$EXPORTER_PID" 2>/dev/null || true
    wait "$EXPORTER_PID" 2>/dev/null || true
    EXPORTER_PID=
  fi
}
# (replaces start_cluster's trap: the exporter goes first, by its PID, then the cluster)
trap 'status=$?; stop_exporter; if [ "${E2E_KEEP:-0}" = 1 ]; then echo "cluster kept: $CLUSTER_DIR"; else "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"; fi; exit $status' EXIT

set_guc() {  # set_guc NAME VALUE: ALTER SYSTEM + reload
  q postgres -c "ALTER SYSTEM SET $1 = '$2'" -c "SELECT pg_reload_conf()" >/dev/null
}

# The metrics of the queries file, "name type" a line: each namespace (a top-level key) joined
# with each of its columns whose usage is not LABEL.
file_metrics() {
  awk '/^[a-z_]+:$/ { ns = substr($0, 1, length($0) - 1) }
       /^    - [a-z_]+:$/ { col = $2; sub(/:$/, "", col) }
       /^ +usage:/ { u = $2; gsub(/"/, "", u); if (u != "LABEL") print ns "_" col, tolower(u) }' "$QUERIES"
}
# metric NAME DB [TABLE]: the value of NAME's series with database DB (and table TABLE) in the
# last scrape; "absent" when there is none, one value a line when there are several.
metric() {
  awk -v n="$1{" -v d="database=\"$2\"" -v t="${3+,table=\"$3\"}" '
    index($0, n) == 1 && index($0, d) && (t == "" || index($0, t)) { print $NF; found = 1 }
    END { if (!found) print "absent" }' "$SCRAPE"
}
# expect_num DESCRIPTION EXPECTED ACTUAL [TOLERANCE]: numbers equal (within TOLERANCE); the
# exporter writes large ones as 1e+06.
expect_num() {
  if awk -v e="$2" -v a="$3" -v t="${4:-0}" 'BEGIN { if (a !~ /^[-+0-9.e]+$/ || e !~ /^[-+0-9.e]+$/) exit 1;
       d = a - e; if (d < 0) d = -d; exit !(d <= t) }'; then pass "$1 ($3)"
  else fail "$1: expected [$2]${4:+ ± $4}, got [$3]"; fi
}
# (the exporter runs its queries while it answers: SCRAPED_AT is when the answer came, and TOL
# the seconds an age may be off by: 10, plus how long the scrape took)
scrape() {
  local started status
  started=$(date +%s)
  curl -sf "http://127.0.0.1:$EXPORTER_PORT/metrics" >"$SCRAPE"
  status=$?
  SCRAPED_AT=$(date +%s.%N)
  TOL=$((10 + ${SCRAPED_AT%.*} - started))
  return $status
}

echo "== two databases with jsonb_ttl (one in a schema of its own), one without"
q postgres <<'SQL'
CREATE DATABASE db_a;
CREATE DATABASE db_b;
CREATE DATABASE plain;
CREATE ROLE ttl_monitor LOGIN IN ROLE pg_monitor;
SQL
q plain -c "CREATE TABLE events (id int, doc jsonb)"
q db_a <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', interval '1 hour');
INSERT INTO events (doc) SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 60);
INSERT INTO events (doc) SELECT jsonb_build_object('at', now()) FROM generate_series(1, 5);
INSERT INTO events (doc) SELECT jsonb_build_object('x', g) FROM generate_series(1, 3) g;  -- never expire
CREATE TABLE parted (id int, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200);
SELECT FROM ttl_index_create('parted', 'at', 0);
INSERT INTO parted SELECT g, jsonb_build_object('at', CASE WHEN g % 3 = 0 THEN '2019-01-01' ELSE '2999-01-01' END)
FROM generate_series(1, 199) g;
-- a table the safety brake will pause: fresh rows for now
CREATE TABLE sessions (id int PRIMARY KEY, doc jsonb);
INSERT INTO sessions SELECT g, jsonb_build_object('seen', now()) FROM generate_series(1, 200) g;
SELECT FROM ttl_index_create('sessions', 'seen', interval '1 day');
SQL
q db_b <<'SQL'
CREATE SCHEMA ttl;
CREATE EXTENSION jsonb_ttl SCHEMA ttl;
GRANT USAGE ON SCHEMA ttl TO ttl_monitor;
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb);
SELECT FROM ttl.ttl_index_create('events', 'at', interval '10 minutes');
INSERT INTO events (doc) SELECT jsonb_build_object('at', now() - interval '1 hour') FROM generate_series(1, 40);
CREATE SCHEMA app;
CREATE TABLE app.items (doc jsonb);
SELECT FROM ttl.ttl_index_create('app.items', 'at', 0);
INSERT INTO app.items SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 25) g;
-- a name that needs quotes: labelled App.UserSessions, never "App"."UserSessions"
CREATE SCHEMA "App";
CREATE TABLE "App"."UserSessions" (doc jsonb);
SELECT FROM ttl.ttl_index_create('"App"."UserSessions"', 'at', 0);
INSERT INTO "App"."UserSessions" SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 7) g;
-- a table whose trigger refuses every delete: its expired row is set aside, its visit an error
CREATE TABLE failing (doc jsonb);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$;
CREATE TRIGGER refuse BEFORE DELETE ON failing FOR EACH ROW EXECUTE FUNCTION refuse();
SELECT FROM ttl.ttl_index_create('failing', 'at', 0);
INSERT INTO failing VALUES ('{"at": "2019-01-01"}');
SQL
purged() {
  [ "$(q db_a -c "SELECT (SELECT count(*) FROM events) || ' ' || (SELECT count(*) FROM parted)")" = "8 133" ] &&
    [ "$(q db_b -c "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM app.items)
                           + (SELECT count(*) FROM \"App\".\"UserSessions\")")" = 0 ]
}
wait_for "the worker purges both databases" 10 purged
set_aside() { [ "$(q db_b -c "SELECT rows_undeletable FROM ttl.ttl_stats WHERE table_name = 'failing'::regclass")" = 1 ]; }
wait_for "and sets the refused row aside" 5 set_aside
eventually_eq "ttl_stats counts every removal in db_a (events, parted_1, parted_2, sessions)" 5 "60 33 33 0" db_a \
  "SELECT string_agg(rows_deleted::text, ' ' ORDER BY table_name::text) FROM ttl_stats"
eventually_eq "and in db_b (App.UserSessions, app.items, events, failing)" 5 "7 25 40 0" db_b \
  "SELECT string_agg(rows_deleted::text, ' ' ORDER BY table_name::text) FROM ttl.ttl_stats"
# the statistics stand still while the exporter reads them: the worker stops
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
# the planner's statistics, from which ttl_stats estimates the rows that never expire
q db_a -c "VACUUM ANALYZE"
q db_b -c "VACUUM ANALYZE"
expect_eq "ttl_stats estimates db_a's 3 dateless rows of events (rows_never_expire)" 3 \
  "$(q db_a -c "SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'events'::regclass")"

echo "== the exporter: a non-superuser role, every database discovered, the queries file"
expect_eq "the exporter's role is no superuser, a member of pg_monitor" "0 1" \
  "$(q postgres -c "SELECT rolsuper::int || ' ' || pg_has_role('ttl_monitor', 'pg_monitor', 'MEMBER')::int FROM pg_roles WHERE rolname = 'ttl_monitor'")"
if curl -s -o /dev/null "http://127.0.0.1:$EXPORTER_PORT/"; then
  fail "port $EXPORTER_PORT is taken already"
fi
DATA_SOURCE_NAME="host=$SOCK port=$PORT user=ttl_monitor dbname=postgres sslmode=disable" \
  "$EXPORTER" --web.listen-address="127.0.0.1:$EXPORTER_PORT" --extend.query-path="$QUERIES" \
  --auto-discover-databases >"$EXPORTER_LOG" 2>&1 &
EXPORTER_PID=$!
scraped() { scrape && grep -q '^jsonb_ttl_table_runs_total{' "$SCRAPE"; }
wait_for "the exporter serves /metrics with jsonb_ttl's metrics" 15 scraped
scrape   # a second scrape: every database's connection is established by now

expect_num "pg_up" 1 "$(awk '$1 == "pg_up" { print $2 }' "$SCRAPE")"
expect_num "pg_exporter_user_queries_load_error (the file parses)" 0 \
  "$(awk -v f="filename=\"$QUERIES\"" 'index($0, "pg_exporter_user_queries_load_error{") == 1 && index($0, f) { print $NF }' "$SCRAPE")"
expect_num "pg_exporter_last_scrape_error: no query failed in any database" 0 \
  "$(awk '$1 == "pg_exporter_last_scrape_error" { print $2 }' "$SCRAPE")"
expect_eq "the exporter is connected to the database without jsonb_ttl, as ttl_monitor" 1 \
  "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'ttl_monitor' AND datname = 'plain'")"
expect_eq "no series from the databases without jsonb_ttl" 0 \
  "$(grep -c '^jsonb_ttl_[a-z_]*{[^}]*database="\(plain\|postgres\)"' "$SCRAPE" || true)"
expect_eq "no 'Error running query' in the exporter's log for our queries" 0 \
  "$(grep -c 'Error running query.*jsonb_ttl' "$EXPORTER_LOG" || true)"
expect_eq "no error of any kind in its log about jsonb_ttl" 0 "$(grep -c 'err=.*jsonb_ttl' "$EXPORTER_LOG" || true)"

echo "== each metric of the file: its type, its database and table labels"
metrics=$(file_metrics)
expect_eq "the file's namespaces" "jsonb_ttl_backlog jsonb_ttl_never_expire jsonb_ttl_pause jsonb_ttl_server jsonb_ttl_table jsonb_ttl_throttle" \
  "$(grep -E '^[a-z_]+:$' "$QUERIES" | tr -d ':' | sort | tr '\n' ' ' | sed 's/ $//')"
while read -r name type; do
  [ "$name" = jsonb_ttl_pause_info ] && continue   # only for paused tables: below
  [[ $name == jsonb_ttl_throttle_* ]] && continue   # one series per limit: below
  expect_eq "$name is a $type" "$type" "$(awk -v n="$name" '$1 == "#" && $2 == "TYPE" && $3 == n { print $4 }' "$SCRAPE")"
  case $name in
    jsonb_ttl_table_* | jsonb_ttl_backlog_*) a=$(metric "$name" db_a events) b=$(metric "$name" db_b app.items) ;;
    jsonb_ttl_never_expire_*) a=$(metric "$name" db_a events) b=$(metric "$name" db_b events) ;;
    *) a=$(metric "$name" db_a) b=$(metric "$name" db_b) ;;
  esac
  if [[ $a =~ ^[-+0-9.e]+$ && $b =~ ^[-+0-9.e]+$ ]]; then
    pass "$name: one series for db_a, one for db_b$([[ $name != jsonb_ttl_server_* ]] && echo ", each with its table")"
  else fail "$name: db_a [$a], db_b [$b]"; fi
done <<<"$metrics"
expect_eq "no jsonb_ttl_pause_info series while nothing is paused" 0 "$(grep -c '^jsonb_ttl_pause_info{' "$SCRAPE" || true)"
expect_eq "a partition is labelled with its table and its TTL table" 2 \
  "$(grep -c '^jsonb_ttl_table_runs_total{database="db_a",[^}]*,table="parted_[12]",ttl_table="parted"}' "$SCRAPE" || true)"
expect_eq "a table out of the search_path is schema-qualified, as regclass prints it" 25 \
  "$(metric jsonb_ttl_table_rows_deleted_total db_b app.items)"
expect_eq "a name that needs quotes is labelled plain: table=\"App.UserSessions\"" 7 \
  "$(metric jsonb_ttl_table_rows_deleted_total db_b App.UserSessions)"
expect_eq "and no label holds a double quote" 0 "$(grep '^jsonb_ttl' "$SCRAPE" | grep -c '\\"' || true)"

echo "== the values are ttl_stats' and ttl_statistics()'s"
# check_table DB SCHEMA TABLE: every metric of TABLE against its ttl_stats row, read now
check_table() {
  local db=$1 s=$2 t=$3 row
  row=$(q "$db" -F '|' -c "SELECT runs, rows_deleted, errors, limit_reached, last_rows_deleted, rows_undeletable,
      (skipped IS NOT NULL)::int, paused::int, extract(epoch FROM i.expire_after)::float8,
      coalesce(backlog::text, 'absent'), coalesce(rows_never_expire::text, 'absent'),
      coalesce(extract(epoch FROM to_timestamp($SCRAPED_AT) - oldest_expired), 0),
      extract(epoch FROM to_timestamp($SCRAPED_AT) - last_run_at),
      extract(epoch FROM to_timestamp($SCRAPED_AT) - last_success_at), last_run_ms / 1000
    FROM $s.ttl_stats st JOIN $s.ttl_indexes i ON i.table_name = st.ttl_table
    WHERE st.table_name = '$t'::regclass")
  IFS='|' read -r runs deleted errors limit last undeletable skipped paused expire backlog never age since success ms <<<"$row"
  local m=jsonb_ttl_table_
  expect_eq "$db $t: rows deleted, runs, errors, limit reached, last rows deleted, undeletable, skipped, paused, expire_after, backlog, never expire" \
    "$deleted $runs $errors $limit $last $undeletable $skipped $paused $expire $backlog $never" \
    "$(metric ${m}rows_deleted_total "$db" "$t") $(metric ${m}runs_total "$db" "$t") $(metric ${m}errors_total "$db" "$t") $(metric ${m}limit_reached_total "$db" "$t") $(metric ${m}last_rows_deleted "$db" "$t") $(metric ${m}rows_undeletable "$db" "$t") $(metric ${m}skipped "$db" "$t") $(metric ${m}paused "$db" "$t") $(metric ${m}expire_after_seconds "$db" "$t") $(metric jsonb_ttl_backlog_rows "$db" "$t") $(metric jsonb_ttl_never_expire_rows "$db" "$t")"
  expect_num "$db $t: oldest expired age" "$age" "$(metric ${m}oldest_expired_age_seconds "$db" "$t")" "$TOL"
  expect_num "$db $t: seconds since the last run" "$since" "$(metric ${m}seconds_since_last_run "$db" "$t")" "$TOL"
  if [ -n "$success" ]; then
    expect_num "$db $t: seconds since the last success" "$success" "$(metric ${m}seconds_since_last_success "$db" "$t")" "$TOL"
  else  # none yet: since the TTL index was created (this server started before)
    expect_num "$db $t: no success yet: seconds since the TTL index was created" \
      "$(q "$db" -c "SELECT extract(epoch FROM to_timestamp($SCRAPED_AT) - created_at) FROM $s.ttl_indexes i JOIN $s.ttl_stats st ON i.table_name = st.ttl_table WHERE st.table_name = '$t'::regclass")" \
      "$(metric ${m}seconds_since_last_success "$db" "$t")" "$TOL"
  fi
  expect_num "$db $t: last visit duration (s)" "$ms" "$(metric ${m}last_visit_duration_seconds "$db" "$t")" 0.000001
}
check_table db_a public events
check_table db_a public parted_1
check_table db_a public parted_2
check_table db_a public sessions
check_table db_b ttl events
check_table db_b ttl app.items
check_table db_b ttl failing
m=jsonb_ttl_table_
expect_eq "rows deleted are the rows that expired (db_a events, parted_1, parted_2; db_b events, app.items)" "60 33 33 40 25" \
  "$(metric ${m}rows_deleted_total db_a events) $(metric ${m}rows_deleted_total db_a parted_1) $(metric ${m}rows_deleted_total db_a parted_2) $(metric ${m}rows_deleted_total db_b events) $(metric ${m}rows_deleted_total db_b app.items)"
runs=$(metric ${m}runs_total db_a events)
if [[ $runs =~ ^[0-9]+$ ]] && [ "$runs" -ge 1 ]; then pass "runs ≥ 1 ($runs)"; else fail "runs: [$runs]"; fi
expect_eq "errors 0 and nothing undeletable on a table that purged, 0 paused" "0 0 0" \
  "$(metric ${m}errors_total db_a events) $(metric ${m}rows_undeletable db_a events) $(metric ${m}paused db_a events)"
expect_eq "the refused row: one error, one row undeletable" "1 1" \
  "$(metric ${m}errors_total db_b failing) $(metric ${m}rows_undeletable db_b failing)"
expect_num "and its age (since 2019-01-01) as the oldest expired" \
  "$(q db_b -c "SELECT extract(epoch FROM to_timestamp($SCRAPED_AT) - '2019-01-01 00:00:00+00'::timestamptz)")" \
  "$(metric ${m}oldest_expired_age_seconds db_b failing)" "$TOL"
expect_num "nothing expired left in events: oldest expired age 0" 0 "$(metric ${m}oldest_expired_age_seconds db_a events)"

IFS='|' read -r s_runs s_rows s_limit s_ms s_since <<<"$(q db_a -F '|' -c "SELECT runs, rows_deleted, limit_reached, last_pass_ms / 1000, extract(epoch FROM to_timestamp($SCRAPED_AT) - last_pass_at) FROM ttl_statistics()")"
for db in db_a db_b; do
  expect_eq "server totals read in $db: runs, rows deleted (60 + 66 + 40 + 25 + 7), limit reached" "$s_runs 198 $s_limit" \
    "$(metric jsonb_ttl_server_runs_total $db) $(metric jsonb_ttl_server_rows_deleted_total $db) $(metric jsonb_ttl_server_limit_reached_total $db)"
  expect_num "$db: last pass duration (s)" "$s_ms" "$(metric jsonb_ttl_server_last_pass_duration_seconds $db)" 0.000001
  expect_num "$db: seconds since the last pass" "$s_since" "$(metric jsonb_ttl_server_seconds_since_last_pass $db)" "$TOL"
done
expect_num "ttl_statistics() counts the same 198 rows" 198 "$s_rows"
# ttl_throttle(): one series per limit and metric, with its setting, the values of the function
for db in db_a db_b; do
  expect_eq "$db: jsonb_ttl_throttle_* (slowed, limit, slowdowns, waited) per setting, as ttl_throttle() says" \
    "$(q db_a -c "SELECT string_agg(setting || ':' || slowed::int || ':' || limit_value || ':' || slowdowns || ':' || (waited_ms / 1000), ' ' ORDER BY setting) FROM ttl_throttle()")" \
    "$(for s in jsonb_ttl.max_replica_lag jsonb_ttl.max_slot_wal_keep jsonb_ttl.max_wal_rate; do
         printf '%s' "$s"
         for m in slowed limit_value slowdowns_total waited_seconds_total; do
           printf ':%s' "$(awk -v n="jsonb_ttl_throttle_$m{" -v d="database=\"$db\"" -v st="setting=\"$s\"" \
                             'index($0, n) == 1 && index($0, d) && index($0, st) { print $NF }' "$SCRAPE")"
         done
         printf ' '
       done | sed 's/ $//')"
done

echo "== a table the safety brake pauses, one its operator pauses: paused 1, and by whom"
q db_a >/dev/null <<'SQL'
INSERT INTO sessions SELECT g, jsonb_build_object('seen', now() - interval '3 days') FROM generate_series(1001, 1800) g;
SELECT pg_sleep(1.1);
ANALYZE sessions;
SQL
expect_eq "ttl_index_pause('events') in db_b" t "$(q db_b -c "SELECT ttl.ttl_index_pause('events')")"
set_guc jsonb_ttl.enabled on
braked() { [ "$(q db_a -c "SELECT paused FROM ttl_stats WHERE table_name = 'sessions'::regclass")" = t ]; }
wait_for "the brake pauses sessions (800 of 1000 rows expired at once)" 10 braked
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
scrape
expect_eq "paused, skipped, rows deleted: 1 1 0 for sessions (the brake), 1 1 40 for db_b's events (ttl_index_pause)" "1 1 0 1 1 40" \
  "$(metric ${m}paused db_a sessions) $(metric ${m}skipped db_a sessions) $(metric ${m}rows_deleted_total db_a sessions) $(metric ${m}paused db_b events) $(metric ${m}skipped db_b events) $(metric ${m}rows_deleted_total db_b events)"
check_table db_a public sessions
check_table db_b ttl events
expect_eq "the other tables stay unpaused" "0 0 0" \
  "$(metric ${m}paused db_a events) $(metric ${m}paused db_b app.items) $(metric ${m}paused db_b failing)"
expect_eq "jsonb_ttl_pause_info is a gauge" gauge "$(awk '$1 == "#" && $2 == "TYPE" && $3 == "jsonb_ttl_pause_info" { print $4 }' "$SCRAPE")"
expect_eq "one jsonb_ttl_pause_info series for each paused table, with who paused it" \
  'jsonb_ttl_pause_info{database="db_a",part="",paused_by="brake",server="SERVER",table="sessions",ttl_table="sessions"} 1
jsonb_ttl_pause_info{database="db_b",part="",paused_by="operator",server="SERVER",table="events",ttl_table="events"} 1' \
  "$(grep '^jsonb_ttl_pause_info{' "$SCRAPE" | sed -E 's/server="[^"]*"/server="SERVER"/' | sort)"
expect_eq "ttl_stats.paused_by says the same" "brake operator" \
  "$(q db_a -c "SELECT paused_by FROM ttl_stats WHERE table_name = 'sessions'::regclass") $(q db_b -c "SELECT paused_by FROM ttl.ttl_stats WHERE table_name = 'events'::regclass")"
expect_num "pg_exporter_last_scrape_error still 0" 0 "$(awk '$1 == "pg_exporter_last_scrape_error" { print $2 }' "$SCRAPE")"

echo "== a table with a TTL index, a per-row TTL and field TTLs: one series per part"
# ttl_indexes has a row per TTL index and one per field TTL: joined by table alone, the table's
# rows came out once per field TTL, each with another expire_after, and the exporter answered
# HTTP 500 ("was collected before with the same name and label values"), pg_up lost with the rest.
# scrape_status: a scrape whatever its outcome: its HTTP status in $HTTP_STATUS, the answer in
# $SCRAPE, and the exporter's log lines since the last one in $SCRAPE_LOG
LOG_SEEN=$(wc -l <"$EXPORTER_LOG")
scrape_status() {
  local started status
  started=$(date +%s)
  status=$(curl -s -o "$SCRAPE" -w '%{http_code}' "http://127.0.0.1:$EXPORTER_PORT/metrics") || true
  SCRAPED_AT=$(date +%s.%N)
  TOL=$((10 + ${SCRAPED_AT%.*} - started))
  SCRAPE_LOG=$(tail -n +$((LOG_SEEN + 1)) "$EXPORTER_LOG")
  LOG_SEEN=$(wc -l <"$EXPORTER_LOG")
  HTTP_STATUS=${status:-none}
}
# metric_part NAME DB TABLE PART: as metric, for the series of one part, a number written in
# full (the exporter writes 2592000 as 2.592e+06)
metric_part() {
  awk -v n="$1{" -v d="database=\"$2\"" -v t=",table=\"$3\"" -v p="part=\"$4\"" '
    index($0, n) == 1 && index($0, d) && index($0, t) && index($0, p) { printf "%.15g\n", $NF; found = 1 }
    END { if (!found) print "absent" }' "$SCRAPE"
}
# scrape_is_whole WHAT: HTTP 200, pg_up 1, no series (name and labels) twice, nothing logged at
# level error or warn since the last scrape
scrape_is_whole() {
  expect_eq "$1: HTTP 200" 200 "$2"
  expect_num "$1: pg_up" 1 "$(awk '$1 == "pg_up" { print $2 }' "$SCRAPE")"
  expect_eq "$1: no series repeated (name and labels)" "" \
    "$(grep -v '^#' "$SCRAPE" | sed 's/ [^ ]*$//' | sort | uniq -d | head -3)"
  expect_num "$1: pg_exporter_last_scrape_error" 0 "$(awk '$1 == "pg_exporter_last_scrape_error" { print $2 }' "$SCRAPE")"
  expect_eq "$1: nothing logged at level error or warn" "" \
    "$(echo "$SCRAPE_LOG" | grep -E 'level=(error|warn)|err=' | cut -c1-300 | head -3)"
}
# check_parts WHAT PART=SECONDS…: accounts' series of each part, expire_after_seconds as given,
# and its other values as ttl_stats says (read as the exporter did: nothing moves, the worker is off)
check_parts() {
  local what=$1 spec part secs label row
  shift
  expect_eq "$what: one jsonb_ttl_table_runs_total series per part of accounts, $# of them" "$#" \
    "$(grep -c '^jsonb_ttl_table_runs_total{database="db_a",[^}]*,table="accounts",' "$SCRAPE" || true)"
  for spec in "$@"; do
    part=${spec%=*} secs=${spec##*=}
    # the label: the part, or past 100 characters its first 80, '...' and 32 hex digits of its SHA-256
    label=$(q db_a -c "SELECT CASE WHEN length(part) > 100 THEN left(part, 80) || '...' || left(encode(sha256(convert_to(part, 'UTF8')), 'hex'), 32) ELSE part END
                       FROM ttl_stats WHERE table_name = 'accounts'::regclass AND part = '$part'")
    row=$(q db_a -F ' ' -c "SELECT rows_deleted, runs, errors, coalesce(backlog::text, 'absent') FROM ttl_stats
                            WHERE table_name = 'accounts'::regclass AND part = '$part'")
    expect_eq "$what: part ${part:0:40}$([ ${#part} -gt 40 ] && echo "… (${#part} characters, labelled ${#label})"): expire_after_seconds $secs; rows deleted, runs, errors, backlog as ttl_stats" \
      "$secs $row" \
      "$(metric_part jsonb_ttl_table_expire_after_seconds db_a accounts "$label") $(metric_part jsonb_ttl_table_rows_deleted_total db_a accounts "$label") $(metric_part jsonb_ttl_table_runs_total db_a accounts "$label") $(metric_part jsonb_ttl_table_errors_total db_a accounts "$label") $(metric_part jsonb_ttl_backlog_rows db_a accounts "$label")"
  done
}
q db_a >/dev/null <<'SQL'
CREATE TABLE accounts (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('accounts', 'at', interval '10 minutes', row_ttl_path => 'ttl');
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '15 minutes');
SELECT ttl_field_create('accounts', 'reset.at', interval '30 days');
-- codes issued an hour ago: the worker removes them; the rows stay (at: now)
INSERT INTO accounts SELECT g, jsonb_build_object('at', now(), 'ttl', CASE WHEN g % 2 = 0 THEN 86400 END,
                                                  'otp', jsonb_build_object('code', g, 'issuedAt', now() - interval '1 hour'),
                                                  'reset', jsonb_build_object('at', now()))
FROM generate_series(1, 10) g;
SQL
# the worker visits each part once, so that each has a backlog (0) and a run
visited() {
  [ "$(q db_a -c "SELECT count(*) FILTER (WHERE runs > 0 AND backlog IS NOT NULL) || ' ' || count(*) FROM ttl_stats
                  WHERE table_name = 'accounts'::regclass")" = "$1 $1" ]
}
set_guc jsonb_ttl.enabled on
wait_for "the worker visits the 4 parts of accounts (expire_after, row_ttl, 2 field TTLs)" 10 visited 4
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
expect_eq "the worker removed the 10 expired codes, kept the rows" "10 0" \
  "$(q db_a -c "SELECT count(*) FILTER (WHERE NOT doc ? 'otp') || ' ' || count(*) FILTER (WHERE doc ? 'otp') FROM accounts")"
scrape_status
scrape_is_whole "accounts with 2 field TTLs" "$HTTP_STATUS"
check_parts "accounts" expire_after=600 row_ttl=0 "field otp.issuedAt=900" "field reset.at=2592000"

# a field TTL whose path is 2,107 characters: its part, 2,113, went whole through ts_stat, whose
# words hold 2046 bytes, and failed the queries of every table of the database (word is too long)
LONG=meta.$(printf 'k%.0s' $(seq 2100)).at
q db_a >/dev/null <<SQL
SELECT ttl_field_create('accounts', '$LONG', interval '1 hour');
INSERT INTO accounts VALUES (11, jsonb_build_object('at', now(), 'meta', jsonb_build_object('$(printf 'k%.0s' $(seq 2100))', jsonb_build_object('at', now() - interval '2 hours'))));
SQL
set_guc jsonb_ttl.enabled on
wait_for "the worker visits the 5 parts of accounts, the long field TTL's too" 10 visited 5
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
expect_eq "and removed the long field of row 11" f "$(q db_a -c "SELECT doc ? 'meta' AND doc->'meta' <> '{}' FROM accounts WHERE id = 11")"
scrape_status
scrape_is_whole "accounts with a field TTL of 2,113 characters" "$HTTP_STATUS"
check_parts "accounts" expire_after=600 row_ttl=0 "field otp.issuedAt=900" "field reset.at=2592000" "field $LONG=3600"
expect_eq "no label of jsonb_ttl's series of 116 characters or more" "" "$(grep '^jsonb_ttl' "$SCRAPE" | grep -oE '="[^"]{116,}"' | head -1 | cut -c1-80)"
expect_eq "the other tables of db_a keep their series (events)" 60 "$(metric jsonb_ttl_table_rows_deleted_total db_a events)"
# the rows that never expire, and a pause, with the long part beside them
expect_eq "ttl_index_pause('accounts')" t "$(q db_a -c "SELECT ttl_index_pause('accounts')")"
q db_a -c "ANALYZE accounts"
scrape_status
scrape_is_whole "accounts paused" "$HTTP_STATUS"
expect_eq "jsonb_ttl_pause_info for accounts' parts: as ttl_stats.paused says" \
  "$(q db_a -c "SELECT count(*) FROM ttl_stats WHERE table_name = 'accounts'::regclass AND paused")" \
  "$(grep -c '^jsonb_ttl_pause_info{database="db_a",[^}]*,table="accounts",' "$SCRAPE" || true)"
expect_eq "jsonb_ttl_never_expire_rows for accounts' parts: as ttl_stats.rows_never_expire says" \
  "$(q db_a -c "SELECT count(rows_never_expire) FROM ttl_stats WHERE table_name = 'accounts'::regclass")" \
  "$(grep -c '^jsonb_ttl_never_expire_rows{database="db_a",[^}]*,table="accounts",' "$SCRAPE" || true)"

echo "== each query of the file planned below jit_above_cost, nothing JIT-compiled"
# (each scrape JIT-compiled every query whose plan cost passed jit_above_cost: 40-150 ms a
# query, where running it takes a few: and in every database of --auto-discover-databases, with
# jsonb_ttl or without.) EXPLAIN gives the query's own plan; auto_explain, with nested
# statements, each statement it runs (the inner query ts_stat runs, the view's): their cost and
# whether any was JIT-compiled. As the superuser, who may preload auto_explain in a session.
jit_report() {  # jit_report DB: one line per query of the file: name, its cost, the costliest statement it ran, JIT
  python3 - "$QUERIES" "$1" "$PGBIN/psql" "$SOCK" "$PORT" <<'PY'
import json, os, re, subprocess, sys
path, db, psql, sock, port = sys.argv[1:]
# the file's queries, each a block scalar ("  query: |", its lines indented by 4), without a YAML module
queries, name, lines = {}, None, None
for line in open(path).read().splitlines():
    if re.match(r"^[a-z_]+:$", line):
        name, lines = line[:-1], None
    elif line == "  query: |":
        lines = queries.setdefault(name, [])
    elif lines is not None and (line.startswith("    ") or line == ""):
        lines.append(line[4:])
    else:
        lines = None
queries = {n: {"query": "\n".join(l)} for n, l in queries.items()}
def run(sql, options=""):
    return subprocess.run([psql, "-h", sock, "-p", port, "-U", "postgres", "-d", db, "-X", "-At",
                           "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True,
                          env=dict(os.environ, PGOPTIONS=options))
for name, spec in queries.items():
    q = spec["query"]
    out = run("EXPLAIN (FORMAT JSON) " + q)
    if out.returncode:
        print(name, "error", out.stderr.strip().splitlines()[0][:200]); continue
    cost = json.loads(out.stdout)[0]["Plan"]["Total Cost"]
    out = run(q, "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0"
                 " -c auto_explain.log_nested_statements=on -c auto_explain.log_level=notice"
                 " -c auto_explain.log_format=json -c client_min_messages=notice")
    if out.returncode:
        print(name, "error", out.stderr.strip().splitlines()[-1][:200]); continue
    plans = []
    for chunk in re.split(r"NOTICE:  duration: [0-9.]+ ms  plan:\n", out.stderr)[1:]:
        plans.append(json.JSONDecoder().raw_decode(chunk.strip())[0])
    worst = max(plans, key=lambda p: p["Plan"]["Total Cost"]) if plans else None
    jit = [p["Query Text"].split()[0:3] for p in plans if p.get("JIT", {}).get("Functions", 0)]
    print(name, round(cost), len(plans), round(worst["Plan"]["Total Cost"]) if worst else 0,
          "jit:" + ("none" if not jit else str(len(jit))),
          re.sub(r"\s+", " ", worst["Query Text"])[:60].replace(" ", "_") if worst else "-")
PY
}
limit=$(q db_a -c "SELECT current_setting('jit_above_cost')::float8::bigint")
expect_eq "jit_above_cost is its default, and JIT is on" "100000 on" "$limit $(q db_a -c "SHOW jit")"
for db in db_a db_b plain; do
  report=$(jit_report $db 2>&1) || true
  while read -r name cost statements worst jit text; do
    [ -n "$name" ] || continue
    if [ "$cost" = error ]; then fail "$db $name: $statements $worst $jit $text"; continue; fi
    if [ "$cost" -lt "$limit" ] && [ "$worst" -lt "$limit" ] && [ "$jit" = jit:none ]; then
      pass "$db $name: planned at $cost; $statements statement(s), the costliest $worst; no JIT"
    else
      fail "$db $name: planned at $cost, $statements statement(s), the costliest $worst ($text), $jit (jit_above_cost $limit)"
    fi
  done <<<"$report"
  expect_eq "$db: a line for each of the file's 6 queries" 6 "$(echo "$report" | grep -c .)"
done

echo "== the Grafana dashboard: well-formed, and only metrics of the file"
dash=$(python3 - "$DASHBOARD" "$(echo "$metrics" | cut -d' ' -f1 | tr '\n' ' ')" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
known = set(sys.argv[2].split())
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "query", "definition") and isinstance(v, str):
                exprs.append(v)
            elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                exprs.append(v["query"])
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(d)
used = set(re.findall(r"\bjsonb_ttl_[a-z_]+", " ".join(exprs)))
variables = {v["name"]: v.get("type") for v in d.get("templating", {}).get("list", [])}
inputs = [i.get("name") for i in d.get("__inputs", [])]
print("schema", d.get("schemaVersion", 0) >= 36)
print("variables", variables.get("database"), variables.get("table"), "DS_PROMETHEUS" in inputs or "datasource" in variables.values())
print("panels", len(d.get("panels", [])), "metrics used", len(used))
print("unknown", " ".join(sorted(used - known)) or "none")
print("unused", " ".join(sorted(known - used)) or "none")
PY
) || dash="python3 failed"
expect_eq "it parses, schemaVersion ≥ 36" "schema True" "$(echo "$dash" | grep '^schema')"
expect_eq "database and table variables (queries), a Prometheus data source input" "variables query query True" \
  "$(echo "$dash" | grep '^variables')"
expect_eq "every metric its expressions name is in the queries file" "unknown none" "$(echo "$dash" | grep '^unknown')"
expect_eq "and every metric of the file has a panel" "unused none" "$(echo "$dash" | grep '^unused')"
echo "       ($(echo "$dash" | grep '^panels'))"

pid=$EXPORTER_PID
stop_exporter
expect_eq "the exporter is stopped (the EXIT trap does it too)" gone "$(kill -0 "$pid" 2>/dev/null && echo running || echo gone)"
finish
