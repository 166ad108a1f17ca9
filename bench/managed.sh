#!/usr/bin/env bash
# make bench-managed (issue 48): the SQL edition for managed services (managed/, build/managed/)
# side by side with the Rust edition and with the plain DELETE a pg_cron user writes, on one
# PostgreSQL 15 cluster, in one run: each edition in a database of its own (`rust`: CREATE
# EXTENSION jsonb_ttl; `managed`: psql -f build/managed/jsonb_ttl.sql, the extension NOT
# created there), the baseline in a third (`plain`). Every figure is printed beside its baseline,
# measured in the same run, and the baseline's exact SQL. Exits non-zero only when it could not run.
#   bench/managed.sh   (about 30 minutes on 2 cores; MB_ONLY="1 2" for some sections only)
# Environment (defaults): MB_ROWS (1000000: rows of the purge table, half of them expired),
# MB_INSERT_SECONDS (10: pgbench -T of each insert run; two rounds of the three sides),
# MB_RATE (2000 rows/s) and MB_TTL (60 s) of the steady state, MB_WARMUP (20 s), MB_WINDOW
# (120 s: the measured window of each steady side), MB_CRON_WINDOW (300 s: the same under pg_cron),
# MB_REPEAT (3: runs of each timed query, median).
#
# 1. inserts: pgbench -n -c 2 -j 2 -T MB_INSERT_SECONDS, each transaction an INSERT of 10
#    documents of ~200 bytes ({"at": ISO-8601 string of now(), "user", "kind", "path",
#    "payload"}), synchronous_commit = off (so that the index's cost is not hidden behind the
#    commit's fsync), into `ins`: with the managed edition's TTL index on 'at'; with the Rust
#    edition's; plain, a column created_at = now() with a btree. Then the cost of one call of
#    ttl_timestamp(doc -> 'at') over the 1M date strings of the purge table, less the same count of
#    doc -> 'at' alone.
# 2. the purge: `pt`, MB_ROWS documents, every other one expired (two days old) until half are,
#    the rest dated in the future, VACUUM ANALYZEd, CHECKPOINT, then drained by (a) CALL
#    jsonb_ttl.ttl_purge(max_table_fraction => 1) repeated until every expired row is gone, (b) the
#    Rust worker (jsonb_ttl.enabled on, jsonb_ttl.frequency 10 ms, its other settings default),
#    (c) the plain DELETE, one statement. Time: from the first DELETE statement's start to the last
#    one's end (a statement trigger writes both into an unlogged table), the same clock for all
#    three; WAL: pg_current_wal_lsn() after the CHECKPOINT and after the drain, whole server.
# 3. the steady state, each side on a fresh table of its database: MB_RATE × MB_TTL rows dated
#    over the last MB_TTL s, then pgbench inserting MB_RATE rows/s (100-row transactions, -c 2,
#    --rate) through MB_WARMUP + MB_WINDOW s; the deleting: (a) psql `CALL jsonb_ttl.ttl_purge()
#    \watch 10` (pg_cron 1.4 schedules minutes only), (b) the Rust worker, jsonb_ttl.frequency
#    10 s, (c) psql `DELETE … \watch 10`. In the window: the age of the oldest row left (sampled
#    every 0.5 s as the row of the lowest id: rows are inserted in date order), its p99 and max,
#    less the TTL; WAL MiB a minute (whole server); the table's size with its indexes at the end;
#    CPU seconds a minute of the deleting backend (/proc/PID/schedstat).
# 4. a timestamptz column (no parser on either side), the SQL edition against the plain btree
#    only: inserts as in 1 into a table (id, created_at, doc) with the SQL edition's TTL index on
#    created_at, or a btree on it; the purge as in 2 of such a table, ttl_purge() against one
#    DELETE … WHERE created_at < now() - interval '1 hour' (which its btree serves).
# 5. the steady state of 3 with pg_cron itself deleting, every minute (pg_cron 1.4's finest
#    schedule; 1.5's '10 seconds' is not to be had here): cron.schedule_in_database of CALL
#    jsonb_ttl.ttl_purge(), as README.md schedules it and with max_table_removes => 1000000 (a
#    minute expires 120,000 rows here, more than its default 100,000 a run), against that of
#    the plain DELETE, MB_CRON_WINDOW s each; the age, WAL and size as in 3, and the wall time
#    of the job's runs (cron.job_run_details) a minute. MB_ONLY="5" runs only this section.
# Cluster: fsync on, shared_buffers 1GB, max_wal_size 8GB, checkpoint_timeout 1h, jit off,
# max_parallel_workers_per_gather 0, autovacuum on (off for the purge tables),
# shared_preload_libraries = 'jsonb_ttl,pg_cron' (cron.use_background_workers on), jsonb_ttl.enabled off but where said,
# jsonb_ttl.max_table_fraction = 1 (the brake off: ttl_purge() reads that setting too).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
ROWS=${MB_ROWS:-1000000}
INS_T=${MB_INSERT_SECONDS:-10}
RATE=${MB_RATE:-2000}
TTL=${MB_TTL:-60}
WARMUP=${MB_WARMUP:-20}
WINDOW=${MB_WINDOW:-120}
CRON_WINDOW=${MB_CRON_WINDOW:-300}
REPEAT=${MB_REPEAT:-3}
cd "$ROOT"

dpkg-query -W -f='${Status}' postgresql-15-cron 2>/dev/null | grep -q "install ok installed" ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-cron >/dev/null
[ -f "$PGBIN/../lib/jsonb_ttl.so" ] || [ -f "$("$PGBIN/pg_config" --pkglibdir)/jsonb_ttl.so" ] ||
  { echo "bench/managed.sh: jsonb_ttl is not installed (make install-release)" >&2; exit 1; }
scripts/managed.sh build >/dev/null

WORK=$(mktemp -d /tmp/jsonb_ttl-managed-bench.XXXXXX)
chmod 755 "$WORK" && chown postgres: "$WORK"
mkdir "$WORK/sock" && chown postgres: "$WORK/sock"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DATA=$WORK/data
cleanup() {
  touch "$WORK/stop"
  jobs -p | xargs -r kill 2>/dev/null || true
  sleep 0.5
  [ ! -f "$DATA/postmaster.pid" ] || runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
install -d -o postgres "$DATA"
runuser -u postgres -- "$PGBIN/initdb" -D "$DATA" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$WORK/sock'
shared_preload_libraries = 'jsonb_ttl,pg_cron'
max_worker_processes = 16
fsync = on
shared_buffers = '1GB'
max_wal_size = '8GB'
checkpoint_timeout = '1h'
jit = off
max_parallel_workers_per_gather = 0
jsonb_ttl.enabled = off
jsonb_ttl.max_table_fraction = 1
cron.use_background_workers = on
EOF
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w -t 60 start >/dev/null

psql() { "$PGBIN/psql" -h "$WORK/sock" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
in_db() { local d=$1; shift; PGOPTIONS="-c client_min_messages=warning" psql -d "$d" -At "$@"; }
pgbench() { "$PGBIN/pgbench" -h "$WORK/sock" -p "$PORT" -U postgres "$@"; }
set_guc() { in_db postgres -c "ALTER SYSTEM SET $1 = '$2'" -c "SELECT pg_reload_conf()" >/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}'; }
cpu_of() { awk '{printf "%.6f", $1 / 1e9}' "/proc/$1/schedstat" 2>/dev/null || echo 0; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

for d in rust managed plain; do psql -d postgres -c "CREATE DATABASE $d"; done
in_db rust -c "CREATE EXTENSION jsonb_ttl"
psql -d managed -f build/managed/jsonb_ttl.sql >/dev/null
# the drain clock (as bench/setup.sql's): each DELETE statement on a table records its
# transaction's start (the first kept) and its end; unlogged, no WAL
for d in rust managed plain; do
  in_db "$d" >/dev/null <<'EOF'
CREATE UNLOGGED TABLE bench_clock (tbl text PRIMARY KEY, first_batch timestamptz, last_batch timestamptz);
CREATE FUNCTION bench_clock_tick() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.bench_clock VALUES (TG_TABLE_NAME, now(), clock_timestamp())
    ON CONFLICT (tbl) DO UPDATE SET last_batch = excluded.last_batch;
  RETURN NULL;
END $$;
EOF
done

echo "jsonb_ttl bench-managed: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $("$PGBIN/postgres" --version),"
echo "  SQL edition $(cat managed/VERSION), Rust edition $(in_db rust -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'") (release build: make install-release),"
echo "  pg_cron $(dpkg-query -W -f='${Version}' postgresql-15-cron) preloaded; load average at start: $(load)"
echo

# the documents, ~200 bytes
DOC="jsonb_build_object('at', to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'user', 'user-' || (random() * 100000)::int,
       'kind', 'page_view', 'path', '/products/' || (random() * 5000)::int, 'payload', md5(random()::text) || md5(random()::text))"
# the TTL index of each edition, and the key of the Rust and the SQL parser
TTL_INDEX_RUST="SELECT ttl_index_create('%s', 'at', interval '%s')"
TTL_INDEX_MANAGED="SELECT jsonb_ttl.ttl_index_create('%s', 'at', interval '%s')"
KEY_rust="ttl_timestamp(doc -> 'at')"
KEY_managed="jsonb_ttl.ttl_timestamp(doc -> 'at')"
make_table() {  # make_table DB TABLE TTL: the table of that side, with its index
  local d=$1 t=$2 ttl=$3
  case "$d" in
    plain) in_db "$d" -c "CREATE TABLE $t (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), doc jsonb NOT NULL)" \
                      -c "CREATE INDEX ON $t (created_at)" ;;
    rust) in_db "$d" -c "CREATE TABLE $t (id bigserial PRIMARY KEY, doc jsonb NOT NULL)" \
                     -c "$(printf "$TTL_INDEX_RUST" "$t" "$ttl")" >/dev/null ;;
    managed) in_db "$d" -c "CREATE TABLE $t (id bigserial PRIMARY KEY, doc jsonb NOT NULL)" \
                        -c "$(printf "$TTL_INDEX_MANAGED" "$t" "$ttl")" >/dev/null ;;
  esac
}

TABLE=()
row() { TABLE+=("$(printf '%-58s %14s %14s %9s  %s' "$@")"); printf '%-58s %14s %14s %9s  %s\n' "$@"; }

# what the sections share: their statements and rows, and how figures are counted
cat >"$WORK/ins_ttl.sql" <<EOF
INSERT INTO ins (doc) SELECT $DOC FROM (SELECT now() AS ts FROM generate_series(1, 10)) g;
EOF
cat >"$WORK/ins_plain.sql" <<EOF
INSERT INTO ins (created_at, doc) SELECT ts, $DOC FROM (SELECT now() AS ts FROM generate_series(1, 10)) g;
EOF
cat >"$WORK/steady_ttl.sql" <<EOF
INSERT INTO ev (doc) SELECT $DOC FROM (SELECT now() AS ts FROM generate_series(1, 100)) g;
EOF
cat >"$WORK/steady_plain.sql" <<EOF
INSERT INTO ev (created_at, doc) SELECT ts, $DOC FROM (SELECT now() AS ts FROM generate_series(1, 100)) g;
EOF
ttl_rows="SELECT bench_g, CASE WHEN bench_g % 2 = 0 AND bench_g / 2 <= $((ROWS / 2)) THEN now() - interval '2 days' + bench_g * interval '1 ms'
                                  ELSE now() + bench_g * interval '1 ms' END AS ts FROM generate_series(1, $ROWS) bench_g"
exp=$((ROWS / 2))
rps() { awk -v ms="$1" -v n="$exp" 'BEGIN {printf "%.0f", n * 1000 / ms}'; }
bpr() { awk -v b="$1" -v n="$exp" 'BEGIN {printf "%.1f", b / n}'; }
# MB_ONLY="5" (or "1 3"…): only those sections
want() { [ -z "${MB_ONLY:-}" ] || [[ " $MB_ONLY " == *" $1 "* ]]; }
declare -A DRAIN_MS DRAIN_WAL

######## 1. inserts
if want 1; then
echo "== 1. inserts: pgbench -n -c 2 -j 2 -T $INS_T (x2 rounds, alternating), 10 documents a transaction, synchronous_commit off"
for d in rust managed plain; do make_table "$d" ins "$TTL seconds"; done
declare -A TPS=([rust]=0 [managed]=0 [plain]=0)
for round in 1 2; do
  for d in managed rust plain; do
    f=$WORK/ins_ttl.sql; [ "$d" = plain ] && f=$WORK/ins_plain.sql
    in_db "$d" -c "CHECKPOINT"
    t=$(PGOPTIONS="-c synchronous_commit=off" pgbench -n -c 2 -j 2 -T "$INS_T" -f "$f" "$d" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | tail -1)
    echo "  round $round, $d: $t tps"
    TPS[$d]=$(awk -v a="${TPS[$d]}" -v b="$t" 'BEGIN {print a + b / 2}')
  done
done
docsize=$(in_db plain -c "SELECT round(avg(pg_column_size(doc))) FROM ins")
echo "  (documents: $docsize bytes on average, pg_column_size)"
echo
row "figure" "measured" "baseline" "ratio" "baseline's SQL"
row "insert tps, SQL edition's TTL index" "${TPS[managed]}" "${TPS[plain]}" "$(ratio "${TPS[managed]}" "${TPS[plain]}")" \
  "INSERT INTO ins (created_at, doc) …; CREATE INDEX ON ins (created_at)"
row "insert tps, Rust edition's TTL index" "${TPS[rust]}" "${TPS[plain]}" "$(ratio "${TPS[rust]}" "${TPS[plain]}")" "(the same)"
row "insert tps, SQL edition / Rust edition" "${TPS[managed]}" "${TPS[rust]}" "$(ratio "${TPS[managed]}" "${TPS[rust]}")" \
  "$(printf "$TTL_INDEX_RUST" ins "$TTL seconds")"
for d in rust managed plain; do in_db "$d" -c "DROP TABLE ins"; done
fi

######## 2. the purge (its table also times the parser)
if want 2; then
echo
echo "== 2. the purge: $ROWS rows, $((ROWS / 2)) expired (every other one), brake off"
for d in rust managed plain; do
  in_db "$d" -c "CREATE TABLE pt (id bigserial PRIMARY KEY, doc jsonb NOT NULL) WITH (autovacuum_enabled = false)" \
             -c "INSERT INTO pt (doc) SELECT $DOC FROM ($ttl_rows) g"
  case "$d" in
    rust) in_db "$d" -c "$(printf "$TTL_INDEX_RUST" pt '1 hour')" >/dev/null ;;
    managed) in_db "$d" -c "$(printf "$TTL_INDEX_MANAGED" pt '1 hour')" >/dev/null ;;
  esac
  in_db "$d" -c "CREATE TRIGGER bench_clock AFTER DELETE ON pt FOR EACH STATEMENT EXECUTE FUNCTION bench_clock_tick()" \
             -c "VACUUM ANALYZE pt" -c "SELECT count(*) FROM pt" >/dev/null
done

median_ms() {  # median_ms DB QUERY: median execution time over REPEAT runs
  local d=$1 q=$2 times=()
  for _ in $(seq "$REPEAT"); do
    times+=("$(in_db "$d" -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $q" | sed -n 's/.*"Execution Time": \([0-9.]*\).*/\1/p')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}
base_r=$(median_ms rust "SELECT count(doc -> 'at') FROM pt")
rust_ms=$(median_ms rust "SELECT count($KEY_rust) FROM pt")
base_m=$(median_ms managed "SELECT count(doc -> 'at') FROM pt")
managed_ms=$(median_ms managed "SELECT count($KEY_managed) FROM pt")
text_p=$(median_ms plain "SELECT count(doc ->> 'at') FROM pt")
cast_ms=$(median_ms plain "SELECT count((doc ->> 'at')::timestamptz) FROM pt")
us() { awk -v a="$1" -v b="$2" -v n="$ROWS" 'BEGIN {printf "%.2f", (a - b) * 1000 / n}'; }
pr_us=$(us "$rust_ms" "$base_r"); pm_us=$(us "$managed_ms" "$base_m"); pc_us=$(us "$cast_ms" "$text_p")
echo "  SELECT count(ttl_timestamp(doc -> 'at')) FROM pt: Rust $rust_ms ms, SQL $managed_ms ms; SELECT count(doc -> 'at') FROM pt: $base_r, $base_m ms"
echo "  SELECT count((doc ->> 'at')::timestamptz) FROM pt: $cast_ms ms; SELECT count(doc ->> 'at') FROM pt: $text_p ms"
row "ttl_timestamp, whole query over $ROWS strings (ms)" "$managed_ms" "$rust_ms" "$(ratio "$managed_ms" "$rust_ms")" \
  "SELECT count(ttl_timestamp(doc -> 'at')) FROM pt (Rust)"
row "ttl_timestamp, one call (µs), SQL / Rust" "$pm_us" "$pr_us" "$(ratio "$pm_us" "$pr_us")" \
  "the same less SELECT count(doc -> 'at') FROM pt"
row "ttl_timestamp, one call (µs), SQL / the ::timestamptz cast" "$pm_us" "$pc_us" "$(ratio "$pm_us" "$pc_us")" \
  "SELECT count((doc ->> 'at')::timestamptz) FROM pt less count(doc ->> 'at')"

drain() {  # drain DB: empties pt of its expired rows; prints ms and WAL bytes
  local d=$1 lsn0 lsn1
  in_db "$d" -c "CHECKPOINT"
  lsn0=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  case "$d" in
    managed)
      # until the table's deletes, flushed at each psql's exit, reach the expired rows
      for _ in $(seq 1000); do  # (bounded: a run that deletes nothing would loop for ever)
        [ "$(in_db managed -c "SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'pt'")" -lt $((ROWS / 2)) ] || break
        in_db managed -c "CALL jsonb_ttl.ttl_purge(max_table_fraction => 1)"
      done ;;
    rust)
      set_guc jsonb_ttl.frequency 10
      set_guc jsonb_ttl.enabled on
      until [ "$(in_db rust -c "SELECT count(*) = 0 FROM (SELECT 1 FROM pt WHERE $KEY_rust < now() - interval '1 hour' ORDER BY $KEY_rust LIMIT 1) t")" = t ]; do
        sleep 0.2
      done
      sleep 0.3
      set_guc jsonb_ttl.enabled off ;;
    plain)
      in_db plain -c "DELETE FROM pt WHERE (doc->>'at')::timestamptz < now() - interval '1 hour'" ;;
  esac
  lsn1=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  local left
  left=$(in_db "$d" -c "SELECT count(*) FROM pt WHERE (doc->>'at')::timestamptz < now() - interval '1 hour'")
  [ "$left" = 0 ] || echo "bench/managed.sh: $d: $left expired rows left after the drain" >&2
  echo "$(in_db "$d" -c "SELECT round(extract(epoch FROM last_batch - first_batch) * 1000) FROM bench_clock WHERE tbl = 'pt'") $(in_db "$d" -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")"
}
for d in managed rust plain; do
  read -r DRAIN_MS[$d] DRAIN_WAL[$d] < <(drain "$d")
  echo "  $d: ${DRAIN_MS[$d]} ms, ${DRAIN_WAL[$d]} WAL bytes"
done
PLAIN_DELETE="DELETE FROM pt WHERE (doc->>'at')::timestamptz < now() - interval '1 hour'"
echo "  (the SQL edition's statistics: $(in_db managed -c "SELECT format('%s run(s), %s row(s) deleted', sum(runs), sum(rows_deleted)) FROM jsonb_ttl.ttl_stats"))"
for d in managed rust; do
  label="CALL jsonb_ttl.ttl_purge() until none left"; [ "$d" = rust ] && label="the Rust worker (frequency 10 ms)"
  row "purge rows/s, $label" "$(rps "${DRAIN_MS[$d]}")" "$(rps "${DRAIN_MS[plain]}")" "$(ratio "$(rps "${DRAIN_MS[$d]}")" "$(rps "${DRAIN_MS[plain]}")")" "$PLAIN_DELETE"
  row "purge WAL bytes/row, $label" "$(bpr "${DRAIN_WAL[$d]}")" "$(bpr "${DRAIN_WAL[plain]}")" "$(ratio "${DRAIN_WAL[$d]}" "${DRAIN_WAL[plain]}")" "(the same)"
done
row "purge rows/s, SQL edition / Rust edition" "$(rps "${DRAIN_MS[managed]}")" "$(rps "${DRAIN_MS[rust]}")" \
  "$(ratio "$(rps "${DRAIN_MS[managed]}")" "$(rps "${DRAIN_MS[rust]}")")" "the Rust worker, as above"
for d in rust managed plain; do in_db "$d" -c "DROP TABLE pt"; done
fi

######## 3. the steady state
if want 3; then
echo
echo "== 3. steady state: $RATE rows/s, TTL $TTL s (~$((RATE * TTL)) live rows), warm-up $WARMUP s, window $WINDOW s, deleting every 10 s"
PLAIN_STEADY="DELETE FROM ev WHERE (doc->>'at')::timestamptz < now() - interval '$TTL seconds'"
declare -A S_P99 S_MAX S_SIZE S_WAL S_CPU
steady() {
  local d=$1 watcher="" f=$WORK/steady_ttl.sql pid_query="SELECT pid FROM pg_stat_activity WHERE application_name = 'mb_deleter' AND datname = '$1'"
  rm -f "$WORK/stop"
  make_table "$d" ev "$TTL seconds"
  local cols="doc" sel="$DOC"
  [ "$d" = plain ] && { cols="created_at, doc"; sel="ts, $DOC"; f=$WORK/steady_plain.sql; }
  in_db "$d" -c "INSERT INTO ev ($cols) SELECT $sel FROM (SELECT now() - interval '$TTL seconds' + g * interval '1 second' / $RATE AS ts
                                                        FROM generate_series(1, $((RATE * TTL))) g) s" -c "VACUUM ANALYZE ev"
  case "$d" in
    managed) watcher="CALL jsonb_ttl.ttl_purge() \\watch 10" ;;
    plain) watcher="$PLAIN_STEADY \\watch 10" ;;
    rust) set_guc jsonb_ttl.frequency 10000; set_guc jsonb_ttl.enabled on
          pid_query="SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'rust'" ;;
  esac
  local watcher_pid=""
  if [ -n "$watcher" ]; then
    echo "$watcher" | PGAPPNAME=mb_deleter "$PGBIN/psql" -h "$WORK/sock" -p "$PORT" -U postgres -X -q -d "$d" >/dev/null 2>"$WORK/watcher.err" &
    watcher_pid=$!
  fi
  in_db "$d" -c "CHECKPOINT"
  pgbench -n -f "$f" -c 2 -j 2 --rate $((RATE / 100)) -T $((WARMUP + WINDOW + 3)) "$d" >"$WORK/insert.out" 2>&1 &
  local load_pid=$!
  sleep "$WARMUP"
  local lsn0 pid cpu0=0 t0
  t0=$(date +%s.%N)
  lsn0=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  pid=$(in_db "$d" -c "$pid_query" | head -1)
  [ -n "$pid" ] && cpu0=$(cpu_of "$pid")
  (while [ ! -e "$WORK/stop" ] && sleep 0.5; do
     echo "SELECT greatest(0, extract(epoch FROM now() - (doc->>'at')::timestamptz) - $TTL) FROM ev ORDER BY id LIMIT 1;"
   done) | psql -d "$d" -At >"$WORK/samples" &
  local sampler=$!
  sleep "$WINDOW"
  local lsn1 cpu1=0 t1
  lsn1=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  t1=$(date +%s.%N)
  [ -n "$pid" ] && cpu1=$(cpu_of "$pid")
  local pid_after
  pid_after=$(in_db "$d" -c "$pid_query" | head -1)
  [ "$pid" = "$pid_after" ] || echo "bench/managed.sh: $d: the deleting process changed ($pid, then $pid_after)" >&2
  touch "$WORK/stop"; wait "$sampler" || true
  S_SIZE[$d]=$(in_db "$d" -c "SELECT round(pg_total_relation_size('ev') / 1048576.0, 1)")
  local rows
  rows=$(in_db "$d" -c "SELECT count(*) FROM ev")
  wait "$load_pid" || true  # (its -T ends it)
  [ -z "$watcher_pid" ] || { kill "$watcher_pid" 2>/dev/null || true; wait "$watcher_pid" 2>/dev/null || true; }
  [ "$d" != rust ] || set_guc jsonb_ttl.enabled off
  [ ! -s "$WORK/watcher.err" ] || { echo "bench/managed.sh: $d: the deleting session said:" >&2; head -5 "$WORK/watcher.err" >&2; }
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  read -r S_P99[$d] S_MAX[$d] < <(sort -g "$WORK/samples" | awk '{a[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f %.1f\n", a[i], a[NR]}')
  S_WAL[$d]=$(awk -v w="$(in_db "$d" -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")" -v s="$secs" 'BEGIN {printf "%.1f", w * 60 / s / 1048576}')
  S_CPU[$d]=$(awk -v a="$cpu0" -v b="$cpu1" -v s="$secs" 'BEGIN {printf "%.2f", (b - a) * 60 / s}')
  local ins
  ins=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/insert.out")
  echo "  $d: age p99 ${S_P99[$d]} s, max ${S_MAX[$d]} s, ${S_SIZE[$d]} MiB, WAL ${S_WAL[$d]} MiB/min, CPU ${S_CPU[$d]} s/min (pid $pid), $rows rows at the end, $(wc -l <"$WORK/samples") samples, $((${ins:-0} * 100)) rows inserted"
  in_db "$d" -c "DROP TABLE ev"
}
for d in managed rust plain; do steady "$d"; done
for d in managed rust; do
  label="ttl_purge() \\watch 10"; [ "$d" = rust ] && label="Rust worker, frequency 10 s"
  row "steady, $label: age p99 (s)" "${S_P99[$d]}" "${S_P99[plain]}" "$(ratio "${S_P99[$d]}" "${S_P99[plain]}")" "$PLAIN_STEADY \\watch 10"
  row "  age max (s)" "${S_MAX[$d]}" "${S_MAX[plain]}" "$(ratio "${S_MAX[$d]}" "${S_MAX[plain]}")" "(the same)"
  row "  table + indexes at the end (MiB)" "${S_SIZE[$d]}" "${S_SIZE[plain]}" "$(ratio "${S_SIZE[$d]}" "${S_SIZE[plain]}")" "(the same; its index: btree on created_at)"
  row "  WAL (MiB/min, whole server)" "${S_WAL[$d]}" "${S_WAL[plain]}" "$(ratio "${S_WAL[$d]}" "${S_WAL[plain]}")" "(the same)"
  row "  deleting backend's CPU (s/min)" "${S_CPU[$d]}" "${S_CPU[plain]}" "$(ratio "${S_CPU[$d]}" "${S_CPU[plain]}")" "(the same)"
done

row "steady, deleting CPU, SQL edition / Rust edition (s/min)" "${S_CPU[managed]}" "${S_CPU[rust]}" "$(ratio "${S_CPU[managed]}" "${S_CPU[rust]}")" \
  "the Rust worker, as above"
fi

######## 4. a timestamptz column: the SQL edition without its parser, against the same btree
if want 4; then
echo
echo "== 4. a timestamptz column: the SQL edition's TTL index on created_at against a btree on it (no parser on either side)"
TTL_INDEX_COLUMN="SELECT jsonb_ttl.ttl_index_create('%s', 'created_at', interval '%s')"
col_table() {  # col_table DB TABLE TTL [WITH]: id, created_at, doc; its TTL index or its btree
  in_db "$1" -c "CREATE TABLE $2 (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), doc jsonb NOT NULL) ${4:-}"
  case "$1" in
    managed) in_db "$1" -c "$(printf "$TTL_INDEX_COLUMN" "$2" "$3")" >/dev/null ;;
    plain) in_db "$1" -c "CREATE INDEX ON $2 (created_at)" ;;
  esac
}
for d in managed plain; do col_table "$d" ins "$TTL seconds"; done
declare -A CTPS=([managed]=0 [plain]=0)
for round in 1 2; do
  for d in managed plain; do
    in_db "$d" -c "CHECKPOINT"
    t=$(PGOPTIONS="-c synchronous_commit=off" pgbench -n -c 2 -j 2 -T "$INS_T" -f "$WORK/ins_plain.sql" "$d" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | tail -1)
    echo "  inserts, round $round, $d: $t tps"
    CTPS[$d]=$(awk -v a="${CTPS[$d]}" -v b="$t" 'BEGIN {print a + b / 2}')
  done
done
for d in managed plain; do in_db "$d" -c "DROP TABLE ins"; done
row "column: insert tps, SQL edition's TTL index on created_at" "${CTPS[managed]}" "${CTPS[plain]}" "$(ratio "${CTPS[managed]}" "${CTPS[plain]}")" \
  "INSERT INTO ins (created_at, doc) …; CREATE INDEX ON ins (created_at)"
for d in managed plain; do
  col_table "$d" ptc '1 hour' "WITH (autovacuum_enabled = false)"
  in_db "$d" -c "INSERT INTO ptc (created_at, doc) SELECT ts, $DOC FROM ($ttl_rows) g" \
             -c "CREATE TRIGGER bench_clock AFTER DELETE ON ptc FOR EACH STATEMENT EXECUTE FUNCTION bench_clock_tick()" \
             -c "VACUUM ANALYZE ptc" -c "CHECKPOINT"
done
PLAIN_COLUMN_DELETE="DELETE FROM ptc WHERE created_at < now() - interval '1 hour'"
declare -A CDRAIN_MS CDRAIN_WAL
for d in managed plain; do
  lsn0=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  if [ "$d" = managed ]; then
    for _ in $(seq 1000); do  # (bounded: a run that deletes nothing would loop for ever)
      [ "$(in_db managed -c "SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'ptc'")" -lt $((ROWS / 2)) ] || break
      in_db managed -c "CALL jsonb_ttl.ttl_purge(max_table_fraction => 1)"
    done
  else
    in_db plain -c "$PLAIN_COLUMN_DELETE"
  fi
  lsn1=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  left=$(in_db "$d" -c "SELECT count(*) FROM ptc WHERE created_at < now() - interval '1 hour'")
  [ "$left" = 0 ] || echo "bench/managed.sh: $d: $left expired rows of ptc left after the drain" >&2
  CDRAIN_MS[$d]=$(in_db "$d" -c "SELECT round(extract(epoch FROM last_batch - first_batch) * 1000) FROM bench_clock WHERE tbl = 'ptc'")
  CDRAIN_WAL[$d]=$(in_db "$d" -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
  echo "  purge, $d: ${CDRAIN_MS[$d]} ms, ${CDRAIN_WAL[$d]} WAL bytes"
  in_db "$d" -c "DROP TABLE ptc"
done
row "column: purge rows/s, CALL jsonb_ttl.ttl_purge() until none left" "$(rps "${CDRAIN_MS[managed]}")" "$(rps "${CDRAIN_MS[plain]}")" \
  "$(ratio "$(rps "${CDRAIN_MS[managed]}")" "$(rps "${CDRAIN_MS[plain]}")")" "$PLAIN_COLUMN_DELETE (one statement, its btree)"
row "column: purge WAL bytes/row" "$(bpr "${CDRAIN_WAL[managed]}")" "$(bpr "${CDRAIN_WAL[plain]}")" "$(ratio "${CDRAIN_WAL[managed]}" "${CDRAIN_WAL[plain]}")" "(the same)"
[ -z "${DRAIN_MS[managed]:-}" ] || row "purge rows/s, SQL edition: a timestamptz column / a JSON date" "$(rps "${CDRAIN_MS[managed]}")" "$(rps "${DRAIN_MS[managed]}")" \
  "$(ratio "$(rps "${CDRAIN_MS[managed]}")" "$(rps "${DRAIN_MS[managed]}")")" "ttl_purge() on the JSON date, section 2"
fi

######## 5. the steady state with pg_cron itself deleting, every minute (1.4's finest schedule)
if want 5; then
echo
echo "== 5. steady state, pg_cron calling each side every minute: $RATE rows/s, TTL $TTL s, warm-up $WARMUP s, window $CRON_WINDOW s"
in_db postgres -c "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
PLAIN_CRON="DELETE FROM ev WHERE (doc->>'at')::timestamptz < now() - interval '$TTL seconds'"
# ttl_purge() as the README schedules it, and with a per-run limit above the rows a minute
# expires (2,000/s: 120,000 > max_table_removes' default 100,000)
declare -A CRON_CMD=([managed]="CALL jsonb_ttl.ttl_purge()"
                     [managed_1m]="CALL jsonb_ttl.ttl_purge(max_table_removes => 1000000)"
                     [plain]="$PLAIN_CRON")
declare -A C_P99 C_MAX C_SIZE C_WAL C_BUSY C_RUNS
steady_cron() {  # steady_cron SIDE: the load of section 3, the deleting by a pg_cron job of CRON_CMD[SIDE]
  local side=$1 d=${1%_1m} f=$WORK/steady_ttl.sql cmd=${CRON_CMD[$1]} cols="doc" sel="$DOC"
  [ "$d" = plain ] && { f=$WORK/steady_plain.sql; cols="created_at, doc"; sel="ts, $DOC"; }
  rm -f "$WORK/stop"
  make_table "$d" ev "$TTL seconds"
  in_db "$d" -c "INSERT INTO ev ($cols) SELECT $sel FROM (SELECT now() - interval '$TTL seconds' + g * interval '1 second' / $RATE AS ts
                                                        FROM generate_series(1, $((RATE * TTL))) g) s" -c "VACUUM ANALYZE ev"
  local job
  job=$(in_db postgres -c "SELECT cron.schedule_in_database('mb_$side', '* * * * *', \$\$$cmd\$\$, '$d')")
  in_db "$d" -c "CHECKPOINT"
  pgbench -n -f "$f" -c 2 -j 2 --rate $((RATE / 100)) -T $((WARMUP + CRON_WINDOW + 3)) "$d" >"$WORK/insert.out" 2>&1 &
  local load_pid=$!
  sleep "$WARMUP"
  local lsn0 t0 started
  t0=$(date +%s.%N)
  started=$(in_db postgres -c "SELECT now()")
  lsn0=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  (while [ ! -e "$WORK/stop" ] && sleep 0.5; do
     echo "SELECT greatest(0, extract(epoch FROM now() - (doc->>'at')::timestamptz) - $TTL) FROM ev ORDER BY id LIMIT 1;"
   done) | psql -d "$d" -At >"$WORK/samples" &
  local sampler=$!
  sleep "$CRON_WINDOW"
  local lsn1 t1 secs
  lsn1=$(in_db "$d" -c "SELECT pg_current_wal_lsn()")
  t1=$(date +%s.%N)
  touch "$WORK/stop"; wait "$sampler" || true
  C_SIZE[$side]=$(in_db "$d" -c "SELECT round(pg_total_relation_size('ev') / 1048576.0, 1)")
  wait "$load_pid" || true
  in_db postgres -c "SELECT cron.unschedule('mb_$side')" >/dev/null
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  read -r C_P99[$side] C_MAX[$side] < <(sort -g "$WORK/samples" | awk '{a[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f %.1f\n", a[i], a[NR]}')
  C_WAL[$side]=$(awk -v w="$(in_db "$d" -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")" -v s="$secs" 'BEGIN {printf "%.1f", w * 60 / s / 1048576}')
  # the jobs' own time, as pg_cron records each run (the runs that started in the window)
  read -r C_RUNS[$side] C_BUSY[$side] < <(in_db postgres -F ' ' -c "SELECT count(*), round((coalesce(sum(extract(epoch FROM d.end_time - d.start_time)), 0) * 60 / $secs)::numeric, 2)
                                                    FROM cron.job_run_details d
                                                    WHERE d.jobid = $job AND d.start_time >= '$started' AND d.status = 'succeeded'")
  local failed
  failed=$(in_db postgres -c "SELECT count(*) FROM cron.job_run_details d WHERE d.jobid = $job AND d.status <> 'succeeded'")
  [ "$failed" = 0 ] || echo "bench/managed.sh: $side: $failed pg_cron run(s) did not succeed" >&2
  echo "  $side ($cmd): age p99 ${C_P99[$side]} s, max ${C_MAX[$side]} s, ${C_SIZE[$side]} MiB, WAL ${C_WAL[$side]} MiB/min, ${C_RUNS[$side]} runs taking ${C_BUSY[$side]} s/min, $(wc -l <"$WORK/samples") samples"
  in_db "$d" -c "DROP TABLE ev"
}
for side in managed managed_1m plain; do steady_cron "$side"; done
for side in managed managed_1m; do
  row "cron, ${CRON_CMD[$side]} every minute: age p99 (s)" "${C_P99[$side]}" "${C_P99[plain]}" "$(ratio "${C_P99[$side]}" "${C_P99[plain]}")" \
    "cron.schedule_in_database(…, '* * * * *', '$PLAIN_CRON', …)"
  row "  age max (s)" "${C_MAX[$side]}" "${C_MAX[plain]}" "$(ratio "${C_MAX[$side]}" "${C_MAX[plain]}")" "(the same)"
  row "  table + indexes at the end (MiB)" "${C_SIZE[$side]}" "${C_SIZE[plain]}" "$(ratio "${C_SIZE[$side]}" "${C_SIZE[plain]}")" "(the same; its index: btree on created_at)"
  row "  WAL (MiB/min, whole server)" "${C_WAL[$side]}" "${C_WAL[plain]}" "$(ratio "${C_WAL[$side]}" "${C_WAL[plain]}")" "(the same)"
  row "  the job's runs, wall time (s/min, cron.job_run_details)" "${C_BUSY[$side]}" "${C_BUSY[plain]}" "$(ratio "${C_BUSY[$side]}" "${C_BUSY[plain]}")" "(the same)"
done
fi

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%MZ); load average at the end: $(load))"
printf '%s\n' "${TABLE[@]}"
