#!/usr/bin/env bash
# A measurement, not a test of make test: reading 100 databases takes a round of connections
# whose length grows with the machine's load (bench/run.sh's rotation case runs it).
# Issue 24: with 100 databases and jsonb_ttl.max_workers = 4, every database gets a pass at least
# every frequency × ceil(100 / 4), measured. Each database holds one TTL table with nothing
# expired; the pass times are the worker's own (ttl_stats.last_run_at of that table, with
# ttl_stats.runs), read from every database about once a second for WINDOW seconds: the gap
# between two passes of a database is the difference of two last_run_at values; when the
# reads missed passes in between (runs grew by more than one), what the others must have taken
# is taken off (below). The figure can only be too large, never too small. Prints the largest gap (bench/run.sh's rotation case reads that line).
#   ROTATION_DBS (100), ROTATION_WORKERS (4), ROTATION_FREQUENCY (ms, 500), ROTATION_WINDOW (s, 30)
source "$(dirname "$0")/../tests/e2e/lib.sh"
DBS=${ROTATION_DBS:-100}
WORKERS=${ROTATION_WORKERS:-4}
FREQ=${ROTATION_FREQUENCY:-500}
WINDOW=${ROTATION_WINDOW:-30}
BOUND=$((FREQ * ((DBS + WORKERS - 1) / WORKERS)))
start_cluster e2e-rotation-gap 28853 "jsonb_ttl.frequency = $FREQ" "jsonb_ttl.max_workers = $WORKERS"

q postgres -c "CREATE DATABASE gap_template"
q gap_template -c "CREATE EXTENSION jsonb_ttl" -c "CREATE TABLE t (id int, doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t', 'at', interval '1 hour')" \
  -c "INSERT INTO t VALUES (1, '{\"at\": \"2999-01-01\"}')"
names=$(seq -f 'gap_%03g' 1 "$DBS")
for d in $names; do q postgres -c "CREATE DATABASE $d TEMPLATE gap_template"; done
q postgres -c "DROP DATABASE gap_template"
expect_eq "$DBS databases with the extension" "$DBS" "$(q postgres -c "SELECT count(*) FROM pg_database WHERE datname LIKE 'gap\_%'")"

# One psql reads every database: "name runs last_run_at(ms since the epoch)".
reads=$CLUSTER_DIR/reads.sql
for d in $names; do
  echo "\\c $d"
  echo "SELECT '$d', coalesce(max(runs), 0), coalesce((extract(epoch FROM max(last_run_at)) * 1000)::bigint, 0) FROM ttl_stats;"
done >"$reads"
read_all() { q postgres -F ' ' -f "$reads" 2>/dev/null; }

# Warm up until every database has had a pass, then watch.
deadline=$(($(now_ms) + 60000))
until [ "$(read_all | awk '$2 > 0' | wc -l)" = "$DBS" ]; do
  [ "$(now_ms)" -ge "$deadline" ] && break
  sleep 0.5
done
expect_eq "every database had a first pass" "$DBS" "$(read_all | awk '$2 > 0' | wc -l)"

samples=$CLUSTER_DIR/samples.txt
: >"$samples"
rounds=0
end=$(($(now_ms) + WINDOW * 1000))
while [ "$(now_ms)" -lt "$end" ]; do
  read_all >>"$samples"
  rounds=$((rounds + 1))
done
# A round's first read of each database, per database: the gaps between distinct last_run_at.
# Passes of one database start at least `frequency` apart (the launcher's rule): a read that
# spans k passes holds k gaps, the largest at most span - (k - 1) x 0.8 x frequency (0.8: the
# recorded time is a pass's end, and a pass may end a little later than the next one's start
# plus its length).
summary=$(awk -v freq="$FREQ" '
  { if ($1 in at && $3 != at[$1]) { k = $2 - runs[$1]; gap = $3 - at[$1] - (k > 1 ? (k - 1) * 0.8 * freq : 0)
                                    if (gap > most) { most = gap; who = $1 }
                                    if ($2 - runs[$1] == 1) exact++; else inexact++; n[$1]++
                                    span += $3 - at[$1]; passes += k }
    at[$1] = $3; runs[$1] = $2 }
  END { low = -1; for (d in at) if (low < 0 || n[d] + 0 < low) low = n[d] + 0
        printf "%d %s %d %d %d %d\n", most, who, low, exact, inexact, passes ? span / passes : 0 }' "$samples")
read -r most who fewest exact inexact mean <<<"$summary"
echo "  largest gap between two passes of one database: $most ms ($who), bound frequency x ceil($DBS / $WORKERS) = $BOUND ms; mean $mean ms; $rounds rounds of reads over ${WINDOW} s, $exact gaps between consecutive passes, $inexact spanning missed ones"
if [ "$fewest" -ge 2 ]; then
  pass "every database got at least 2 more passes in ${WINDOW} s ($fewest or more)"
else
  fail "a database got $fewest passes in ${WINDOW} s"
fi
# the bound, and a margin under it: the figure can only read too large
if [ "$most" -gt 0 ] && [ "$most" -le "$BOUND" ]; then
  pass "largest gap $most ms <= frequency x ceil($DBS / $WORKERS) = $BOUND ms"
else
  fail "largest gap $most ms, bound $BOUND ms"
fi
finish
