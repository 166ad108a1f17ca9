# Shared helpers for the Citus end-to-end tests (tests/e2e/citus*.sh, run by make test-citus):
# `start_citus [conf lines…]` starts a coordinator and two worker nodes, three clusters of
# scripts/cluster.sh on 127.0.0.1 (ports 28870, 28871, 28872, + E2E_PORT_OFFSET) with
# shared_preload_libraries = 'citus,jsonb_ttl', creates the database $CITUS_DB (citus_e2e) on
# each with the citus extension, and registers the workers with the coordinator. One trap stops
# and removes them on exit (E2E_KEEP=1 leaves them running).
#   add_citus_node NODE               a further worker node (w3: port 28873), started like the
#                                     others and added with citus_add_node
#   stop_citus_node / restart_citus_node NODE   stops / starts again one node's server
#   qc / qw1 / qw2 / qw3 [psql args…] psql against $CITUS_DB on the coordinator / worker 1 / 2 / 3
#   qn NODE DB [psql args…]           the same against any database (NODE: coord, w1, w2, w3)
#   outcome_on NODE SQL               "ok", or the ERROR line of SQL on NODE's $CITUS_DB
#   sqlstate_on NODE SQL              "ok", or "SQLSTATE: message" of that ERROR
#   eventually_on NODE DESC SECONDS EXPECTED SQL   lib.sh's eventually_eq, on NODE's $CITUS_DB
#   placement_count NODE TABLE WHERE  rows matching WHERE in the shard placements of TABLE that
#                                     NODE holds, read on NODE itself (no coordinator needed)
# lib.sh's q, pass, fail, expect_eq, eventually_eq, wait_for and finish work as usual; q talks
# to the coordinator.
# Citus must be installed in the server (scripts/citus.sh [MAJOR]): make test-citus does it, and
# sets E2E_CITUS=1; without it these tests skip themselves, so make e2e (which runs every
# tests/e2e/*.sh) leaves them to make test-citus.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then exit 0; fi  # run on its own (make e2e): nothing to do
if [ "${E2E_CITUS:-0}" != 1 ]; then
  echo "$(basename "$0" .sh): skipped (Citus: make test-citus, or E2E_CITUS=1 $0)"
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CITUS_DB=${CITUS_DB:-citus_e2e}
CITUS_NODES=(coord w1 w2)  # the nodes started (add_citus_node adds to it)
CITUS_CONF=()              # start_citus's conf lines, for the nodes added later
declare -A CITUS_PORT CITUS_SOCK
CITUS_PORT=([coord]=$((28870 + ${E2E_PORT_OFFSET:-0})) [w1]=$((28871 + ${E2E_PORT_OFFSET:-0}))
            [w2]=$((28872 + ${E2E_PORT_OFFSET:-0})) [w3]=$((28873 + ${E2E_PORT_OFFSET:-0})))

citus_cluster() { echo "e2e-citus-$1"; }  # the scripts/cluster.sh name of NODE

stop_citus() {  # every node this file knows, started or left over from an earlier run
  local node
  for node in coord w1 w2 w3; do "$ROOT/scripts/cluster.sh" destroy "$(citus_cluster "$node")"; done
}

# psql against database DB of NODE, unaligned and quiet, like lib.sh's q.
qn() {
  local node=$1 db=$2
  shift 2
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "${CITUS_SOCK[$node]}" \
    -p "${CITUS_PORT[$node]}" -U postgres -d "$db" -X -q -At -v ON_ERROR_STOP=1 "$@"
}
qc() { qn coord "$CITUS_DB" "$@"; }
qw1() { qn w1 "$CITUS_DB" "$@"; }
qw2() { qn w2 "$CITUS_DB" "$@"; }
qw3() { qn w3 "$CITUS_DB" "$@"; }

# The ERROR line of SQL run on NODE's $CITUS_DB, or "ok".
outcome_on() {
  local out
  if out=$(qn "$1" "$CITUS_DB" -c "$2" 2>&1); then echo ok; else
    echo "$out" | sed -n 's/.*ERROR: *//p' | head -1
  fi
}

# "SQLSTATE: message" of the ERROR of SQL run on NODE's $CITUS_DB, or "ok".
sqlstate_on() {
  local out
  if out=$(qn "$1" "$CITUS_DB" -v VERBOSITY=verbose -c "$2" 2>&1); then echo ok; else
    echo "$out" | sed -n 's/.*ERROR: *//p' | head -1
  fi
}

# eventually_on NODE DESCRIPTION SECONDS EXPECTED SQL: lib.sh's eventually_eq on NODE's $CITUS_DB
# (an error counts as a value: the last one is shown).
eventually_on() {
  local node=$1 what=$2 seconds=$3 expected=$4 sql=$5 got deadline
  deadline=$(($(now_ms) + $(awk -v s="$seconds" 'BEGIN {printf "%d", s * 1000}')))
  while got=$(qn "$node" "$CITUS_DB" -c "$sql" 2>&1 | tr '\n' ' ' | sed 's/ $//'); [ "$got" != "$expected" ]; do
    if [ "$(now_ms)" -ge $deadline ]; then fail "$what: expected [$expected], got [$got] for ${seconds}s"; return 0; fi
    sleep 0.1
  done
  pass "$what"
}

# placement_count NODE TABLE WHERE: the rows matching WHERE in the active shard placements of
# TABLE that NODE holds, read on NODE from its own metadata and its shards by name (Citus hides
# them from pg_class unless citus.override_table_visibility is off); works with the coordinator
# down.
placement_count() {
  local node=$1 table=$2 where=$3 shards sql="SELECT 0::bigint AS n" shard
  shards=$(qn "$node" "$CITUS_DB" -c "
    SELECT shard_name(s.logicalrelid, s.shardid) FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
    WHERE s.logicalrelid = '$table'::regclass AND p.shardstate = 1
      AND p.groupid = (SELECT groupid FROM pg_dist_local_group) ORDER BY s.shardid")
  for shard in $shards; do sql="$sql UNION ALL SELECT count(*) FROM $shard WHERE $where"; done
  qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "SELECT sum(n) FROM ($sql) c"
}

# start_citus_node NODE [conf lines…]: NODE's cluster started (retried for a minute: jsonb_ttl's
# files may be briefly absent while another checkout's make install, or a package test,
# replaces them), its database created with the citus extension.
start_citus_node() {
  local node=$1 cluster tries=0
  shift
  cluster=$(citus_cluster "$node")
  # citus first in shared_preload_libraries (it refuses to load otherwise); the nodes talk over
  # 127.0.0.1 without TLS (cluster.sh's initdb trusts local and 127.0.0.1 connections); no
  # statistics collection (it would call reports.citusdata.com).
  until "$ROOT/scripts/cluster.sh" start "$cluster" "${CITUS_PORT[$node]}" \
      "shared_preload_libraries = 'citus,jsonb_ttl'" \
      "max_worker_processes = 32" \
      "jsonb_ttl.max_table_fraction = 1" \
      "citus.node_conninfo = 'sslmode=disable'" \
      "citus.enable_statistics_collection = off" \
      "$@"; do
    tries=$((tries + 1))
    if [ $tries -ge 6 ]; then
      tail -5 "$("$ROOT/scripts/cluster.sh" dir "$cluster")/server.log" >&2
      return 1
    fi
    echo "  ($cluster did not start, retrying in 10 s)"
    sleep 10
  done
  CITUS_SOCK[$node]=$("$ROOT/scripts/cluster.sh" dir "$cluster")/sock
  qn "$node" postgres -c "CREATE DATABASE $CITUS_DB"
  qn "$node" "$CITUS_DB" -c "CREATE EXTENSION citus"
}

# start_citus [conf lines…]: the three nodes, their database, citus on each, the workers added.
start_citus() {
  local node
  stop_citus
  if [ "${E2E_KEEP:-0}" = 1 ]; then
    trap 'echo "clusters kept: $(dirname "$("$ROOT/scripts/cluster.sh" dir any)")/e2e-citus-{$(IFS=,; echo "${CITUS_NODES[*]}")} (coordinator on port ${CITUS_PORT[coord]})"' EXIT
  else
    trap 'status=$?; stop_citus; exit $status' EXIT
  fi
  CITUS_CONF=("$@")
  for node in coord w1 w2; do start_citus_node "$node" "$@"; done
  # lib.sh's q (and its other helpers) talk to the coordinator
  CLUSTER=$(citus_cluster coord) PORT=${CITUS_PORT[coord]} SOCK=${CITUS_SOCK[coord]}
  CLUSTER_DIR=$("$ROOT/scripts/cluster.sh" dir "$CLUSTER")
  qc -c "SELECT citus_set_coordinator_host('127.0.0.1', ${CITUS_PORT[coord]})" >/dev/null
  qc -c "SELECT citus_add_node('127.0.0.1', ${CITUS_PORT[w1]})" >/dev/null
  qc -c "SELECT citus_add_node('127.0.0.1', ${CITUS_PORT[w2]})" >/dev/null
}

# add_citus_node NODE: a further worker node (w3), started with start_citus's conf lines, its
# database and citus created (Citus wants them before citus_add_node, which then creates there
# the objects it propagates: other extensions, tables, their metadata), added to the
# coordinator.
add_citus_node() {
  local node=$1
  start_citus_node "$node" "${CITUS_CONF[@]}"
  CITUS_NODES+=("$node")
  qc -c "SELECT citus_add_node('127.0.0.1', ${CITUS_PORT[$node]})" >/dev/null
}

# stop_citus_node NODE / restart_citus_node NODE: NODE's server stopped (fast) / started again
# with its data (a start that fails is retried for a minute, as in start_citus_node).
stop_citus_node() { "$ROOT/scripts/cluster.sh" stop "$(citus_cluster "$1")"; }
restart_citus_node() {
  local tries=0
  until "$ROOT/scripts/cluster.sh" start "$(citus_cluster "$1")" "${CITUS_PORT[$1]}"; do
    tries=$((tries + 1))
    if [ $tries -ge 6 ]; then return 1; fi
    echo "  ($(citus_cluster "$1") did not start, retrying in 10 s)"
    sleep 10
  done
}

# create_extension_on NODE [DB]: CREATE EXTENSION jsonb_ttl, retried for a minute while its files
# are briefly absent (another checkout's make install, or a package test, replacing them).
create_extension_on() {
  local node=$1 db=${2:-$CITUS_DB} tries=0 out
  until out=$(qn "$node" "$db" -c "CREATE EXTENSION IF NOT EXISTS jsonb_ttl" 2>&1); do
    tries=$((tries + 1))
    if [ $tries -ge 12 ]; then echo "$out" >&2; return 1; fi
    echo "  (CREATE EXTENSION jsonb_ttl on $node failed, retrying in 5 s: $(echo "$out" | head -1))"
    sleep 5
  done
}

# citus_logs: the jsonb_ttl lines (and crashes) of every node's server log, the last 15 each:
# for a test to print when it failed (the clusters are removed on exit unless E2E_KEEP=1).
citus_logs() {
  local node log
  for node in "${CITUS_NODES[@]}"; do
    log=$("$ROOT/scripts/cluster.sh" dir "$(citus_cluster "$node")")/server.log
    [ -f "$log" ] || continue
    echo "  --- $node ($log): jsonb_ttl lines, the last 15"
    grep -E 'jsonb_ttl|PANIC|terminated by signal' "$log" | grep -v 'administrator command' | tail -15 | sed 's/^/  | /' || true
  done
}
