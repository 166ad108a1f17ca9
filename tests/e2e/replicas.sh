#!/usr/bin/env bash
# Slowing down for replicas and WAL (docs/worker.md): a primary with a streaming standby that
# applies WAL 3 s late (recovery_min_apply_delay), so a purge builds replay lag. With
# jsonb_ttl.max_replica_lag under it the purge is slowed (ttl_throttle() and the log say so) and
# takes longer than without; raising the limit lets it drain at full speed. An inactive slot
# holding WAL past jsonb_ttl.max_slot_wal_keep stops the purge until it is dropped; and
# jsonb_ttl.max_wal_rate holds a purge to a WAL rate.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-replicas 28862 "jsonb_ttl.frequency = 200" "jsonb_ttl.max_removes_per_second = 4000"
LOG=$CLUSTER_DIR/server.log
STANDBY_DIR=$("$ROOT/scripts/cluster.sh" dir e2e-replicas-standby) STANDBY_PORT=$((28863 + ${E2E_PORT_OFFSET:-0}))
stop_standby() {
  [ -f "$STANDBY_DIR/data/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STANDBY_DIR/data" -m immediate -w stop >/dev/null
  rm -rf "$STANDBY_DIR"
}
if [ "${E2E_KEEP:-0}" != 1 ]; then
  trap 'status=$?; stop_standby; "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"; exit $status' EXIT
fi

q postgres -c "CREATE DATABASE app"
q app <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', 0);
SQL

stop_standby
mkdir -p "$STANDBY_DIR/sock" && chown -R postgres: "$STANDBY_DIR"
runuser -u postgres -- "$PGBIN/pg_basebackup" -h "$SOCK" -p "$PORT" -U postgres \
  -D "$STANDBY_DIR/data" -R -X stream -c fast
{
  echo "port = $STANDBY_PORT"
  echo "unix_socket_directories = '$STANDBY_DIR/sock'"
  echo "recovery_min_apply_delay = '3s'"
  # the standby reports its replay every second (the primary clears a lag it no longer sees
  # after two such reports)
  echo "wal_receiver_status_interval = '1s'"
} >>"$STANDBY_DIR/data/postgresql.conf"
env -u RUST_BACKTRACE runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STANDBY_DIR/data" \
  -l "$STANDBY_DIR/server.log" -w start >/dev/null
streaming() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ]; }
wait_for "the standby streams from the primary" 10 streaming

# set NAME VALUE: ALTER SYSTEM + reload, and wait until a session reads it
set_conf() {
  q postgres -c "ALTER SYSTEM SET $1 = '$2'" -c "SELECT pg_reload_conf()" >/dev/null
  local i
  for i in $(seq 100); do
    [ "$(q postgres -c "SELECT current_setting('$1') = '$2' OR setting = '$2' FROM pg_settings WHERE name = '$1'")" = t ] && return 0
    sleep 0.05
  done
  fail "the setting $1 = $2 was not reloaded"
}
# the standby has replayed everything and the primary no longer shows a lag
caught_up() {
  [ "$(q postgres -c "SELECT replay_lsn = pg_current_wal_lsn() AND replay_lag IS NULL FROM pg_stat_replication")" = t ]
}
expire() { q app -c "INSERT INTO events (doc) SELECT jsonb_build_object('at', '2019-01-01', 'pad', repeat('x', 40)) FROM generate_series(1, $1)"; }
count() { q app -c "SELECT count(*) FROM events"; }
drained() { [ "$(count)" = 0 ]; }
# purge_ms N: inserts N expired rows and prints how long the worker took to remove them
purge_ms() {
  local start
  start=$(now_ms)
  expire "$1"
  until drained; do
    [ $(($(now_ms) - start)) -gt 120000 ] && break
    sleep 0.05
  done
  echo $(($(now_ms) - start))
}
row() { q app -c "SELECT $2 FROM ttl_throttle() WHERE setting = 'jsonb_ttl.$1'"; }
N=20000

echo "-- replica lag"
expect_eq "ttl_throttle() shows the three limits, off" \
  "jsonb_ttl.max_replica_lag:0:0 jsonb_ttl.max_slot_wal_keep:0:0 jsonb_ttl.max_wal_rate:0:0" \
  "$(q app -c "SELECT string_agg(setting || ':' || limit_value || ':' || slowed::int, ' ') FROM ttl_throttle()")"
wait_for "the standby caught up" 30 caught_up
baseline=$(purge_ms $N)
expect_eq "without a limit the worker drains $N rows (in $baseline ms, max_removes_per_second 4000)" 0 "$(count)"
expect_eq "and never slows down" 0 "$(row max_replica_lag slowdowns)"
replay_lag_ms() { q postgres -c "SELECT coalesce(max(extract(epoch FROM replay_lag) * 1000), 0)::int FROM pg_stat_replication"; }
lagging() { [ "$(replay_lag_ms)" -ge 2500 ]; }
wait_for "the purge built replay lag on the standby (recovery_min_apply_delay 3s)" 10 lagging
wait_for "the standby caught up again" 30 caught_up

set_conf jsonb_ttl.max_replica_lag 1000
limited_before=$(q app -c "SELECT limit_reached FROM ttl_stats WHERE table_name = 'events'::regclass")
start=$(now_ms)
expire $N
slowed() { [ "$(row max_replica_lag "slowed AND last_value > 1000 AND slowed_since IS NOT NULL")" = t ]; }
wait_for "ttl_throttle() shows the worker slowed by max_replica_lag, the lag measured over the limit" 15 slowed
grep -q "jsonb_ttl: slowing down: the replay lag of a standby is [0-9]* ms, over jsonb_ttl.max_replica_lag = 1000 ms" "$LOG" &&
  pass "the log says the worker slows down, with the lag and the setting" || fail "no LOG line for the slowdown"
activity() { q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND query LIKE 'jsonb_ttl: waiting: the replay lag%'"; }
waiting_shown() { [ "$(activity)" = 1 ]; }
wait_for "pg_stat_activity shows the worker waiting for the standby" 5 waiting_shown
until drained; do [ $(($(now_ms) - start)) -gt 120000 ] && break; sleep 0.05; done
lagged=$(($(now_ms) - start))
expect_eq "the table drains under the limit all the same" 0 "$(count)"
if [ "$lagged" -ge $((baseline + 2000)) ]; then pass "the purge took longer with the limit ($lagged ms, $baseline ms without)"
else fail "the purge was not slowed: $lagged ms with the limit, $baseline ms without"; fi
expect_eq "slowdowns counts the slowdowns" t "$(row max_replica_lag "slowdowns >= 1 AND waited_ms > 1000")"
expect_eq "ttl_stats counts passes cut short by the wait as limit_reached" t \
  "$(q app -c "SELECT limit_reached > $limited_before FROM ttl_stats WHERE table_name = 'events'::regclass")"
full_speed_logged() { grep -q "jsonb_ttl: back to full speed: the replay lag of a standby is [0-9]* ms, within jsonb_ttl.max_replica_lag = 1000 ms" "$LOG"; }
wait_for "the log says when the worker is back to full speed" 15 full_speed_logged

# raising the limit while slowed: the rest goes at full speed
wait_for "the standby caught up again" 30 caught_up
expire $N
wait_for "slowed again by the next purge" 15 slowed
raised=$(now_ms)
set_conf jsonb_ttl.max_replica_lag 60000
until drained; do [ $(($(now_ms) - raised)) -gt 60000 ] && break; sleep 0.05; done
after_raise=$(($(now_ms) - raised))
expect_eq "once the limit is raised the table drains" 0 "$(count)"
if [ "$after_raise" -le $((baseline + 1500)) ]; then pass "at full speed ($after_raise ms after the raise; $baseline ms for all $N rows without a limit)"
else fail "not at full speed after the raise: $after_raise ms, $baseline ms without a limit"; fi
not_slowed() { [ "$(row max_replica_lag slowed)" = f ]; }
wait_for "ttl_throttle() shows the worker no longer slowed (5 s after its last wait)" 15 not_slowed
set_conf jsonb_ttl.max_replica_lag 0

echo "-- a replication slot holding WAL"
wait_for "the standby caught up" 30 caught_up
q postgres -c "SELECT FROM pg_create_physical_replication_slot('held', true)"
q app -c "CREATE TABLE filler AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g"
held_kb=$(q postgres -c "SELECT ((pg_current_wal_lsn() - restart_lsn) / 1024)::int FROM pg_replication_slots WHERE slot_name = 'held'")
set_conf jsonb_ttl.max_slot_wal_keep 1MB
expire 1000
slot_slowed() { [ "$(row max_slot_wal_keep slowed)" = t ]; }
wait_for "the slot holding ${held_kb} kB slows the worker (max_slot_wal_keep 1MB)" 5 slot_slowed
sleep 2
expect_eq "and nothing is deleted while it holds that much" 1000 "$(count)"
wpid=$(q postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'app'")
q postgres -c "SELECT pg_terminate_backend($wpid)" >/dev/null
gone() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $wpid")" = 0 ]; }
wait_for "a worker waiting for the slot ends at once on pg_terminate_backend (SIGTERM)" 2 gone
back() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'app'")" = 1 ]; }
wait_for "the launcher starts the database's worker again" 10 back
sleep 1
expect_eq "which waits for the slot too" 1000 "$(count)"
grep -q "jsonb_ttl: slowing down: the WAL a replication slot holds back is [0-9]* bytes, over jsonb_ttl.max_slot_wal_keep = 1048576 bytes" "$LOG" &&
  pass "the log says so" || fail "no LOG line for the slot"
expect_eq "ttl_throttle() shows the WAL the slot holds" t "$(row max_slot_wal_keep "last_value >= $held_kb * 1024 AND limit_value = 1048576")"
q postgres -c "SELECT pg_drop_replication_slot('held')"
wait_for "dropping the slot lets the worker go on" 5 drained
slot_free() { [ "$(row max_slot_wal_keep slowed)" = f ]; }
wait_for "ttl_throttle() shows it no longer slowed" 15 slot_free
expect_eq "the slot's row counts one slowdown" 1 "$(row max_slot_wal_keep slowdowns)"
set_conf jsonb_ttl.max_slot_wal_keep 0

echo "-- the WAL rate"
set_conf jsonb_ttl.max_removes_per_second 0
# the limit is checked between batches: small batches follow it closely
set_conf jsonb_ttl.batch_size 200
fast=$(purge_ms $N)
expect_eq "without a WAL rate limit $N rows go in $fast ms" 0 "$(count)"
# 128 kB/s: the limited purge lasts several times what the unlimited one does even on a loaded
# machine (there, 2.4 s instead of 0.5), so "at least half of what the rate allows" also tells
# a limit that works from one that does not
set_conf jsonb_ttl.max_wal_rate 128kB
expire $N
lsn0=$(q postgres -c "SELECT pg_current_wal_lsn()")
start=$(now_ms)
until drained; do [ $(($(now_ms) - start)) -gt 120000 ] && break; sleep 0.05; done
took=$(($(now_ms) - start))
wal=$(q postgres -c "SELECT (pg_current_wal_lsn() - '$lsn0')::bigint")
expect_eq "under max_wal_rate the table drains" 0 "$(count)"
floor=$((wal * 1000 / (128 * 1024) / 2))
if [ "$took" -ge "$floor" ] && [ "$took" -gt "$fast" ] && [ "$floor" -gt "$fast" ]; then
  pass "the purge wrote $wal bytes of WAL in $took ms: at least half of what 128 kB/s allows ($floor ms, more than the $fast ms without)"
else fail "the purge wrote $wal bytes of WAL in $took ms: 128 kB/s needs at least $floor ms (half), $fast ms without the limit"; fi
expect_eq "ttl_throttle() counts the WAL rate's slowdowns" t "$(row max_wal_rate "slowdowns >= 1 AND waited_ms > 0 AND limit_value = 131072")"
grep -q "jsonb_ttl: slowing down: the WAL rate of the jsonb_ttl workers' deletes is [0-9]* bytes/s, over jsonb_ttl.max_wal_rate = 131072 bytes/s" "$LOG" &&
  pass "the log says so" || fail "no LOG line for the WAL rate"
set_conf jsonb_ttl.max_wal_rate 0
finish
