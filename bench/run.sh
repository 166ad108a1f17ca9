#!/usr/bin/env bash
# make bench: performance figures for jsonb_ttl, each as a ratio against a baseline measured in
# the same run on the same cluster. Exits non-zero only when the benchmark could not run, never
# because a target was missed.
#   bench/run.sh [--scale F] [--repeat K] [--only CASE,...]
#     --scale F   multiplies every data size (default 1: 1M rows, ~20 minutes on 2 cores)
#     --repeat K  runs of each timed query for the parser case (median, default 5)
#     --only      a comma-separated subset of: parser,purge,archive,field,insert,options,partitions,lag,
#                 impact,growth,idle,rotation,batch,citus,steady
# Environment: PG_CONFIG (the server to run, default PostgreSQL 15's), BENCH_NAME and
# BENCH_PORT (the cluster's name and port, default bench and 28817: move them when another
# checkout benchmarks on the same machine), BENCH_PURGE_BATCHES (the fixed batch sizes of the
# purge case's loops, default "1000 10000").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=$("${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" --bindir)
NAME=${BENCH_NAME:-bench}
PORT=${BENCH_PORT:-28817}
PURGE_BATCHES=${BENCH_PURGE_BATCHES:-1000 10000}
SCALE=1
REPEAT=5
ONLY=parser,purge,archive,field,insert,options,partitions,lag,impact,growth,idle,rotation,batch,citus,steady
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "usage: $0 [--scale F] [--repeat K] [--only CASE,...]" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
rows() { awk -v n="$1" -v s="$SCALE" 'BEGIN {printf "%d", n * s}'; }
secs() { awk -v n="$1" -v s="$SCALE" 'BEGIN {t = n * s; printf "%d", t < 5 ? 5 : t}'; }  # durations: at least 5 s
wanted() { [[ ",$ONLY," == *",$1,"* ]]; }

SETTINGS=("shared_buffers = '2GB'" "max_parallel_workers_per_gather = 0" "jit = off"
          "work_mem = '64MB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'"
          "autovacuum = off" "jsonb_ttl.enabled = off" "jsonb_ttl.max_table_fraction = 1")
scripts/cluster.sh destroy "$NAME"
trap 'scripts/cluster.sh destroy "$NAME"' EXIT
scripts/cluster.sh start "$NAME" "$PORT" "${SETTINGS[@]}"
SOCK=$(scripts/cluster.sh dir "$NAME")/sock
psql() { "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
db() { PGOPTIONS="-c client_min_messages=warning" psql -d bench -At "$@"; }
pgbench() { "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -U postgres "$@"; }

set_guc() { db -c "ALTER SYSTEM SET $1 = '$2'" -c "SELECT pg_reload_conf()" >/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }

psql -d postgres -c "CREATE DATABASE bench"
db -f bench/setup.sql >/dev/null

echo "jsonb_ttl bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $("$PGBIN/postgres" --version)"
echo "scale: $SCALE, settings: ${SETTINGS[*]}"
echo

RESULTS=()
result() { RESULTS+=("$(printf '%-46s %16s %16s %8s  %s' "$@")"); printf '%-46s %16s %16s %8s  %s\n' "$@"; }
result "case" "jsonb_ttl" "baseline" "ratio" "target"

# Median execution time in ms of a query, over REPEAT runs.
time_query() {
  local q=$1 times=()
  for _ in $(seq "$REPEAT"); do
    times+=("$(db -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $q" | sed -n 's/.*"Execution Time": \([0-9.]*\).*/\1/p')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# Median planning + execution time in ms of a query at PostgreSQL's default jit = on (the
# cluster's settings turn it off), over REPEAT runs.
time_query_jit_on() {
  local q=$1 warm=${2:-} times=()
  for _ in $(seq "$REPEAT"); do
    # warm: a session that ran the query before (a pooled connection, an exporter's), whose
    # caches of catalog rows are filled; else a new session (psql)
    times+=("$(db -c "SET jit = on" ${warm:+-c "$q"} -c "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY, FORMAT JSON) $q" |
      awk -F': ' '/"Planning Time"|"Execution Time"/ {gsub(/[ ,]/, "", $2); t += $2} END {print t}')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# Milliseconds the worker takes to remove every expired row of TABLE, from the start of its
# first batch to the end of its last (bench_clock, bench/setup.sql), enabled for the drain only.
# Watched every 0.2 s from outside, which takes no CPU worth mentioning from the worker and holds
# no snapshot that would keep its dead rows alive; the watching adds nothing to the figure.
worker_drain_ms() {
  local table=$1
  set_guc jsonb_ttl.enabled on
  until [ "$(db -c "SELECT count(*) = 0 FROM (SELECT 1 FROM $table WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour' ORDER BY ttl_timestamp(doc -> 'creationDate') LIMIT 1) t")" = t ]; do
    sleep 0.2
  done
  sleep 0.3  # the batches that find nothing left, and end the visit, come just after
  set_guc jsonb_ttl.enabled off
  db -c "SELECT bench_drain_ms('$table')"
}

worker_settings() {  # a fast, unlimited worker for the throughput cases (10 ms wake-up)
  set_guc jsonb_ttl.frequency 10
  set_guc jsonb_ttl.max_table_removes 2000000000
  set_guc jsonb_ttl.max_total_removes 2000000000
}

# Case 2 (first: it needs no worker): parser cost. Each figure subtracts the cost of
# extracting the value alone, so the ratio compares ttl_timestamp with the cast itself.
if wanted parser; then
  n=$(rows 1000000)
  db -c "CALL bench_table('parse', $n, $((n / 2)))" -c "VACUUM ANALYZE parse" -c "DO \$\$ BEGIN PERFORM count(*) FROM parse; END \$\$"
  json_base=$(time_query "SELECT count(doc -> 'creationDate') FROM parse")
  parser=$(time_query "SELECT count(ttl_timestamp(doc -> 'creationDate')) FROM parse")
  text_base=$(time_query "SELECT count(doc ->> 'creationDate') FROM parse")
  cast=$(time_query "SELECT count((doc ->> 'creationDate')::timestamptz) FROM parse")
  parser_cost=$(awk -v a="$parser" -v b="$json_base" 'BEGIN {printf "%.1f", a - b}')
  cast_cost=$(awk -v a="$cast" -v b="$text_base" 'BEGIN {printf "%.1f", a - b}')
  result "parser cost, $n rows (ms)" "$parser_cost" "$cast_cost" "$(ratio "$parser_cost" "$cast_cost")" "<= 0.50x the ::timestamptz cast"
  result "  whole query incl. jsonb access (ms)" "$parser" "$cast" "$(ratio "$parser" "$cast")" "(information)"
  db -c "DROP TABLE parse"
fi

# Case 1: purge throughput, against the strongest baselines a DBA would write, at equal batch
# size and settings (fsync and synchronous_commit on for every side), each after a CHECKPOINT,
# each timed from its first batch to its last by the same statement trigger (bench_clock):
#   hand loop        CALL purge_by_hand(tbl, batch) (bench/setup.sql): DELETE … WHERE ctid =
#                    ANY (ARRAY(SELECT ctid … ORDER BY <reference> LIMIT batch FOR UPDATE SKIP
#                    LOCKED)) AND <expired>, then COMMIT, until nothing is left
#   same-SQL loop    CALL purge_like_worker(tbl, batch): the worker's statement as it is now, in
#                    the same loop, under the worker's planner pins
#   naive            one DELETE FROM tbl WHERE (doc ->> 'creationDate')::timestamptz < now() - '1 hour'
# in two layouts (expired rows contiguous in the heap, and interleaved 50 % with live rows); the
# loops at batch 1000 and 10000 against the worker at that fixed size (batch_time = 0) and with
# jsonb_ttl.synchronous_commit on (the loops commit as every session does), the naive DELETE
# against the worker with its default settings; WAL bytes and full-page images per deleted row
# beside each. Then the worker at its defaults against the same with jsonb_ttl.synchronous_commit
# on.
if wanted purge; then
  n=$(rows 1000000); expired=$((n / 2))
  default_batch="$(db -c "SHOW jsonb_ttl.batch_size") rows, $(db -c "SHOW jsonb_ttl.batch_time")"
  worker_settings
  set_guc fsync on
  set_guc synchronous_commit on
  wal() { db -c "SELECT wal_bytes || ' ' || wal_fpi FROM pg_stat_wal"; }
  per_s() { awk -v r="$expired" -v ms="$1" 'BEGIN {printf "%.0f rows/s", r / ms * 1000}'; }
  per_row() { awk -v r="$expired" -v b="$1" -v f="$2" 'BEGIN {printf "%.0f B/row, %.2f fpi/row", b / r, f / r}'; }
  loop_drain_ms() { db -c "CALL $1('$2', $3)" -c "SELECT bench_drain_ms('$2')"; }
  naive_ms() {
    db -c "DELETE FROM $1 WHERE (doc ->> 'creationDate')::timestamptz < now() - interval '1 hour'" \
       -c "SELECT bench_drain_ms('$1')"
  }
  # Makes a fresh table NAME in LAYOUT, then runs "$@" (a command that prints the drain time in
  # ms, from bench_clock) and prints: ms wal_bytes wal_fpi.
  measured() {
    local name=$1 layout=$2 w0 w1 ms
    shift 2
    db -c "CALL bench_table('$name', $n, $expired, '$layout')" -c "VACUUM ANALYZE $name" -c "CHECKPOINT"
    w0=$(wal)
    ms=$("$@" | tail -1)
    w1=$(wal)
    db -c "DROP TABLE $name"
    echo "$ms $(awk -v a="$w0" -v b="$w1" 'BEGIN {split(a, x, " "); split(b, y, " "); print y[1] - x[1], y[2] - x[2]}')"
  }
  declare -A default_ms
  for layout in contiguous interleaved; do
    set_guc jsonb_ttl.batch_time 0   # every batch batch_size rows, as in the loops
    set_guc jsonb_ttl.synchronous_commit on   # a flush at each commit, as in the loops
    for batch in $PURGE_BATCHES; do
      set_guc jsonb_ttl.batch_size $batch
      read -r w_ms w_bytes w_fpi <<<"$(measured purge_worker "$layout" worker_drain_ms purge_worker)"
      read -r h_ms h_bytes h_fpi <<<"$(measured purge_hand "$layout" loop_drain_ms purge_by_hand purge_hand "$batch")"
      read -r s_ms _ _ <<<"$(measured purge_same "$layout" loop_drain_ms purge_like_worker purge_same "$batch")"
      result "purge $expired of $n, $layout, batch $batch" "$(per_s "$w_ms")" "$(per_s "$h_ms")" "$(ratio "$h_ms" "$w_ms")" ">= 1.00x the hand loop"
      result "  WAL: worker | hand loop" "$(per_row "$w_bytes" "$w_fpi")" "$(per_row "$h_bytes" "$h_fpi")" "$(ratio "$w_bytes" "$h_bytes")" "<= 1.00x the hand loop"
      result "  worker | the same SQL in the loop" "$(per_s "$w_ms")" "$(per_s "$s_ms")" "$(ratio "$s_ms" "$w_ms")" ">= 1.00x the same SQL"
    done
    db -c "ALTER SYSTEM RESET jsonb_ttl.batch_size" -c "ALTER SYSTEM RESET jsonb_ttl.batch_time" \
       -c "ALTER SYSTEM RESET jsonb_ttl.synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
    read -r n_ms n_bytes n_fpi <<<"$(measured purge_naive "$layout" naive_ms purge_naive)"
    read -r d_ms d_bytes d_fpi <<<"$(measured purge_worker "$layout" worker_drain_ms purge_worker)"
    default_ms[$layout]=$d_ms
    result "  $layout: worker ($default_batch, synchronous_commit $(db -c "SHOW jsonb_ttl.synchronous_commit")) vs one naive DELETE" "$(per_s "$d_ms")" "$(per_s "$n_ms")" "$(ratio "$n_ms" "$d_ms")" ">= 1.00x the naive DELETE"
    result "  WAL: worker | naive DELETE" "$(per_row "$d_bytes" "$d_fpi")" "$(per_row "$n_bytes" "$n_fpi")" "$(ratio "$d_bytes" "$n_bytes")" "<= 1.05x the naive DELETE"
  done
  set_guc jsonb_ttl.synchronous_commit on
  read -r a_ms _ _ <<<"$(measured purge_worker contiguous worker_drain_ms purge_worker)"
  db -c "ALTER SYSTEM RESET jsonb_ttl.synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
  result "  contiguous: worker at defaults | synchronous_commit on" "$(per_s "${default_ms[contiguous]}")" "$(per_s "$a_ms")" "$(ratio "$a_ms" "${default_ms[contiguous]}")" "(information)"
  read -r c_ms _ _ <<<"$(measured purge_now contiguous db -c "SELECT FROM ttl_expire_now('purge_now')" -c "SELECT bench_drain_ms('purge_now')")"
  result "  ttl_expire_now(), one call, contiguous" "$(per_s "$c_ms")" "(see naive)" "" "(information)"
  set_guc fsync off
  db -c "ALTER SYSTEM RESET synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
fi

# Case 1b: archive_to (docs/archive.md): the worker moving expired rows into an archive table
# (id, doc, archived_at DEFAULT now()) against the hand loop moving them the same way, at equal
# batch size and settings (fsync and synchronous_commit on for both, each after a CHECKPOINT,
# timed by bench_clock from the first batch to the last):
#   hand loop   CALL archive_by_hand(tbl, archive, batch) (bench/setup.sql):
#               WITH gone AS (DELETE FROM tbl WHERE ctid = ANY (ARRAY(SELECT ctid … ORDER BY
#               <reference> LIMIT batch FOR UPDATE SKIP LOCKED)) AND <expired> RETURNING id, doc)
#               INSERT INTO archive (id, doc) SELECT id, doc FROM gone; COMMIT; until nothing is left
# in the interleaved layout, the loop at each batch size against the worker at that fixed size
# (batch_time = 0, jsonb_ttl.synchronous_commit on), then the worker at its defaults; WAL per
# row beside each, and what archiving adds to the worker's plain delete.
if wanted archive; then
  n=$(rows 400000); expired=$((n / 2))
  worker_settings
  set_guc fsync on
  set_guc synchronous_commit on
  wal() { db -c "SELECT wal_bytes FROM pg_stat_wal"; }
  per_s() { awk -v r="$expired" -v ms="$1" 'BEGIN {printf "%.0f rows/s", r / ms * 1000}'; }
  per_row() { awk -v r="$expired" -v b="$1" 'BEGIN {printf "%.0f B/row", b / r}'; }
  # archived NAME ARCHIVE? COMMAND…: a fresh table NAME (interleaved), with an archive table
  # NAME_archive when ARCHIVE is yes (the TTL index archiving into it), then COMMAND (prints the
  # drain time in ms); prints: ms wal_bytes archived_rows.
  archived() {
    local name=$1 archive=$2 w0 w1 ms moved
    shift 2
    db -c "CALL bench_table('$name', $n, $expired, 'interleaved')"        -c "CREATE TABLE ${name}_archive (id bigint, doc jsonb, archived_at timestamptz NOT NULL DEFAULT now())" >/dev/null
    [ "$archive" = yes ] && db -c "SELECT FROM ttl_index_alter('$name', archive_to => '${name}_archive')" >/dev/null
    db -c "VACUUM ANALYZE $name" -c "CHECKPOINT"
    w0=$(wal)
    ms=$("$@" | tail -1)
    w1=$(wal)
    moved=$(db -c "SELECT count(*) FROM ${name}_archive")
    db -c "DROP TABLE $name, ${name}_archive"
    echo "$ms $((w1 - w0)) $moved"
  }
  archive_loop_ms() { db -c "CALL archive_by_hand('$1', '$1_archive', $2)" -c "SELECT bench_drain_ms('$1')"; }
  set_guc jsonb_ttl.batch_time 0
  set_guc jsonb_ttl.synchronous_commit on
  for batch in $PURGE_BATCHES; do
    set_guc jsonb_ttl.batch_size $batch
    read -r w_ms w_bytes w_moved <<<"$(archived arch_worker yes worker_drain_ms arch_worker)"
    read -r h_ms h_bytes h_moved <<<"$(archived arch_hand no archive_loop_ms arch_hand "$batch")"
    read -r p_ms p_bytes _ <<<"$(archived arch_plain no worker_drain_ms arch_plain)"
    result "archive $expired of $n, interleaved, batch $batch" "$(per_s "$w_ms")" "$(per_s "$h_ms")" "$(ratio "$h_ms" "$w_ms")" ">= 1.00x the hand loop"
    result "  rows archived: worker | hand loop" "$w_moved" "$h_moved" "" "both $expired"
    result "  WAL: worker | hand loop" "$(per_row "$w_bytes")" "$(per_row "$h_bytes")" "$(ratio "$w_bytes" "$h_bytes")" "<= 1.00x the hand loop"
    result "  worker archiving | worker deleting only" "$(per_s "$w_ms")" "$(per_s "$p_ms")" "$(ratio "$p_ms" "$w_ms")" "(information: the INSERT's cost)"
  done
  db -c "ALTER SYSTEM RESET jsonb_ttl.batch_size" -c "ALTER SYSTEM RESET jsonb_ttl.batch_time" \
     -c "ALTER SYSTEM RESET jsonb_ttl.synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
  read -r d_ms d_bytes _ <<<"$(archived arch_worker yes worker_drain_ms arch_worker)"
  result "  worker at its defaults | hand loop, batch ${PURGE_BATCHES##* }" "$(per_s "$d_ms")" "$(per_s "$h_ms")" "$(ratio "$h_ms" "$d_ms")" "(information)"
  set_guc fsync off
  db -c "ALTER SYSTEM RESET synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
fi

# Case 1c: field TTLs (docs/field_ttl.md): the worker removing an expired one-time code from half
# the documents of a table (UPDATE … SET doc = doc #- '{otp}', the documents stay) against the
# hand loop running the same UPDATE, at equal batch size and settings (fsync and
# synchronous_commit on for both, each after a CHECKPOINT, timed by bench_clock from the first
# batch to the last):
#   hand loop   CALL field_by_hand(tbl, batch) (bench/setup.sql):
#               UPDATE tbl SET doc = doc #- '{otp}' WHERE ctid = ANY (ARRAY(SELECT ctid … ORDER BY
#               <otp.at> LIMIT batch FOR UPDATE SKIP LOCKED)) AND <otp.at expired>; COMMIT;
#               until nothing is left
# in the interleaved layout, the loop at each batch size against the worker at that fixed size
# (batch_time = 0, jsonb_ttl.synchronous_commit on), WAL per document beside each.
if wanted field; then
  n=$(rows 400000); expired=$((n / 2))
  worker_settings
  set_guc fsync on
  set_guc synchronous_commit on
  wal() { db -c "SELECT wal_bytes FROM pg_stat_wal"; }
  per_s() { awk -v r="$expired" -v ms="$1" 'BEGIN {printf "%.0f docs/s", r / ms * 1000}'; }
  per_row() { awk -v r="$expired" -v b="$1" 'BEGIN {printf "%.0f B/doc", b / r}'; }
  still_expired="SELECT count(*) FROM %s WHERE ttl_timestamp(doc -> 'otp' -> 'at') < now() - interval '1 hour'"
  # fielded NAME COMMAND…: a fresh table NAME with its field TTL, then COMMAND (prints the drain
  # time in ms); prints: ms wal_bytes codes_left
  fielded() {
    local name=$1 w0 w1 ms left
    shift
    db -c "CALL bench_field_table('$name', $n, $expired)" -c "VACUUM ANALYZE $name" -c "CHECKPOINT" >/dev/null
    w0=$(wal)
    ms=$("$@" | tail -1)
    w1=$(wal)
    left=$(db -c "$(printf "$still_expired" "$name")")
    db -c "DROP TABLE $name"
    echo "$ms $((w1 - w0)) $left"
  }
  field_worker_ms() {  # as worker_drain_ms, on the field's date
    set_guc jsonb_ttl.enabled on
    until [ "$(db -c "SELECT count(*) = 0 FROM (SELECT 1 FROM $1 WHERE ttl_timestamp(doc -> 'otp' -> 'at') < now() - interval '1 hour' ORDER BY ttl_timestamp(doc -> 'otp' -> 'at') LIMIT 1) t")" = t ]; do
      sleep 0.2
    done
    sleep 0.3
    set_guc jsonb_ttl.enabled off
    db -c "SELECT bench_drain_ms('$1')"
  }
  field_loop_ms() { db -c "CALL field_by_hand('$1', $2)" -c "SELECT bench_drain_ms('$1')"; }
  set_guc jsonb_ttl.batch_time 0
  set_guc jsonb_ttl.synchronous_commit on
  for batch in $PURGE_BATCHES; do
    set_guc jsonb_ttl.batch_size $batch
    read -r w_ms w_bytes w_left <<<"$(fielded field_worker field_worker_ms field_worker)"
    read -r h_ms h_bytes h_left <<<"$(fielded field_hand field_loop_ms field_hand "$batch")"
    result "field TTL: $expired of $n codes, interleaved, batch $batch" "$(per_s "$w_ms")" "$(per_s "$h_ms")" "$(ratio "$h_ms" "$w_ms")" ">= 1.00x the hand loop"
    result "  expired codes left: worker | hand loop" "$w_left" "$h_left" "" "both 0"
    result "  WAL: worker | hand loop" "$(per_row "$w_bytes")" "$(per_row "$h_bytes")" "$(ratio "$w_bytes" "$h_bytes")" "<= 1.00x the hand loop"
  done
  db -c "ALTER SYSTEM RESET jsonb_ttl.batch_size" -c "ALTER SYSTEM RESET jsonb_ttl.batch_time" \
     -c "ALTER SYSTEM RESET jsonb_ttl.synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
  set_guc fsync off
  db -c "ALTER SYSTEM RESET synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
fi

# Case 3: insert overhead: pgbench inserting documents into a table with the TTL index, against
# the same table with a btree on a timestamptz column holding the same instant.
if wanted insert; then
  db <<'SQL'
CREATE TABLE ins_ttl (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('ins_ttl', 'creationDate', interval '1 hour');
CREATE TABLE ins_base (id bigserial PRIMARY KEY, doc jsonb NOT NULL, created timestamptz);
CREATE INDEX ON ins_base (created);
SQL
  cat >"$ROOT/build/bench-ins-ttl.sql" <<'SQL'
\set uid random(1, 1000)
INSERT INTO ins_ttl (doc) VALUES (jsonb_build_object('creationDate', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'user', 'user-' || :uid, 'session', md5(:uid::text), 'payload', repeat('x', 60)));
SQL
  cat >"$ROOT/build/bench-ins-base.sql" <<'SQL'
\set uid random(1, 1000)
INSERT INTO ins_base (doc, created) SELECT jsonb_build_object('creationDate', to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'user', 'user-' || :uid, 'session', md5(:uid::text), 'payload', repeat('x', 60)), t FROM clock_timestamp() t;
SQL
  tps() { pgbench -n -c 2 -j 2 -T "$(secs 15)" -f "$1" bench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
  # alternate the two, twice, and keep the better of each (the machine is noisy)
  t1=$(tps "$ROOT/build/bench-ins-ttl.sql"); b1=$(tps "$ROOT/build/bench-ins-base.sql")
  t2=$(tps "$ROOT/build/bench-ins-ttl.sql"); b2=$(tps "$ROOT/build/bench-ins-base.sql")
  ttl=$(printf '%s\n%s\n' "$t1" "$t2" | sort -g | tail -1); base=$(printf '%s\n%s\n' "$b1" "$b2" | sort -g | tail -1)
  result "insert throughput, pgbench -c 2 (tps)" "${ttl%.*}" "${base%.*}" "$(ratio "$ttl" "$base")" ">= 0.95x a btree on timestamptz"
  # The same documents in a json column (read as jsonb by the index expression), and the same
  # instant as a text column (ttl_text_timestamp), against the same baseline.
  db <<'SQL'
CREATE TABLE ins_json (id bigserial PRIMARY KEY, doc json NOT NULL);
SELECT FROM ttl_index_create('ins_json', 'doc.creationDate', interval '1 hour');
CREATE TABLE ins_text (id bigserial PRIMARY KEY, doc jsonb NOT NULL, created text);
SELECT FROM ttl_index_create('ins_text', 'created', interval '1 hour');
SQL
  cat >"$ROOT/build/bench-ins-json.sql" <<'SQL'
\set uid random(1, 1000)
INSERT INTO ins_json (doc) VALUES (json_build_object('creationDate', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'user', 'user-' || :uid, 'session', md5(:uid::text), 'payload', repeat('x', 60)));
SQL
  cat >"$ROOT/build/bench-ins-text.sql" <<'SQL'
\set uid random(1, 1000)
INSERT INTO ins_text (doc, created) SELECT jsonb_build_object('creationDate', c, 'user', 'user-' || :uid, 'session', md5(:uid::text), 'payload', repeat('x', 60)), c FROM to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') c;
SQL
  j1=$(tps "$ROOT/build/bench-ins-json.sql"); x1=$(tps "$ROOT/build/bench-ins-text.sql"); b3=$(tps "$ROOT/build/bench-ins-base.sql")
  j2=$(tps "$ROOT/build/bench-ins-json.sql"); x2=$(tps "$ROOT/build/bench-ins-text.sql"); b4=$(tps "$ROOT/build/bench-ins-base.sql")
  best() { printf '%s\n' "$@" | sort -g | tail -1; }
  json=$(best "$j1" "$j2"); text=$(best "$x1" "$x2"); base2=$(best "$b3" "$b4")
  result "  TTL on a json column (tps)" "${json%.*}" "${base2%.*}" "$(ratio "$json" "$base2")" "(information)"
  result "  TTL on a text column (tps)" "${text%.*}" "${base2%.*}" "$(ratio "$text" "$base2")" "(information)"
  db -c "DROP TABLE ins_ttl, ins_base, ins_json, ins_text"
fi

# Case 3b: insert overhead of the options that work on every write: touch (a BEFORE trigger
# rewrites the document) and a per-row TTL field (a second partial index; half the documents
# carry a ttl), against the plain TTL index, with the same documents.
if wanted options; then
  db <<'SQL'
CREATE TABLE opt_plain (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('opt_plain', 'creationDate', interval '1 hour');
CREATE TABLE opt_touch (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('opt_touch', 'creationDate', interval '1 hour', touch => true);
CREATE TABLE opt_row (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('opt_row', 'creationDate', interval '1 hour', row_ttl_path => 'ttl');
SQL
  for t in plain touch row; do
    cat >"$ROOT/build/bench-opt-$t.sql" <<SQL
\set uid random(1, 1000)
INSERT INTO opt_$t (doc) VALUES (jsonb_build_object('creationDate', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'user', 'user-' || :uid, 'session', md5(:uid::text), 'payload', repeat('x', 60)) || CASE WHEN :uid % 2 = 0 THEN jsonb_build_object('ttl', :uid) ELSE '{}' END);
SQL
  done
  otps() { pgbench -n -c 2 -j 2 -T "$(secs 15)" -f "$ROOT/build/bench-opt-$1.sql" bench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
  p1=$(otps plain); t1=$(otps touch); r1=$(otps row)
  p2=$(otps plain); t2=$(otps touch); r2=$(otps row)
  best() { printf '%s\n' "$@" | sort -g | tail -1; }
  plain=$(best "$p1" "$p2"); touch=$(best "$t1" "$t2"); row=$(best "$r1" "$r2")
  result "insert with touch => true (tps)" "${touch%.*}" "${plain%.*}" "$(ratio "$touch" "$plain")" "(information: vs the plain TTL index)"
  result "insert with row_ttl_path (tps)" "${row%.*}" "${plain%.*}" "$(ratio "$row" "$plain")" "(information: vs the plain TTL index)"
  db -c "DROP TABLE opt_plain, opt_touch, opt_row"
fi

# Case 3c: dropping whole partitions: the worker removes the same expired rows (5 day
# partitions of 100k rows, beside a current one of 100k live rows) by dropping their
# partitions (drop_partitions => 'drop'), against deleting them row by row (its default
# batches), each timed from its first statement to its last (bench_clock: DELETE statements,
# DROP TABLE commands).
if wanted partitions; then
  parts=5; per_part=$(rows 100000); live=$(rows 100000)
  worker_settings
  expired_left() { db -c "SELECT count(*) FROM (SELECT 1 FROM parted WHERE created_at < now() - interval '1 day' LIMIT 1) t"; }
  # makes the table (dropping its partitions when $1), lets the worker remove what expired
  drain() {
    db -c "CALL bench_partitioned('parted', $parts, $per_part, $live, $1)" -c "CHECKPOINT"
    set_guc jsonb_ttl.enabled on
    until [ "$(expired_left)" = 0 ]; do sleep 0.1; done
    sleep 0.3
    set_guc jsonb_ttl.enabled off
  }
  drain true
  statement_ms=$(db -c "SELECT bench_span_ms()")
  # The drop clock stops at the end of the DROP TABLE, before its commit, which does much of
  # the work (it scans shared_buffers for the pages of the dropped tables, and truncates their
  # files). The worker logs each partition after that commit: the figure runs from the drop's
  # start to that line, by the server's clock.
  logged=$(grep 'jsonb_ttl: dropped partition public.parted_old_' "$(scripts/cluster.sh dir "$NAME")/server.log" | tail -1 | cut -c1-27)
  dropped=$(db -c "SELECT round(extract(epoch FROM '$logged'::timestamptz - min(first_batch)) * 1000) FROM bench_clock WHERE tbl = 'drops'")
  db -c "DROP TABLE parted"
  drain false
  deleted=$(db -c "SELECT bench_span_ms()")
  # the deleted rows are dead tuples still, in the heap and in every index: the VACUUM that
  # removes them is part of what a row delete costs (a dropped partition needs none)
  vacuum_ms=$(db -c '\timing on' -c "VACUUM parted" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | cut -d. -f1)
  db -c "DROP TABLE parted"
  result "remove $((parts * per_part)) expired rows: drop partitions vs delete rows (ms)" "$dropped" "$deleted" "$(ratio "$deleted" "$dropped")" ">= 20x faster than row deletes"
  result "  the DROP TABLE alone, without its commit (ms)" "$statement_ms" "$deleted" "$(ratio "$deleted" "$statement_ms")" "(information)"
  result "  row deletes and the VACUUM they need (ms)" "$dropped" "$((deleted + vacuum_ms))" "$(ratio $((deleted + vacuum_ms)) "$dropped")" "(information)"
fi

# Case 4: expiry lag under a steady insert stream; rows expire 2 s after insert. The lag of a
# row is now() - (reference + expire_after) when its DELETE fires.
if wanted lag; then
  frequency=1000
  worker_settings
  set_guc jsonb_ttl.frequency $frequency
  db <<'SQL'
CREATE TABLE lag_events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('lag_events', 'creationDate', interval '2 seconds');
CREATE UNLOGGED TABLE lag_log (lag interval);
CREATE FUNCTION log_lag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.lag_log VALUES (clock_timestamp() - (public.ttl_timestamp(OLD.doc -> 'creationDate') + interval '2 seconds'));
  RETURN OLD;
END $$;
CREATE TRIGGER log_lag AFTER DELETE ON lag_events FOR EACH ROW EXECUTE FUNCTION log_lag();
SQL
  cat >"$ROOT/build/bench-lag.sql" <<'SQL'
INSERT INTO lag_events (doc) VALUES (jsonb_build_object('creationDate', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'payload', repeat('x', 150)));
SQL
  set_guc jsonb_ttl.enabled on
  rate=$(rows 10000)
  actual=$(pgbench -n -c 2 -j 2 -R "$rate" -T "$(secs 20)" -f "$ROOT/build/bench-lag.sql" bench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  sleep 4
  set_guc jsonb_ttl.enabled off
  read -r p50 p99 max removed < <(db -F ' ' -c "SELECT round(extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY lag)) * 1000),
                                                   round(extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY lag)) * 1000),
                                                   round(extract(epoch FROM max(lag)) * 1000), count(*) FROM lag_log")
  result "expiry lag p50, ${actual%.*} inserts/s (ms)" "$p50" "$((frequency + 1000))" "$(ratio "$p50" $((frequency + 1000)))" "(information)"
  result "expiry lag p99 (ms)" "$p99" "$((frequency + 1000))" "$(ratio "$p99" $((frequency + 1000)))" "<= 1.00x frequency + 1 s"
  result "expiry lag max, $removed rows (ms)" "$max" "$((frequency + 1000))" "$(ratio "$max" $((frequency + 1000)))" "(information)"
  db -c "DROP TABLE lag_events, lag_log" -c "DROP FUNCTION log_lag()"
fi

# Case 5: foreground impact: pgbench's TPC-B-like TPS with no backlog, against TPS while the
# worker drains a 1M-row backlog under max_removes_per_second.
if wanted impact; then
  n=$(rows 1000000); rps=10000
  pgbench -i -q -s 10 bench >/dev/null 2>&1
  db -c "CALL bench_table('backlog', $n, $n)" -c "VACUUM ANALYZE backlog" -c "CHECKPOINT"
  worker_settings
  set_guc jsonb_ttl.max_removes_per_second $rps
  tpcb() { pgbench -n -c 2 -j 2 -T "${1:-$(secs 20)}" bench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
  tpcb 5 >/dev/null   # warm-up, discarded
  quiet1=$(tpcb)
  set_guc jsonb_ttl.enabled on
  sleep 1
  before=$(db -c "SELECT count(*) FROM backlog")
  busy=$(tpcb)
  after=$(db -c "SELECT count(*) FROM backlog")
  set_guc jsonb_ttl.enabled off
  set_guc jsonb_ttl.max_removes_per_second 0
  sleep 1
  quiet2=$(tpcb)   # the baseline is the mean of the runs before and after: drift cancels
  quiet=$(awk -v a="$quiet1" -v b="$quiet2" 'BEGIN {printf "%.1f", (a + b) / 2}')
  drained=$(( (before - after) / $(secs 20) ))
  result "TPC-B tps while draining at <= $rps rows/s" "${busy%.*}" "${quiet%.*}" "$(ratio "$busy" "$quiet")" ">= 0.90x with no backlog"
  result "  rows/s removed meanwhile" "$drained" "$rps" "$(ratio "$drained" "$rps")" "(information)"
  result "  no-backlog runs before / after (tps)" "${quiet1%.*}" "${quiet2%.*}" "$(ratio "$quiet1" "$quiet2")" "(information: the noise)"
  db -c "DROP TABLE backlog"
fi

# Case 6a: growth: per-row purge cost of the same 100k expired rows in tables of 1M and 10M,
# drained by the worker.
if wanted growth; then
  expired=$(rows 100000)
  worker_settings
  per_row_us() {
    local n=$1 ms
    db -c "CALL bench_table('growth', $n, $expired)" -c "VACUUM ANALYZE growth" -c "CHECKPOINT"
    ms=$(worker_drain_ms growth)
    db -c "DROP TABLE growth"
    awk -v ms="$ms" -v r="$expired" 'BEGIN {printf "%.2f", ms * 1000 / r}'
  }
  small=$(per_row_us "$(rows 1000000)")
  large=$(per_row_us "$(rows 10000000)")
  result "purge cost per row, 100k of 10M vs of 1M (us)" "$large" "$small" "$(ratio "$large" "$small")" "0.80x .. 1.20x (flat)"
fi

# Case 6b: idle passes over many TTL tables with nothing expired (issue 24: 10,000 tables in
# <= 100 ms), as ttl_statistics() reports them: last_pass_ms, the median of 3 passes after the
# first (which prepares each table's probe), at 1,000 and at 10,000 tables of one row each
# (`CREATE TABLE idle_<i> (doc jsonb)`, one row dated 2999, `ttl_index_create(..., 'creationDate',
# interval '1 hour')`). Baseline, the floor: one `EXECUTE format('SELECT 1 FROM %I LIMIT 1',
# 'idle_' || i)` per table in a PL/pgSQL loop (committing every 1000 tables, as the probe does),
# the cheapest per-table statement a hand-written checker could run.
if wanted idle; then
  idle_tables() {  # idle_tables FROM TO: creates idle_FROM..idle_TO, committing every 200
    db -c "DO \$\$ BEGIN FOR i IN $1..$2 LOOP
             EXECUTE format('CREATE TABLE idle_%s (doc jsonb)', i);
             EXECUTE format('INSERT INTO idle_%s VALUES (''{\"creationDate\": \"2999-01-01\"}'')', i);
             PERFORM ttl_index_create(format('idle_%s', i), 'creationDate', interval '1 hour');
             IF i % 200 = 0 THEN COMMIT; END IF;
           END LOOP; END \$\$"
  }
  idle_floor_ms() {  # the floor over the first $1 tables (ms)
    db -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
             FOR i IN 1..$1 LOOP
               EXECUTE format('SELECT 1 FROM %I LIMIT 1', 'idle_' || i);
               IF i % 1000 = 0 THEN COMMIT; END IF;
             END LOOP;
             RAISE WARNING '%', round((extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric, 1);
           END \$\$" 2>&1 | sed -n 's/.*WARNING: *//p'
  }
  idle_pass_ms() {  # the median last_pass_ms of 3 passes after the first
    local runs seen=() r
    set_guc jsonb_ttl.frequency 2000
    db -c "SELECT ttl_stats_reset()" >/dev/null
    set_guc jsonb_ttl.enabled on
    runs=0
    while [ ${#seen[@]} -lt 3 ]; do
      sleep 0.5
      r=$(db -c "SELECT runs || ' ' || round(last_pass_ms::numeric, 1) FROM ttl_statistics()")
      if [ "${r% *}" -gt "$runs" ]; then
        [ "$runs" -ge 1 ] && seen+=("${r#* }")
        runs=${r% *}
      fi
    done
    set_guc jsonb_ttl.enabled off
    printf '%s\n' "${seen[@]}" | sort -g | sed -n 2p
  }
  exporter_scrape_ms() {  # exporter_scrape_ms [QUERIES]: the median of 5 scrapes after a first (ms)
    local port=$((PORT + 100)) pid times=() queries=()
    [ -z "${1:-}" ] || queries=(--extend.query-path="$1")
    DATA_SOURCE_NAME="host=$SOCK port=$PORT user=postgres dbname=bench sslmode=disable" \
      prometheus-postgres-exporter --web.listen-address="127.0.0.1:$port" "${queries[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
    for _ in $(seq 5); do
      times+=("$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/metrics")")
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
    printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR] = $1 * 1000} END {printf "%.1f", a[int((NR + 1) / 2)]}'
  }
  idle_tables 1 1000
  floor=$(idle_floor_ms 1000); pass=$(idle_pass_ms)
  result "idle pass over 1,000 TTL tables (ms)" "$pass" "$floor" "$(ratio "$pass" "$floor")" "<= 50 ms (vs a SELECT 1 per table)"
  # ttl_stats as a dashboard reads it, at PostgreSQL's default jit = on (its own settings turn
  # JIT off where it pays): planning and execution, against pg_stat_user_tables over the same
  # tables, the view an operator reads beside it
  db -c "VACUUM ANALYZE" >/dev/null
  stats=$(time_query_jit_on "SELECT * FROM ttl_stats")
  base=$(time_query_jit_on "SELECT * FROM pg_stat_user_tables WHERE relname LIKE 'idle\\_%'")
  result "SELECT * FROM ttl_stats, 1,000 TTL tables, new session (ms)" "$stats" "$base" "$(ratio "$stats" "$base")" "< 10 ms, no JIT (vs pg_stat_user_tables)"
  stats=$(time_query_jit_on "SELECT * FROM ttl_stats" warm)
  base=$(time_query_jit_on "SELECT * FROM pg_stat_user_tables WHERE relname LIKE 'idle\\_%'" warm)
  result "SELECT * FROM ttl_stats, 1,000 TTL tables, warm session (ms)" "$stats" "$base" "$(ratio "$stats" "$base")" "< 10 ms, no JIT (vs pg_stat_user_tables)"
  # The exporter's scrape (0.3.0: 17.9 s at 33 TTL tables, past Prometheus's 10 s timeout):
  # Debian's prometheus-postgres-exporter with monitoring/postgres_exporter.yaml, against the same
  # exporter with its own metrics only (pg_stat_database, pg_stat_bgwriter, pg_up…), both at
  # PostgreSQL's default jit = on
  set_guc jit on
  scrape=$(exporter_scrape_ms "$ROOT/monitoring/postgres_exporter.yaml")
  own=$(exporter_scrape_ms)
  set_guc jit off
  result "exporter scrape, 1,000 TTL tables (ms)" "$scrape" "$own" "$(ratio "$scrape" "$own")" "< 1000 ms (vs its own metrics only)"
  idle_tables 1001 10000
  floor=$(idle_floor_ms 10000); pass=$(idle_pass_ms)
  result "idle pass over 10,000 TTL tables (ms)" "$pass" "$floor" "$(ratio "$pass" "$floor")" "<= 100 ms (vs a SELECT 1 per table)"
  result "  ttl_stats rows after those passes" "$(db -c "SELECT count(*) FROM ttl_stats WHERE runs > 0")" "10000" "" "one per TTL table"
  db -c "DO \$\$ BEGIN FOR i IN 1..10000 LOOP EXECUTE format('DROP TABLE idle_%s', i); IF i % 20 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
fi

# Case 6d: 100 databases on jsonb_ttl.max_workers = 4 (issue 24): the largest gap between two
# passes of one database, against the bound frequency x ceil(100 / 4), frequency 500 ms. Runs
# bench/rotation_gap.sh (its own cluster, this bench's port + 36; its method is described
# there: the gap read can only be too large), about a minute.
if wanted rotation; then
  line=$(E2E_PORT_OFFSET=$((PORT - 28817)) bench/rotation_gap.sh 2>&1 | grep 'largest gap between' || true)
  most=$(echo "$line" | sed -n 's/.*database: \([0-9]*\) ms.*/\1/p')
  bound=$(echo "$line" | sed -n 's/.* = \([0-9]*\) ms;.*/\1/p')
  mean=$(echo "$line" | sed -n 's/.*mean \([0-9]*\) ms.*/\1/p')
  result "largest gap between passes, 100 dbs, 4 workers (ms)" "${most:-?}" "${bound:-?}" "$(ratio "${most:-0}" "${bound:-1}")" "<= frequency x ceil(100 / 4)"
  result "  mean interval between passes of a database (ms)" "${mean:-?}" "500" "" "(information: frequency 500 ms)"
fi

# Batch sizing: the worker's drain of the same expired rows with fixed batches (batch_time = 0)
# of several sizes, against its default settings (batches sized to take batch_time, up to
# batch_size). Informs the defaults.
if wanted batch; then
  n=$(rows 500000)
  worker_settings
  drain_of() {
    db -c "CALL bench_table('batches', $n, $n)" -c "VACUUM ANALYZE batches" -c "CHECKPOINT"
    worker_drain_ms batches
    db -c "DROP TABLE batches"
  }
  sized=$(drain_of)
  declare -A drain
  set_guc jsonb_ttl.batch_time 0
  for b in 1000 10000 50000; do
    set_guc jsonb_ttl.batch_size $b
    drain[$b]=$(drain_of)
  done
  db -c "ALTER SYSTEM RESET jsonb_ttl.batch_size" -c "ALTER SYSTEM RESET jsonb_ttl.batch_time" -c "SELECT pg_reload_conf()" >/dev/null
  for b in 1000 10000 50000; do
    result "worker drain of $n rows, fixed batches of $b (ms)" "${drain[$b]}" "$sized" "$(ratio "${drain[$b]}" "$sized")" "(vs the default sizing)"
  done
fi

# Citus (issue 23): jsonb_ttl's purge on a coordinator and two worker nodes, against the DELETE
# pushed down through the coordinator and against one node; its own servers and its own summary
# (bench/citus.sh).
if wanted citus; then
  echo
  bench/citus.sh --scale "$SCALE"
fi

# Steady state (issue 24): 10,000 rows/s into a table of ~1M live rows, each side in its own
# run on its own cluster: jsonb_ttl (JSON path at 10 s and 1 s, timestamptz column,
# drop_partitions) against pg_cron's DELETE every minute, the same DELETE from a loop every 10 s
# and every 1 s, and pg_partman's retention (bench/steady.sh: the exact SQL of each side).
if wanted steady; then
  echo
  bench/steady.sh
fi

echo
echo "Summary ($(date -u +%Y-%m-%d), $(nproc) cores, scale $SCALE):"
printf '%s\n' "${RESULTS[@]}"
