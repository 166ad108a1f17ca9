#!/usr/bin/env bash
# make bench, the steady case (issue 24): what a PostgreSQL user runs instead of jsonb_ttl today,
# each side in its own run on a fresh cluster, under the same steady load.
#   bench/steady.sh [--seconds D] [--sides a,b,...] [--rounds K]   (bench/run.sh --only steady runs it)
#     --seconds D  the measured window of each side (default 120; STEADY_SECONDS)
#     --sides      a comma-separated subset of the sides below, in that order (default: all)
#     --rounds K   runs the sides K times, each round's order turned by one (default 1); then
#                  prints each side's median and spread, and each jsonb_ttl side's ratios of
#                  medians against its baseline (the loop at the same period; pg_partman)
# Environment: STEADY_RATE (rows inserted a second, default 10000), STEADY_TTL (seconds a row
# lives, default 100: with the rate, about 1M live rows), STEADY_WARMUP (seconds of load before
# the window, default 30), STEADY_TPCB (seconds of pgbench TPC-B after it, default 60),
# STEADY_PORT (default 28818). About (80 + D + TPCB) s a side: ~33 minutes for all eight.
# STEADY_STATEMENTS=1: pg_stat_statements (track = all) on every cluster, and after each jsonb_ttl
# side the worker's statements by total time (where a pass's time goes; its overhead is on
# every side, so compare ratios only within such a run).
#
# The table, the same on every side (partitioned on the last two):
#   events (id bigint GENERATED ALWAYS AS IDENTITY, created_at timestamptz NOT NULL, doc jsonb
#           NOT NULL), doc ~200 bytes: {"createdAt": <created_at>, "user", "kind", "path", "payload"}
# filled first with TTL × RATE rows dated over the last TTL seconds (VACUUM ANALYZEd), then
# STEADY_RATE rows a second inserted by pgbench (-c 2, --rate RATE/100, each transaction an
# INSERT … SELECT of 100 rows dated now()) for the whole run. Each side has one index, the one it
# deletes through. The sides:
#   ttl_json_10s    jsonb_ttl on the JSON path: ttl_index_create('events', 'createdAt',
#                   interval 'TTL seconds'), jsonb_ttl.frequency = 10 s, every other setting default
#   ttl_json_1s     the same, jsonb_ttl.frequency = 1 s
#   ttl_column_10s  jsonb_ttl on the timestamptz column: ttl_index_create('events', 'created_at',
#                   interval 'TTL seconds'), frequency 10 s
#   cron_1min       CREATE INDEX ON events (created_at); pg_cron (Debian's postgresql-15-cron,
#                   1.4: minutes at best) running every minute
#                   DELETE FROM events WHERE created_at < now() - interval 'TTL seconds'
#   loop_10s        the same index and DELETE from one psql session, `\watch 10`
#   loop_1s         the same, `\watch 1`
#   ttl_partitions  events PARTITION BY RANGE (created_at), 10-second partitions made ahead for
#                   the whole run by pg_partman (create_parent(..., 'native', '10 seconds')), no
#                   maintenance; ttl_index_create('events', 'created_at', interval 'TTL seconds',
#                   drop_partitions => 'drop'), frequency 10 s
#   partman_10s     the same partitions, CREATE INDEX ON events (created_at), pg_partman's
#                   retention (part_config.retention = 'TTL seconds', retention_keep_table =
#                   false): SELECT partman.drop_partition_time('public.events') `\watch 10` (the
#                   retention step of run_maintenance(), alone: no partition is made meanwhile)
# Per side, in the window (after a CHECKPOINT and STEADY_WARMUP s of load):
#   expired age     how long the oldest row still present had been expired, sampled every 0.1 s
#                   (SELECT min(<the index's key>) FROM events, through the index): p99 and max
#   size            pg_total_relation_size of the table (all partitions), with its indexes, at the
#                   end of the window
#   WAL             bytes written in the window by the whole server, per minute (the inserts are
#                   the same on every side: the differences are the deleting)
#   deleter CPU     user + system CPU seconds per minute of the deleting process: the jsonb_ttl
#                   worker or the psql session's backend (/proc/PID/schedstat: nanoseconds on a CPU,
#                   where /proc/PID/stat counts 10 ms ticks); pg_cron's job runs
#                   each in a new backend, counted by log_statement_stats of the role the job
#                   runs as (the statement's CPU: its connection's start is left out)
#   autovac CPU     CPU seconds per minute of autovacuum and autoanalyze (log_autovacuum_min_duration = 0)
#   insert p99      latency of the load's transactions (100 rows each) in the window, ms
#   TPC-B tps       then, with the load and the deleting still running, pgbench -b tpcb-like
#                   (scale 10, -c 2 -j 2, unthrottled) for STEADY_TPCB s
# Settings of every cluster: fsync on, shared_buffers 2GB, max_wal_size 16GB, checkpoint_timeout
# 1h (one checkpoint, before the load starts), jit off, autovacuum on (defaults).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PGBIN=$("$PG_CONFIG" --bindir)
PORT=${STEADY_PORT:-28818}
RATE=${STEADY_RATE:-10000}
TTL=${STEADY_TTL:-100}
WINDOW=${STEADY_SECONDS:-120}
WARMUP=${STEADY_WARMUP:-30}
TPCB=${STEADY_TPCB:-60}
statements_conf=()
[ -z "${STEADY_STATEMENTS:-}" ] || statements_conf=("shared_preload_libraries = 'jsonb_ttl, pg_cron, pg_stat_statements'" "pg_stat_statements.track = all")
ALL=ttl_json_10s,ttl_json_1s,ttl_column_10s,cron_1min,loop_10s,loop_1s,ttl_partitions,partman_10s
SIDES=$ALL
ROUNDS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) WINDOW=$2; shift 2 ;;
    --sides) SIDES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --scale) shift 2 ;;  # bench/run.sh passes it: the steady case keeps its rates
    *) echo "usage: $0 [--seconds D] [--sides a,b,...] [--rounds K]" >&2; exit 2 ;;
  esac
done
cd "$ROOT"

# pg_cron and pg_partman for the baselines: Debian's packages of the server's major
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
need=()
for p in "postgresql-$major-cron" "postgresql-$major-partman"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "steady: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

NAME=steady
DIR=$(scripts/cluster.sh dir "$NAME")
WORK=$(mktemp -d /tmp/jsonb_ttl-steady.XXXXXX)
chmod 777 "$WORK"
trap 'touch "$WORK/stop"; sleep 1.5; scripts/cluster.sh destroy "$NAME"; rm -rf "$WORK"' EXIT
psql() { "$PGBIN/psql" -h "$DIR/sock" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
db() { PGOPTIONS="-c client_min_messages=warning" psql -d bench -At "$@"; }
pgbench() { "$PGBIN/pgbench" -h "$DIR/sock" -p "$PORT" -U postgres "$@"; }
cpu_of() {  # cpu_of PID: seconds on a CPU so far (the scheduler's nanoseconds, not 10 ms ticks)
  awk '{printf "%.6f", $1 / 1e9}' "/proc/$1/schedstat" 2>/dev/null || echo 0
}
per_min() { awk -v a="$1" -v s="$WINDOW" 'BEGIN {printf "%.3f", a * 60 / s}'; }

DOC="jsonb_build_object('createdAt', ts, 'user', 'user-' || (random() * 100000)::int, 'kind', 'page_view',
       'path', '/products/' || (random() * 5000)::int, 'payload', md5(random()::text) || md5(random()::text))"
cat >"$WORK/insert.sql" <<EOF
INSERT INTO events (created_at, doc) SELECT ts, $DOC FROM (SELECT now() AS ts FROM generate_series(1, 100)) g;
EOF

# side NAME: one run, printing one line of figures
side() {
  local name=$1 frequency=10000 key=created_at partitioned=false
  case "$name" in
    ttl_json_1s) frequency=1000 ;;
    ttl_partitions|partman_10s) partitioned=true ;;
  esac
  scripts/cluster.sh destroy "$NAME"
  rm -f "$WORK/stop"
  scripts/cluster.sh start "$NAME" "$PORT" "fsync = on" "shared_buffers = '2GB'" "max_wal_size = '16GB'" \
    "checkpoint_timeout = '1h'" "jit = off" "log_autovacuum_min_duration = 0" \
    "shared_preload_libraries = 'jsonb_ttl, pg_cron'" "cron.database_name = 'bench'" \
    "cron.host = '$DIR/sock'" "jsonb_ttl.frequency = $frequency" "${statements_conf[@]}"
  psql -d postgres -c "CREATE DATABASE bench"
  [ -z "${STEADY_STATEMENTS:-}" ] || db -c "CREATE EXTENSION pg_stat_statements"
  pgbench -i -q -s 10 bench >/dev/null 2>&1
  if $partitioned; then
    db -c "CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
             PARTITION BY RANGE (created_at)" \
       -c "CREATE SCHEMA partman" -c "CREATE EXTENSION pg_partman SCHEMA partman" \
       -c "SELECT partman.create_parent('public.events', 'created_at', 'native', '10 seconds',
             p_premake := $(((WARMUP + WINDOW + TPCB + 120) / 10)), p_start_partition := (now() - interval '$((TTL + 60)) seconds')::text,
             p_jobmon := false)" >/dev/null
  else
    db -c "CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY, created_at timestamptz NOT NULL, doc jsonb NOT NULL)"
  fi
  db -c "INSERT INTO events (created_at, doc)
           SELECT ts, $DOC FROM (SELECT now() - (i / $RATE.0) * interval '1 second' AS ts
                                 FROM generate_series(1, $((RATE * TTL))) i) g" \
     -c "VACUUM ANALYZE events"
  local pid_query="SELECT pid FROM pg_stat_activity WHERE application_name = 'steady_deleter'"
  local watcher=""
  case "$name" in
    ttl_json_*)
      db -c "CREATE EXTENSION jsonb_ttl" -c "SELECT ttl_index_create('events', 'createdAt', interval '$TTL seconds')" >/dev/null
      pid_query="SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'bench'" ;;
    ttl_column_10s)
      db -c "CREATE EXTENSION jsonb_ttl" -c "SELECT ttl_index_create('events', 'created_at', interval '$TTL seconds')" >/dev/null
      pid_query="SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'bench'" ;;
    ttl_partitions)
      db -c "CREATE EXTENSION jsonb_ttl" \
         -c "SELECT ttl_index_create('events', 'created_at', interval '$TTL seconds', drop_partitions => 'drop')" >/dev/null
      pid_query="SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'bench'" ;;
    cron_1min)
      db -c "CREATE INDEX ON events (created_at)" -c "CREATE EXTENSION pg_cron" \
         -c "CREATE ROLE purger LOGIN" -c "GRANT SELECT, DELETE ON events TO purger" \
         -c "ALTER ROLE purger SET log_statement_stats = on" \
         -c "SELECT cron.schedule('* * * * *', \$\$DELETE FROM events WHERE created_at < now() - interval '$TTL seconds'\$\$)" \
         -c "UPDATE cron.job SET username = 'purger'" >/dev/null
      pid_query="" ;;
    loop_*)
      db -c "CREATE INDEX ON events (created_at)"
      local every=${name#loop_}; every=${every%s}
      watcher="DELETE FROM events WHERE created_at < now() - interval '$TTL seconds' \\watch $every" ;;
    partman_10s)
      db -c "CREATE INDEX ON events (created_at)" \
         -c "UPDATE partman.part_config SET retention = '$TTL seconds', retention_keep_table = false,
               retention_keep_index = false WHERE parent_table = 'public.events'"
      watcher="SELECT partman.drop_partition_time('public.events') \\watch 10" ;;
  esac
  # the key the sampler reads through the side's index
  key=$(db -c "SELECT pg_get_indexdef(i.indexrelid, 1, true) FROM pg_index i WHERE i.indrelid = 'events'::regclass")
  if [ -n "$watcher" ]; then
    echo "$watcher" | PGAPPNAME=steady_deleter psql -d bench >/dev/null 2>"$WORK/watcher.err" &
    local watcher_pid=$!
  fi
  db -c "CHECKPOINT"  # before the load: the window has the same checkpoint state on every side
  pgbench -n -f "$WORK/insert.sql" -c 2 -j 2 --rate $((RATE / 100)) -T $((WARMUP + WINDOW + TPCB + 10)) \
    -l --log-prefix "$WORK/txlog" bench >"$WORK/insert.out" 2>&1 &
  local load_pid=$!
  sleep "$WARMUP"

  # the window
  local t0 lsn0 log0 pid="" cpu0=0
  t0=$(date +%s.%N)
  lsn0=$(db -c "SELECT pg_current_wal_lsn()")
  log0=$(wc -l <"$DIR/server.log")
  local statements=""  # STEADY_STATEMENTS: the worker's statements of the window are counted
  [ -n "${STEADY_STATEMENTS:-}" ] && [[ $name == ttl_* ]] && statements=on
  [ -z "$statements" ] || db -c "SELECT pg_stat_statements_reset()" -c "SELECT runs FROM ttl_statistics()" >"$WORK/runs0"
  [ -n "$pid_query" ] && pid=$(db -c "$pid_query" | head -1)
  [ -n "$pid" ] && cpu0=$(cpu_of "$pid")
  (while [ ! -e "$WORK/stop" ] && sleep 0.1; do
     echo "SELECT greatest(0, extract(epoch FROM now() - min($key)) - $TTL) FROM events WHERE $key IS NOT NULL;"
   done) | psql -d bench -At >"$WORK/samples" &
  local sampler=$!
  sleep "$WINDOW"
  local lsn1 cpu1=0 log1 t1
  lsn1=$(db -c "SELECT pg_current_wal_lsn()")
  t1=$(date +%s.%N)
  [ -n "$pid" ] && cpu1=$(cpu_of "$pid")
  local pid_after=""
  [ -n "$pid_query" ] && pid_after=$(db -c "$pid_query" | head -1)
  log1=$(wc -l <"$DIR/server.log")
  touch "$WORK/stop"; wait "$sampler" || true
  if [ -n "$statements" ]; then
    # (the load's and the age sampler's statements left out: what remains is the worker's)
    db -c "SELECT 'passes in the window: ' || (runs - $(tail -1 "$WORK/runs0")) FROM ttl_statistics()" \
       -c "SELECT calls || ' calls, ' || round(total_exec_time::numeric, 1) || ' ms: ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110)
           FROM pg_stat_statements
           WHERE query !~ '^(INSERT INTO events|SELECT greatest|SELECT pg_stat_statements_reset|SELECT runs FROM|SELECT [$]1 [|][|] [(]runs|SELECT pid FROM pg_stat_activity|SELECT pg_current_wal_lsn)'
           ORDER BY total_exec_time DESC LIMIT 15" >"$WORK/statements"
  fi
  local size rows
  size=$(db -c "SELECT sum(pg_total_relation_size(r)) / 1048576 FROM (SELECT relid FROM pg_partition_tree('events')
                UNION SELECT 'events'::regclass) t(r)" | awk '{printf "%.1f", $1}')
  rows=$(db -c "SELECT count(*) FROM events")
  local wal
  wal=$(db -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")

  # TPC-B beside the load and the deleting
  local tps
  tps=$(pgbench -n -b tpcb-like -c 2 -j 2 -T "$TPCB" bench 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | tail -1)
  kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true
  if [ -n "$watcher" ]; then kill "$watcher_pid" 2>/dev/null || true; wait "$watcher_pid" 2>/dev/null || true; fi

  # the figures
  local deleter_cpu autovac_cpu paused=""
  sed -n "$((log0 + 1)),${log1}p" "$DIR/server.log" >"$WORK/window.log"
  if [ "$name" = cron_1min ]; then
    deleter_cpu=$(grep -oE '[0-9.]+ s user, [0-9.]+ s system' "$WORK/window.log" | awk '{s += $1 + $4} END {printf "%.3f", s}')
  else
    [ -n "$pid" ] && [ "$pid" != "$pid_after" ] && echo "steady: $name: the deleting process changed ($pid, then $pid_after)" >&2
    deleter_cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.3f", b - a}')
  fi
  autovac_cpu=$(grep -oE 'CPU: user: [0-9.]+ s, system: [0-9.]+ s' "$WORK/window.log" | awk '{s += $3 + $6} END {printf "%.3f", s}')
  case "$name" in ttl_*)
    paused=$(db -c "SELECT string_agg(paused_reason, '; ') FROM jsonb_ttl_internal.ttl_index WHERE paused_at IS NOT NULL") ;;
  esac
  [ -n "$paused" ] && echo "steady: $name: PAUSED (the safety brake?): $paused" >&2
  if [ -n "$statements" ]; then
    echo "steady: $name: the worker's statements in the window (pg_stat_statements, by total time):" >&2
    sed 's/^/  /' "$WORK/statements" >&2
  fi
  if [ -n "${STEADY_DEBUG:-}" ] && [[ $name == ttl_* ]]; then
    db -c "SELECT * FROM ttl_stats WHERE runs > 0" >&2
    grep -E 'jsonb_ttl' "$DIR/server.log" | tail -20 >&2
  fi
  local p99 max
  read -r p99 max < <(sort -g "$WORK/samples" | awk '{a[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f %.1f", a[i], a[NR]}')
  local ins_p99 ins_rate
  cat "$WORK"/txlog.* 2>/dev/null | awk -v t0="$t0" -v t1="$t1" '$5 + $6 / 1e6 >= t0 && $5 + $6 / 1e6 <= t1 {print $3 / 1000}' \
    | sort -g >"$WORK/latencies"
  local ins_p99 ins_rate
  ins_p99=$(awk '{a[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f", a[i]}' "$WORK/latencies")
  ins_rate=$(awk -v t0="$t0" -v t1="$t1" 'END {printf "%.0f", NR * 100 / (t1 - t0)}' "$WORK/latencies")
  rm -f "$WORK"/txlog.*
  printf '%-15s %9s %9s %10s %10s %9s %9s %9s %9s %8s %9s\n' "$name" "$p99" "$max" "$size" \
    "$(awk -v w="$wal" -v s="$WINDOW" 'BEGIN {printf "%.1f", w * 60 / s / 1048576}')" \
    "$(per_min "$deleter_cpu")" "$(per_min "$autovac_cpu")" "$ins_p99" "$ins_rate" "$(printf '%.0f' "${tps:-0}")" "$rows"
  scripts/cluster.sh destroy "$NAME"
}

echo "steady: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $("$PGBIN/postgres" --version); $RATE rows/s, TTL $TTL s (~$((RATE * TTL)) live rows), warm-up $WARMUP s, window $WINDOW s, TPC-B $TPCB s"
# what each side runs, exactly (TTL as in this run)
cat <<EOF
sides, each on a fresh cluster; the table: events (id bigint GENERATED ALWAYS AS IDENTITY, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
  ttl_json_10s    SELECT ttl_index_create('events', 'createdAt', interval '$TTL seconds'); jsonb_ttl.frequency = 10s, the rest default
  ttl_json_1s     the same, jsonb_ttl.frequency = 1s
  ttl_column_10s  SELECT ttl_index_create('events', 'created_at', interval '$TTL seconds'); jsonb_ttl.frequency = 10s
  cron_1min       CREATE INDEX ON events (created_at); pg_cron $(dpkg-query -W -f='${Version}' "postgresql-$major-cron"):
                  SELECT cron.schedule('* * * * *', \$\$DELETE FROM events WHERE created_at < now() - interval '$TTL seconds'\$\$)
  loop_10s        CREATE INDEX ON events (created_at); psql: DELETE FROM events WHERE created_at < now() - interval '$TTL seconds' \\watch 10
  loop_1s         the same, \\watch 1
  ttl_partitions  PARTITION BY RANGE (created_at), 10-second partitions made ahead by pg_partman
                  (partman.create_parent('public.events', 'created_at', 'native', '10 seconds', p_premake := ...));
                  SELECT ttl_index_create('events', 'created_at', interval '$TTL seconds', drop_partitions => 'drop'); frequency 10s
  partman_10s     the same partitions; CREATE INDEX ON events (created_at); pg_partman $(dpkg-query -W -f='${Version}' "postgresql-$major-partman"):
                  UPDATE partman.part_config SET retention = '$TTL seconds', retention_keep_table = false, retention_keep_index = false;
                  psql: SELECT partman.drop_partition_time('public.events') \\watch 10
EOF
header=$(printf '%-15s %9s %9s %10s %10s %9s %9s %9s %9s %8s %9s' side "age p99" "age max" "size MiB" "WAL MiB/m" \
  "del CPU/m" "av CPU/m" "ins p99" "ins/s" "TPC-B" "rows")
echo "$header"
lines=()
read -ra order <<<"${SIDES//,/ }"
for s in "${order[@]}"; do
  [[ ",$ALL," == *",$s,"* ]] || { echo "steady: no side $s (sides: $ALL)" >&2; exit 2; }
done
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#order[@]}; i++)); do
    lines+=("$(side "${order[$(((i + r) % ${#order[@]}))]}" | tail -1)")
    echo "${lines[-1]}"
  done
done
echo
echo "(age: seconds the oldest row still present had been expired, sampled every 0.1 s; size: table and"
echo " indexes at the end; WAL and CPU per minute of the window; ins p99: ms per 100-row insert; TPC-B: tps)"
[ "$ROUNDS" -gt 1 ] || exit 0
# each side's median [min-max] over the rounds, then the ratios of medians to the baselines
echo
printf '%s\n' "${lines[@]}" | awk -v rounds="$ROUNDS" '
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  lo[list] = a[1]; hi[list] = a[n]
  return a[int((n + 1) / 2)]
}
function ratio(a, b) { return b > 0 ? sprintf("%7.2fx", a / b) : sprintf("%8s", "-") }
function cell(list,   m) { m = median(list); return sprintf("%s [%s-%s]", m, lo[list], hi[list]) }
{ if (!($1 in seen)) { seen[$1] = 1; names[++k] = $1 }
  age[$1] = age[$1] " " $2; size[$1] = size[$1] " " $4; wal[$1] = wal[$1] " " $5; cpu[$1] = cpu[$1] " " $6 }
END {
  printf "medians of %d rounds [min-max]\n%-15s %20s %24s %22s %22s\n", rounds, "side", "age p99", "size MiB", "WAL MiB/m", "del CPU/m"
  for (i = 1; i <= k; i++) { s = names[i]
    printf "%-15s %20s %24s %22s %22s\n", s, cell(age[s]), cell(size[s]), cell(wal[s]), cell(cpu[s]) }
  split("ttl_json_10s:loop_10s ttl_column_10s:loop_10s ttl_json_1s:loop_1s ttl_partitions:partman_10s", pairs, " ")
  printf "\nratios of medians to the baseline\n%-32s %8s %8s %8s %8s\n", "side / baseline", "age", "size", "WAL", "CPU"
  for (p in pairs) { split(pairs[p], x, ":"); a = x[1]; b = x[2]
    if (!(a in seen) || !(b in seen)) continue
    printf "%-32s %s %s %s %s\n", a " / " b, ratio(median(age[a]), median(age[b])), ratio(median(size[a]), median(size[b])),
      ratio(median(wal[a]), median(wal[b])), ratio(median(cpu[a]), median(cpu[b])) }
}'

