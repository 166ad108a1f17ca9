#!/usr/bin/env bash
# Failover under a purge with pg_auto_failover (Debian's postgresql-15-auto-failover): a monitor
# and two nodes on loopback, jsonb_ttl preloaded on both nodes. The worker purges on the
# primary; `pg_autoctl perform failover` promotes the secondary; its worker continues with no
# premature delete and no lost row (a trigger logs every deletion; the log replicates too).
# Rows expire from 10 s before the insert to 139 s after it, so however long the failover
# takes, some are left for the new primary to delete; one in 100 expires an hour out.
# About 30 seconds; scripts/install-deps.sh installs pg_auto_failover.
source "$(dirname "$0")/lib.sh"
if [ "$PG_MAJOR" != 15 ]; then
  echo "failover: skipped on PostgreSQL $PG_MAJOR (pg_auto_failover comes from Debian, for 15 only)"
  exit 0
fi
PGAF=$("$ROOT/scripts/cluster.sh" dir e2e-failover)
MON_PORT=28855 N1_PORT=28856 N2_PORT=28857
as_pg() {
  runuser -u postgres -- env XDG_CONFIG_HOME="$PGAF/xdg/config" XDG_DATA_HOME="$PGAF/xdg/data" \
    XDG_RUNTIME_DIR="$PGAF/xdg/run" PATH="$PGBIN:$PATH" "$@"
}
stop_all() {
  for d in node2 node1 monitor; do
    [ -d "$PGAF/$d" ] && as_pg pg_autoctl stop --pgdata "$PGAF/$d" --immediate >/dev/null 2>&1 || true
  done
  sleep 1
  pkill -u postgres -f "pg_autoctl.*$PGAF" 2>/dev/null || true
  for d in node2 node1 monitor; do
    [ -f "$PGAF/$d/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGAF/$d" -m immediate stop >/dev/null 2>&1 || true
  done
}
on_exit() {
  local status=$?
  if [ "$E2E_FAILURES" -gt 0 ] || [ $status -ne 0 ]; then
    for f in monitor node1 node2; do echo "--- $f.log"; tail -n 15 "$PGAF/$f.log" 2>/dev/null; done
  fi
  stop_all
  rm -rf "$PGAF"
  exit $status
}
trap on_exit EXIT
stop_all; rm -rf "$PGAF"; mkdir -p "$PGAF/xdg/run" && chown -R postgres: "$PGAF"
MONITOR="postgres://autoctl_node@127.0.0.1:$MON_PORT/pg_auto_failover?sslmode=disable"
nq() { PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h 127.0.0.1 -p "$1" -U postgres -d "$2" -X -q -At -v ON_ERROR_STOP=1 -c "$3"; }

as_pg pg_autoctl create monitor --pgdata "$PGAF/monitor" --pgport $MON_PORT --hostname 127.0.0.1 \
  --auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" >"$PGAF/monitor.log" 2>&1
# loopback only (pg_autoctl starts the monitor with -h from its own configuration)
as_pg pg_autoctl config set --pgdata "$PGAF/monitor" postgresql.listen_addresses 127.0.0.1 >>"$PGAF/monitor.log" 2>&1
as_pg pg_autoctl run --pgdata "$PGAF/monitor" >>"$PGAF/monitor.log" 2>&1 &
monitor_up() { nq $MON_PORT pg_auto_failover "SELECT 1" >/dev/null 2>&1; }
wait_for "the monitor is up" 30 monitor_up

node() {  # node NAME PORT: a node with jsonb_ttl preloaded, registered and running
  local name=$1 port=$2
  as_pg pg_autoctl create postgres --pgdata "$PGAF/$name" --pgport "$port" --hostname 127.0.0.1 \
    --listen 127.0.0.1 --auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" --monitor "$MONITOR" \
    --name "$name" >"$PGAF/$name.log" 2>&1
  if ! grep -q "jsonb_ttl" "$PGAF/$name/postgresql.conf"; then
    { echo "shared_preload_libraries = 'jsonb_ttl'"; echo "jsonb_ttl.frequency = 200"
      echo "jsonb_ttl.batch_size = 200"; } >>"$PGAF/$name/postgresql.conf"
  fi
  as_pg pg_autoctl run --pgdata "$PGAF/$name" >>"$PGAF/$name.log" 2>&1 &
}
state_is() {  # state_is NAME STATE
  [ "$(nq $MON_PORT pg_auto_failover "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null)" = "$2" ]
}
node node1 $N1_PORT
wait_for "node1 runs alone" 60 state_is node1 single
node node2 $N2_PORT
wait_for "node2 is a secondary" 90 state_is node2 secondary
wait_for "node1 is the primary" 30 state_is node1 primary

ROWS=50000
nq $N1_PORT postgres "CREATE DATABASE app"
nq $N1_PORT app "CREATE EXTENSION jsonb_ttl"
nq $N1_PORT app "CREATE TABLE events (id int PRIMARY KEY, doc jsonb NOT NULL);
  SELECT FROM ttl_index_create('events', 'at', 0);
  CREATE TABLE deleted (id int, reference timestamptz, deleted_at timestamptz);
  CREATE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
  \$\$ BEGIN INSERT INTO deleted VALUES (OLD.id, ttl_timestamp(OLD.doc -> 'at'), now()); RETURN OLD; END \$\$;
  CREATE TRIGGER log_delete AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION log_delete();
  INSERT INTO events SELECT g, jsonb_build_object('at', to_char((now() + CASE WHEN g % 100 = 0 THEN 3600 ELSE g % 150 - 10 END * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))
  FROM generate_series(1, $ROWS) g"
purging() { [ "$(nq $N1_PORT app "SELECT count(*) > 0 FROM deleted")" = t ]; }
wait_for "the worker purges on node1" 5 purging
failover_at=$(nq $N1_PORT app "SELECT now()")
as_pg pg_autoctl perform failover --pgdata "$PGAF/monitor" >>"$PGAF/monitor.log" 2>&1 &
wait_for "node2 becomes the primary" 120 state_is node2 primary
expect_eq "node2 is out of recovery" f "$(nq $N2_PORT app "SELECT pg_is_in_recovery()")"
worker_on_node2() { [ "$(nq $N2_PORT postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'app'")" = 1 ]; }
wait_for "the worker runs on the new primary" 30 worker_on_node2
drained() { [ "$(nq $N2_PORT app "SELECT count(*) FROM events WHERE ttl_timestamp(doc -> 'at') < now() - interval '1 second'")" = 0 ]; }
deletes_after() { [ "$(nq $N2_PORT app "SELECT count(*) > 0 FROM deleted WHERE deleted_at > '$failover_at'::timestamptz + interval '5 seconds'")" = t ]; }
wait_for "the new primary's worker deletes rows as they expire" 30 deletes_after
wait_for "and nothing expired is left" 60 drained
expect_eq "the monitor and the nodes listen on loopback only" "" \
  "$(ss -ltnH 2>/dev/null | awk '{print $4}' | grep -E ':(2884[012])$' | grep -v '^127\.0\.0\.1:' || true)"
expect_eq "premature deletes (reference not before the deleting transaction's now())" 0 \
  "$(nq $N2_PORT app "SELECT count(*) FROM deleted WHERE reference >= deleted_at")"
# (a deletion and its log entry commit, or are lost in the failover, together: no row can be
# logged twice, so no check says so)
expect_eq "every row accounted for: present + deleted = $ROWS" "$ROWS" \
  "$(nq $N2_PORT app "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM deleted)")"
expect_eq "the rows an hour out kept" $((ROWS / 100)) "$(nq $N2_PORT app "SELECT count(*) FROM events WHERE ttl_timestamp(doc -> 'at') > now() + interval '30 minutes'")"
finish
