#!/usr/bin/env bash
# make bench: performance figures for jsonb_ttl, each as a ratio against a baseline measured in
# the same run on the same cluster. Exits non-zero only when the benchmark could not run.
#   bench/run.sh [--rows N] [--repeat K]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=$(/usr/lib/postgresql/15/bin/pg_config --bindir)
NAME=bench
PORT=${BENCH_PORT:-28817}
ROWS=1000000
REPEAT=5
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    *) echo "usage: $0 [--rows N] [--repeat K]" >&2; exit 2 ;;
  esac
done
cd "$ROOT"

SETTINGS=("shared_buffers = '2GB'" "max_parallel_workers_per_gather = 0" "jit = off" "work_mem = '64MB'")
scripts/cluster.sh destroy "$NAME"
trap 'scripts/cluster.sh destroy "$NAME"' EXIT
scripts/cluster.sh start "$NAME" "$PORT" "${SETTINGS[@]}"
psql() { "$PGBIN/psql" -h "$(scripts/cluster.sh dir "$NAME")/sock" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -d postgres -c "CREATE DATABASE bench"
db() { psql -d bench "$@"; }

echo "jsonb_ttl bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $("$PGBIN/postgres" --version)"
echo "rows: $ROWS, repeat: $REPEAT (median), settings: ${SETTINGS[*]}"
db -c "CREATE EXTENSION jsonb_ttl"
# ~200-byte documents with an ISO-8601 creationDate, half in the past.
db <<SQL
CREATE TABLE docs (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO docs (doc)
SELECT jsonb_build_object(
  'creationDate', to_char(timestamptz '2026-01-01' + (g - $ROWS / 2) * interval '1 second',
                          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'user', 'user-' || (g % 1000),
  'session', md5(g::text),
  'payload', repeat('x', 60),
  'n', g)
FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE docs;
DO \$\$ BEGIN PERFORM count(*) FROM docs; END \$\$;  -- warm the cache
SQL
echo "average document: $(db -Atc "SELECT round(avg(pg_column_size(doc))) FROM docs") bytes"

# Median execution time in ms of a query, over REPEAT runs.
time_ms() {
  local q=$1 times=()
  for _ in $(seq "$REPEAT"); do
    times+=("$(db -Atc "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $q" | sed -n 's/.*"Execution Time": \([0-9.]*\).*/\1/p')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

ROWS_OUT=()
row() { ROWS_OUT+=("$(printf '%-34s %14s %14s %8s %s' "$@")"); }

# Case 2: parser cost. Each figure subtracts the cost of extracting the value alone, so the
# ratio compares ttl_timestamp with the timestamptz cast, not with jsonb access.
json_base=$(time_ms "SELECT count(doc -> 'creationDate') FROM docs")
parser=$(time_ms "SELECT count(ttl_timestamp(doc -> 'creationDate')) FROM docs")
text_base=$(time_ms "SELECT count(doc ->> 'creationDate') FROM docs")
cast=$(time_ms "SELECT count((doc ->> 'creationDate')::timestamptz) FROM docs")
parser_cost=$(awk -v a="$parser" -v b="$json_base" 'BEGIN {printf "%.1f", a - b}')
cast_cost=$(awk -v a="$cast" -v b="$text_base" 'BEGIN {printf "%.1f", a - b}')
ratio=$(awk -v a="$parser_cost" -v b="$cast_cost" 'BEGIN {printf "%.2fx", a / b}')
whole=$(awk -v a="$parser" -v b="$cast" 'BEGIN {printf "%.2fx", a / b}')
row "case" "jsonb_ttl (ms)" "baseline (ms)" "ratio" "target"
row "parser cost, ${ROWS} rows" "$parser_cost" "$cast_cost" "$ratio" "<= 0.50x the ::timestamptz cast"
row "  whole query incl. jsonb access" "$parser" "$cast" "$whole" "(information)"

echo
printf '%s\n' "${ROWS_OUT[@]}"
