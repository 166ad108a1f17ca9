#!/usr/bin/env bash
# A streaming standby (pg_basebackup on loopback): no worker runs or deletes there, the primary's
# deletes arrive through WAL, and after pg_promote() the new primary's worker purges.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-primary 28832 "jsonb_ttl.frequency = 200"
PRIMARY_SOCK=$SOCK PRIMARY_PORT=$PORT
STANDBY_DIR=$("$ROOT/scripts/cluster.sh" dir e2e-standby) STANDBY_PORT=28833
stop_standby() {
  [ -f "$STANDBY_DIR/data/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STANDBY_DIR/data" -m immediate -w stop >/dev/null
  rm -rf "$STANDBY_DIR"
}
trap 'status=$?; stop_standby; "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"; exit $status' EXIT

q postgres -c "CREATE DATABASE app"
q app <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', 0);
INSERT INTO events (doc) SELECT jsonb_build_object('at', '2999-01-01') FROM generate_series(1, 100);
SQL

stop_standby
mkdir -p "$STANDBY_DIR/sock" && chown -R postgres: "$STANDBY_DIR"
runuser -u postgres -- "$PGBIN/pg_basebackup" -h "$PRIMARY_SOCK" -p "$PRIMARY_PORT" -U postgres \
  -D "$STANDBY_DIR/data" -R -X stream -c fast
{
  echo "port = $STANDBY_PORT"
  echo "unix_socket_directories = '$STANDBY_DIR/sock'"
} >>"$STANDBY_DIR/data/postgresql.conf"
env -u RUST_BACKTRACE runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STANDBY_DIR/data" \
  -l "$STANDBY_DIR/server.log" -w start >/dev/null
sq() { PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$STANDBY_DIR/sock" -p "$STANDBY_PORT" -U postgres -d "$1" -X -q -At -v ON_ERROR_STOP=1 -c "$2"; }

expect_eq "the standby is in recovery" t "$(sq app "SELECT pg_is_in_recovery()")"
sleep 1
expect_eq "no jsonb_ttl process runs on the standby" 0 \
  "$(sq postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'jsonb_ttl%'")"

q app -c "INSERT INTO events (doc) SELECT jsonb_build_object('at', now() - interval '1 minute') FROM generate_series(1, 50)"
primary_purged() { [ "$(q app -c "SELECT count(*) FROM events")" = 100 ]; }
wait_for "the primary's worker purges" 2 primary_purged
standby_caught_up() { [ "$(sq app "SELECT count(*) FROM events")" = 100 ]; }
wait_for "the deletes reach the standby through WAL" 5 standby_caught_up
expect_eq "the standby never counted a deletion" 0 "$(sq app "SELECT coalesce(sum(rows_deleted), 0) FROM ttl_stats")"
expect_eq "ttl_expire_preview reads on the standby too" 0 "$(sq app "SELECT rows FROM ttl_expire_preview('events')")"

runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null
expect_eq "pg_promote() on the standby" t "$(sq postgres "SELECT pg_promote()")"
launcher_up() { [ "$(sq postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl launcher'")" = 1 ]; }
wait_for "the launcher starts on the promoted server" 10 launcher_up
sq app "INSERT INTO events (doc) SELECT jsonb_build_object('at', now() - interval '1 minute') FROM generate_series(1, 30)"
promoted_purged() { [ "$(sq app "SELECT count(*) FROM events")" = 100 ]; }
wait_for "the new primary's worker purges" 5 promoted_purged
expect_eq "and only the expired rows" 100 "$(sq app "SELECT count(*) FROM events WHERE doc ->> 'at' = '2999-01-01'")"
finish
