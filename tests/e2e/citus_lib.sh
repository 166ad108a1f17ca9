# Shared helpers for the Citus end-to-end tests (tests/e2e/citus*.sh, run by make test-citus):
# `start_citus [conf lines…]` starts a coordinator and two worker nodes, three clusters of
# scripts/cluster.sh on 127.0.0.1 (ports 28870, 28871, 28872, + E2E_PORT_OFFSET) with
# shared_preload_libraries = 'citus,jsonb_ttl', creates the database $CITUS_DB (citus_e2e) on
# each with the citus extension, and registers the workers with the coordinator. One trap stops
# and removes the three on exit (E2E_KEEP=1 leaves them running).
#   qc / qw1 / qw2 [psql args…]       psql against $CITUS_DB on the coordinator / worker 1 / 2
#   qn NODE DB [psql args…]           the same against any database (NODE: coord, w1, w2)
#   outcome_on NODE SQL               "ok", or the ERROR line of SQL on NODE's $CITUS_DB
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
CITUS_NODES=(coord w1 w2)
declare -A CITUS_PORT CITUS_SOCK
CITUS_PORT=([coord]=$((28870 + ${E2E_PORT_OFFSET:-0})) [w1]=$((28871 + ${E2E_PORT_OFFSET:-0}))
            [w2]=$((28872 + ${E2E_PORT_OFFSET:-0})))

citus_cluster() { echo "e2e-citus-$1"; }  # the scripts/cluster.sh name of NODE

stop_citus() {
  local node
  for node in "${CITUS_NODES[@]}"; do "$ROOT/scripts/cluster.sh" destroy "$(citus_cluster "$node")"; done
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

# The ERROR line of SQL run on NODE's $CITUS_DB, or "ok".
outcome_on() {
  local out
  if out=$(qn "$1" "$CITUS_DB" -c "$2" 2>&1); then echo ok; else
    echo "$out" | sed -n 's/.*ERROR: *//p' | head -1
  fi
}

# start_citus [conf lines…]: the three nodes, their database, citus on each, the workers added.
start_citus() {
  local node cluster
  stop_citus
  if [ "${E2E_KEEP:-0}" = 1 ]; then
    trap 'echo "clusters kept: $(dirname "$("$ROOT/scripts/cluster.sh" dir any)")/e2e-citus-{coord,w1,w2} (coordinator on port ${CITUS_PORT[coord]})"' EXIT
  else
    trap 'status=$?; stop_citus; exit $status' EXIT
  fi
  for node in "${CITUS_NODES[@]}"; do
    cluster=$(citus_cluster "$node")
    # citus first in shared_preload_libraries (it refuses to load otherwise); the nodes talk over
    # 127.0.0.1 without TLS (cluster.sh's initdb trusts local and 127.0.0.1 connections); no
    # statistics collection (it would call reports.citusdata.com).
    # A start that fails is retried for a minute: jsonb_ttl's files may be briefly absent
    # (another checkout's make install, or a package test, replacing them).
    local tries=0
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
  done
  # lib.sh's q (and its other helpers) talk to the coordinator
  CLUSTER=$(citus_cluster coord) PORT=${CITUS_PORT[coord]} SOCK=${CITUS_SOCK[coord]}
  CLUSTER_DIR=$("$ROOT/scripts/cluster.sh" dir "$CLUSTER")
  for node in "${CITUS_NODES[@]}"; do
    qn "$node" postgres -c "CREATE DATABASE $CITUS_DB"
    qn "$node" "$CITUS_DB" -c "CREATE EXTENSION citus"
  done
  qc -c "SELECT citus_set_coordinator_host('127.0.0.1', ${CITUS_PORT[coord]})" >/dev/null
  qc -c "SELECT citus_add_node('127.0.0.1', ${CITUS_PORT[w1]})" >/dev/null
  qc -c "SELECT citus_add_node('127.0.0.1', ${CITUS_PORT[w2]})" >/dev/null
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
