#!/usr/bin/env bash
# make bench, the citus case (issue 23): jsonb_ttl's purge of a hash-distributed table on a
# Citus cluster (a coordinator and two worker nodes, tests/e2e/citus_lib.sh), against the DELETE
# a Citus user runs today through the coordinator, and against jsonb_ttl on one plain server.
# Every figure is a ratio against a baseline measured in the same run.
#   bench/citus.sh [--scale F] [--rounds R]     (bench/run.sh --only citus passes its --scale)
#     --scale F    multiplies the data (default 1: 1,000,000 rows, half expired)
#     --rounds R   purges of each side, alternating, each of a fresh copy; the summary takes each
#                  side's median (default 3; about 2 minutes at scale 1 on 2 cores)
#
# The data, as in the purge case of bench/run.sh: documents of ~200 bytes (bench_doc below, the
# same as bench/setup.sql's) with an ISO-8601 creationDate, expired rows (two days old, under a
# 1-hour TTL) interleaved 50 % with live ones (in the future), in `events (id bigint PRIMARY KEY,
# doc jsonb)` with its TTL index (ttl_index_create('events', 'creationDate', interval '1 hour')).
# On Citus the table is distributed by id over Citus's default 32 shards, 16 on each worker node.
# Each purge starts from a fresh copy (TRUNCATE events, INSERT INTO events SELECT * FROM
# events_src: the same rows in the same order, in new files; REINDEX TABLE events), VACUUM
# ANALYZEd, after a CHECKPOINT on every server. The three sides:
#   Citus DELETE   DELETE FROM events WHERE ttl_timestamp(doc -> 'creationDate') < now() -
#                  interval '1 hour', once, on the coordinator: Citus pushes it down to every
#                  shard (its adaptive executor runs a node's shards over several connections at
#                  once) and commits it in two phases. It is the TTL index's own expression, so
#                  each shard's planner may use that index (the plan it chose is printed);
#   jsonb_ttl      each worker node's jsonb_ttl worker purging the placements it holds, in
#   (cluster)      batches (default batch settings);
#   jsonb_ttl      the worker of a plain PostgreSQL server (no Citus) with the same rows.
#   (one node)
# The clock, as bench/run.sh's bench_clock: a statement trigger on every shard (on the table of
# the single server) records, in an unlogged table of its server, each DELETE statement's
# transaction start and the statement's end, so each side is timed from the start of its first
# DELETE to the end of its last, by the servers' clock (one machine, one clock), whoever runs
# them; every side pays the same trigger. Left out by that clock: for the Citus DELETE, its
# planning and its two-phase commit (printed beside it: the statement's time as its client on
# the coordinator sees it); for jsonb_ttl, the worker's wake-up (printed beside it: from the
# reload that turns the workers on until the coordinator sees no expired row, polled every
# 0.2 s through the TTL index). Per worker node and round: the rows it deleted, its DELETE
# statements (jsonb_ttl: its batches), the time from its first to its last, the WAL it wrote
# (pg_current_wal_lsn after minus before): the split of the work.
# The workers run unlimited and wake often: jsonb_ttl.frequency = 10 ms, as in bench/run.sh's
# throughput cases (at 1 s the two nodes' first batches would start up to a second apart, more
# than the purge takes), max_total_removes and max_table_removes 2,000,000,000, the safety brake
# off (max_table_fraction = 1); fsync and synchronous_commit on for every side. The
# coordinator's worker is on only to hand the TTL index on to the worker nodes, before the
# purges: it holds no shard.
# Needs Citus in the server (scripts/citus.sh, a no-op once installed); skips the case without.
# Ports 28870-28872 and 28874, + E2E_PORT_OFFSET (default here 2000: the e2e tests keep the
# default ports); clusters bench-citus-{coord,w1,w2,one} (scripts/cluster.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCALE=1
ROUNDS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: $0 [--scale F] [--rounds R]" >&2; exit 2 ;;
  esac
done
cd "$ROOT"

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
if ! scripts/citus.sh "$major"; then
  echo "citus: skipped (no Citus in PostgreSQL $major, and scripts/citus.sh $major could not install it)"
  exit 0
fi

export E2E_CITUS=1 E2E_PORT_OFFSET=${E2E_PORT_OFFSET:-2000} CITUS_DB=bench
# shellcheck source=tests/e2e/citus_lib.sh
source "$ROOT/tests/e2e/citus_lib.sh"
citus_cluster() { echo "bench-citus-$1"; }  # not the e2e tests' clusters, which may be running
ONE=bench-citus-one
CITUS_PORT[one]=$((28874 + E2E_PORT_OFFSET))
CITUS_SOCK[one]=$(scripts/cluster.sh dir "$ONE")/sock  # qn one … reaches the single server

n=$(awk -v s="$SCALE" 'BEGIN {printf "%d", 1000000 * s}')
expired=$((n / 2))
EXPIRED="ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'"
DELETE_SQL="DELETE FROM events WHERE $EXPIRED"
# polled while the workers purge: the oldest expired row, through the TTL index (cheap however
# far the purge has gone)
LEFT_SQL="SELECT 1 FROM events WHERE $EXPIRED ORDER BY ttl_timestamp(doc -> 'creationDate') LIMIT 1"
SETTINGS=("shared_buffers = '2GB'" "max_parallel_workers_per_gather = 0" "jit = off"
          "work_mem = '64MB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'"
          "autovacuum = off" "fsync = on" "synchronous_commit = on"
          "jsonb_ttl.enabled = off" "jsonb_ttl.max_table_fraction = 1" "jsonb_ttl.frequency = 10"
          "jsonb_ttl.max_total_removes = 2000000000" "jsonb_ttl.max_table_removes = 2000000000")

echo "citus bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $("$PGBIN/postgres" --version), Citus $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/citus.control")"
echo "scale: $SCALE ($expired expired of $n rows), $ROUNDS round(s); settings of every server: ${SETTINGS[*]}"

DOC_SQL=$(cat "$ROOT/bench/doc.sql")
# The clock of a server that holds rows: one row per DELETE statement on a table of the bench
# (a shard, on a Citus node), its transaction's start and its end. Unlogged: no WAL in the
# figures. Local to its server (Citus propagates none of it).
CLOCK_SQL=$(cat <<'SQL'
CREATE UNLOGGED TABLE bench_batches (tbl text, started timestamptz, ended timestamptz);
CREATE FUNCTION bench_batch_tick() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.bench_batches VALUES (TG_TABLE_NAME, now(), clock_timestamp());
  RETURN NULL;
END $$;
-- the clock on every shard of `tbl` that this node holds (on `tbl` itself, without Citus)
CREATE PROCEDURE bench_clock_on(tbl regclass) LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
  IF EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
    PERFORM set_config('citus.enable_manual_changes_to_shards', 'on', true);
    FOR t IN EXECUTE $q$SELECT shard_name(s.logicalrelid, s.shardid) FROM pg_dist_shard s
                        JOIN pg_dist_placement p USING (shardid)
                        WHERE s.logicalrelid = $1 AND p.shardstate = 1
                          AND p.groupid = (SELECT groupid FROM pg_dist_local_group)$q$ USING tbl LOOP
      EXECUTE format('CREATE TRIGGER bench_clock AFTER DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION public.bench_batch_tick()', t);
    END LOOP;
  ELSE
    EXECUTE format('CREATE TRIGGER bench_clock AFTER DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION public.bench_batch_tick()', tbl);
  END IF;
END $$;
SQL
)
LOAD_SQL="INSERT INTO events_src
SELECT g, bench_doc(g, CASE WHEN g % 2 = 0 THEN now() - interval '2 days' + g * interval '1 ms'
                            ELSE now() + g * interval '1 ms' END)
FROM generate_series(1, $n) g"
TABLES_SQL="CREATE TABLE events_src (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE events (id bigint PRIMARY KEY, doc jsonb NOT NULL);"

db() { qn "$1" bench "${@:2}"; }
guc() {  # guc NODE NAME VALUE: set and reloaded
  db "$1" -c "ALTER SYSTEM SET $2 = '$3'" -c "SELECT pg_reload_conf()" >/dev/null
}
lsn() { db "$1" -c "SELECT pg_current_wal_lsn()"; }
wal_since() { db "$1" -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$2')::bigint"; }
deleted() { db "$1" -c "SELECT rows_deleted FROM ttl_stats WHERE ttl_table = 'events'::regclass"; }
# the clock of NODE: its DELETE statements, the tables (shards) they deleted from, and the epoch
# (s) of the first's start and of the last's end
clock_of() {
  db "$1" -F ' ' -c "SELECT count(*), count(DISTINCT tbl), coalesce(extract(epoch FROM min(started)), 0),
                            coalesce(extract(epoch FROM max(ended)), 0) FROM bench_batches"
}
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", (b - a) * 1000}'; }
# waits until SQL on NODE returns no row (polled every 0.2 s); prints the ms since $2 (now_ms)
until_none() {
  while [ -n "$(db "$1" -c "$3")" ]; do sleep 0.2; done
  echo $(($(now_ms) - $2))
}
# A fresh copy of the rows in events, its indexes built anew (as bench/run.sh's bench_table
# builds the TTL index after the rows: compact), the clock emptied, on the servers "$@" (the
# first runs the SQL).
refill() {
  local node
  db "$1" -c "TRUNCATE events" -c "INSERT INTO events SELECT * FROM events_src" -c "REINDEX TABLE events" \
         -c "VACUUM ANALYZE events"
  for node in "$@"; do [ "$node" = coord ] || db "$node" -c "TRUNCATE bench_batches"; done
}

# ---- the servers: the Citus cluster, and the single one -------------------------------------------
scripts/cluster.sh destroy "$ONE"
start_citus "${SETTINGS[@]}"
cleanup() { local status=$?; stop_citus; scripts/cluster.sh destroy "$ONE"; exit "$status"; }
trap cleanup EXIT
scripts/cluster.sh start "$ONE" "${CITUS_PORT[one]}" "${SETTINGS[@]}"
qn one postgres -c "CREATE DATABASE bench"
create_extension_on one bench
db one -c "$DOC_SQL" -c "$CLOCK_SQL" -c "$TABLES_SQL" -c "$LOAD_SQL" \
       -c "SELECT FROM ttl_index_create('events', 'creationDate', interval '1 hour')" -c "CALL bench_clock_on('events')"

create_extension_on coord
db coord -c "$DOC_SQL" -c "$TABLES_SQL" \
         -c "SELECT FROM create_distributed_table('events_src', 'id')" \
         -c "SELECT FROM create_distributed_table('events', 'id', colocate_with => 'events_src')" \
         -c "$LOAD_SQL" -c "SELECT FROM ttl_index_create('events', 'creationDate', interval '1 hour')"
for node in w1 w2; do
  db "$node" -c "SET citus.enable_ddl_propagation = off" -c "$CLOCK_SQL" -c "CALL bench_clock_on('events')"
done
# The coordinator's worker hands the TTL index on to the worker nodes at its next pass; then it
# is off again (it holds no shard; the nodes keep what it handed on).
guc coord jsonb_ttl.enabled on
for node in w1 w2; do
  deadline=$(($(now_ms) + 60000))
  until [ "$(db "$node" -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass")" = 1 ]; do
    if [ "$(now_ms)" -ge $deadline ]; then echo "citus: the TTL index did not reach $node within 60 s" >&2; exit 1; fi
    sleep 0.1
  done
done
guc coord jsonb_ttl.enabled off
declare -A NODE_OF=([${CITUS_PORT[w1]}]=w1 [${CITUS_PORT[w2]}]=w2)
plan=""

# R[side,what,round]: side del (Citus DELETE), ttl (jsonb_ttl on the cluster), one (one node)
declare -A R LSN0
checkpoint() { local node; for node in "$@"; do db "$node" -c "CHECKPOINT"; LSN0[$node]=$(lsn "$node"); done; }
# after a purge on NODES: each one's WAL, and the clock of each worker node; the side's time
# from the first DELETE on any of them to the last on any
measure() {
  local side=$1 r=$2 node stmts shards first last f0="" l0=""
  shift 2
  for node in "$@"; do R[$side,wal_$node,$r]=$(wal_since "$node" "${LSN0[$node]}"); done
  for node in "$@"; do
    [ "$node" = coord ] && continue
    read -r stmts shards first last <<<"$(clock_of "$node")"
    R[$side,stmts_$node,$r]=$stmts R[$side,shards_$node,$r]=$shards R[$side,ms_$node,$r]=$(ms_between "$first" "$last")
    f0=$(awk -v a="$first" -v b="$f0" 'BEGIN {printf "%.6f", ((b == "" || a < b) ? a : b)}')
    l0=$(awk -v a="$last" -v b="$l0" 'BEGIN {printf "%.6f", ((b == "" || a > b) ? a : b)}')
  done
  R[$side,ms,$r]=$(ms_between "$f0" "$l0")
}

for r in $(seq "$ROUNDS"); do
  # Citus's DELETE, through the coordinator (the workers off)
  refill coord w1 w2
  [ -n "$plan" ] || plan=$(db coord -c "EXPLAIN (COSTS OFF) $DELETE_SQL" | grep -oE '(Seq Scan|Index Scan|Index Only Scan|Bitmap Heap Scan)' | head -1)
  while read -r port count; do R[del,rows_${NODE_OF[$port]},$r]=$count; done < <(
    db coord -F ' ' -c "SELECT nodeport, sum(result::bigint) FROM run_command_on_placements('events',
                          \$\$SELECT count(*) FROM %s WHERE $EXPIRED\$\$) GROUP BY nodeport")
  checkpoint coord w1 w2
  R[del,client,$r]=$(db coord -c '\timing on' -c "$DELETE_SQL" | sed -n 's/^Time: \([0-9]*\).*/\1/p')
  measure del "$r" coord w1 w2
  R[del,left,$r]=$(db coord -c "SELECT count(*) FROM events WHERE $EXPIRED")

  # jsonb_ttl on the cluster: each worker node's worker
  refill coord w1 w2
  for node in w1 w2; do R[ttl,before_$node,$r]=$(deleted "$node"); done
  checkpoint coord w1 w2
  t0=$(now_ms)
  for node in w1 w2; do guc "$node" jsonb_ttl.enabled on; done
  R[ttl,wall,$r]=$(until_none coord "$t0" "$LEFT_SQL")
  sleep 0.3  # the batches that find nothing left, and end each shard's visit, come just after
  for node in w1 w2; do guc "$node" jsonb_ttl.enabled off; done
  measure ttl "$r" coord w1 w2
  for node in w1 w2; do
    before=${R[ttl,before_$node,$r]} after=$(deleted "$node")
    R[ttl,rows_$node,$r]=$((after - before))
  done

  # jsonb_ttl on one node
  refill one one
  R[one,before,$r]=$(deleted one)
  checkpoint one
  t0=$(now_ms)
  guc one jsonb_ttl.enabled on
  R[one,wall,$r]=$(until_none one "$t0" "$LEFT_SQL")
  sleep 0.3
  guc one jsonb_ttl.enabled off
  measure one "$r" one
  before=${R[one,before,$r]} after=$(deleted one)
  R[one,rows_one,$r]=$((after - before))
done

# ---- the figures ------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
per_s() { awk -v r="$1" -v ms="$2" 'BEGIN {printf "%.0f rows/s", (ms > 0 ? r / ms * 1000 : 0)}'; }
per_row() { awk -v w="$1" -v r="$2" 'BEGIN {if (r > 0) printf "%.0f B/row", w / r}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
each() {  # each SIDE WHAT [NODE…]: the value in every round (summed over the NODEs)
  local side=$1 what=$2 r node sum
  shift 2
  for r in $(seq "$ROUNDS"); do
    if [ $# -eq 0 ]; then echo "${R[$side,$what,$r]}"; else
      sum=0; for node in "$@"; do sum=$((sum + R[$side,${what}_$node,$r])); done; echo "$sum"
    fi
  done
}
med() { local v; mapfile -t v < <(each "$@"); median "${v[@]}"; }
range() { local v; v=$(each "$@" | sort -g | paste -sd' '); echo "${v// / | }"; }

echo
echo "Each round: rows deleted, the tables (shards) they came from, the DELETE statements (for"
echo "jsonb_ttl its batches, the one ending each shard's visit and finding nothing included), ms"
echo "from the start of the first DELETE to the end of the last, WAL written (pg_current_wal_lsn)."
row() { printf '%-44s %9s %7s %10s %9s %12s %12s\n' "$@"; }
# cluster_side SIDE LABEL COORDINATOR_LABEL COORDINATOR_MS: round $r of a side on the cluster,
# its worker nodes summed, then each node, then the coordinator
cluster_side() {
  local side=$1 rows wal node
  rows=$((R[$side,rows_w1,$r] + R[$side,rows_w2,$r]))
  wal=$((R[$side,wal_w1,$r] + R[$side,wal_w2,$r] + R[$side,wal_coord,$r]))
  row "$2" "$rows" "$((R[$side,shards_w1,$r] + R[$side,shards_w2,$r]))" \
      "$((R[$side,stmts_w1,$r] + R[$side,stmts_w2,$r]))" "${R[$side,ms,$r]}" "$wal" "$(per_row "$wal" "$rows")"
  for node in w1 w2; do
    row "  worker node $node" "${R[$side,rows_$node,$r]}" "${R[$side,shards_$node,$r]}" "${R[$side,stmts_$node,$r]}" \
        "${R[$side,ms_$node,$r]}" "${R[$side,wal_$node,$r]}" "$(per_row "${R[$side,wal_$node,$r]}" "${R[$side,rows_$node,$r]}")"
  done
  row "  coordinator ($3)" "" "" "" "$4" "${R[$side,wal_coord,$r]}" ""
}
for r in $(seq "$ROUNDS"); do
  echo
  row "round $r" "rows" "tables" "statements" "ms" "WAL bytes" "per row"
  d_rows=$((R[del,rows_w1,$r] + R[del,rows_w2,$r]))
  t_rows=$((R[ttl,rows_w1,$r] + R[ttl,rows_w2,$r]))
  cluster_side del "Citus DELETE ($plan on each shard)" "ms: as its client sees it" "${R[del,client,$r]}"
  cluster_side ttl "jsonb_ttl on the cluster" "ms: until it sees none" "${R[ttl,wall,$r]}"
  row "jsonb_ttl on one node" "${R[one,rows_one,$r]}" "${R[one,shards_one,$r]}" "${R[one,stmts_one,$r]}" \
      "${R[one,ms,$r]}" "${R[one,wal_one,$r]}" "$(per_row "${R[one,wal_one,$r]}" "${R[one,rows_one,$r]}")"
  row "  (ms: until it sees none)" "" "" "" "${R[one,wall,$r]}" "" ""
  if [ "$d_rows" != "$expired" ] || [ "$t_rows" != "$expired" ] || [ "${R[one,rows_one,$r]}" != "$expired" ] || [ "${R[del,left,$r]}" != 0 ]; then
    echo "citus: WARNING: round $r deleted $d_rows (Citus DELETE, ${R[del,left,$r]} left), $t_rows (cluster), ${R[one,rows_one,$r]} (one node), not the $expired expired"
  fi
done

del_ms=$(med del ms) ttl_ms=$(med ttl ms) one_ms=$(med one ms) del_client=$(med del client)
ttl_wall=$(med ttl wall) one_wall=$(med one wall)
ttl_wal=$(med ttl wal w1 w2) del_wal=$(med del wal w1 w2) one_wal=$(med one wal one)
echo
echo "Summary ($(date -u +%Y-%m-%d), $(nproc) cores, scale $SCALE, purge of $expired expired of $n rows; medians of $ROUNDS round(s), every round's in brackets):"
line() { printf '%-60s %16s %16s %8s  %s\n' "$@"; }
line "case" "jsonb_ttl" "baseline" "ratio" ""
line "cluster vs Citus DELETE, first to last DELETE (ms)" "$ttl_ms" "$del_ms" "$(ratio "$del_ms" "$ttl_ms")" "DELETE ms ÷ jsonb_ttl ms: jsonb_ttl $(awk -v a="$del_ms" -v b="$ttl_ms" 'BEGIN {print (a >= b ? "faster" : "slower")}') [jsonb_ttl $(range ttl ms); DELETE $(range del ms)]"
line "  rows/s" "$(per_s "$expired" "$ttl_ms")" "$(per_s "$expired" "$del_ms")" "" ""
line "  vs the DELETE as its client sees it, 2PC included (ms)" "$ttl_ms" "$del_client" "$(ratio "$del_client" "$ttl_ms")" "[DELETE $(range del client)]"
line "cluster vs one node, first to last DELETE (ms)" "$ttl_ms" "$one_ms" "$(ratio "$one_ms" "$ttl_ms")" "one node ms ÷ cluster ms: the cluster's speed-up [one node $(range one ms)]"
line "  rows/s" "$(per_s "$expired" "$ttl_ms")" "$(per_s "$expired" "$one_ms")" "" ""
line "  until no expired row is seen, wake-up included (ms)" "$ttl_wall" "$one_wall" "$(ratio "$one_wall" "$ttl_wall")" "(information: polled every 0.2 s) [cluster $(range ttl wall); one node $(range one wall)]"
line "WAL of the worker nodes: jsonb_ttl | Citus DELETE" "$(per_row "$ttl_wal" "$expired")" "$(per_row "$del_wal" "$expired")" "$(ratio "$ttl_wal" "$del_wal")" ""
line "WAL: jsonb_ttl, the worker nodes | one node" "$(per_row "$ttl_wal" "$expired")" "$(per_row "$one_wal" "$expired")" "$(ratio "$ttl_wal" "$one_wal")" ""
# the split of the work, in the round of each side's median
median_round() { local r; for r in $(seq "$ROUNDS"); do [ "${R[$1,ms,$r]}" = "$2" ] && { echo "$r"; return; }; done; }
for side in ttl del; do
  r=$(median_round "$side" "$(med "$side" ms)")
  for node in w1 w2; do
    line "  $node, $([ $side = ttl ] && echo jsonb_ttl || echo Citus DELETE) (round $r): rows | statements | ms" \
         "${R[$side,rows_$node,$r]}" "${R[$side,stmts_$node,$r]}" "${R[$side,ms_$node,$r]}" \
         "WAL $(per_row "${R[$side,wal_$node,$r]}" "${R[$side,rows_$node,$r]}") [ms, every round: $(range "$side" "ms_$node")]"
  done
done
