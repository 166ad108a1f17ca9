#!/usr/bin/env bash
# make run's demo stays alive: sql/demo.sql loaded and scripts/demo-feed.sh started as the
# Makefile does, rows keep arriving and the worker keeps removing them; the feeder ends when
# the server goes away.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-demo 28868 "jsonb_ttl.frequency = 1000"
q postgres -c "CREATE DATABASE demo"
q demo -v ON_ERROR_STOP=1 -f "$ROOT/sql/demo.sql" >/dev/null
setsid "$ROOT/scripts/demo-feed.sh" "$PGBIN/psql" "$SOCK" "$PORT" </dev/null >"$CLUSTER_DIR/demo-feed.log" 2>&1 &
feeder=$!

first_id=$(q demo -c "SELECT max(id) FROM demo_events")
first_deleted=$(q demo -c "SELECT coalesce(sum(rows_deleted), 0) FROM ttl_stats")
fed() { [ "$(q demo -c "SELECT max(id) > $first_id FROM demo_events")" = t ]; }
wait_for "the feeder adds events" 10 fed
# the feeder's first three events (ids after the demo's) go 10 s after they came, while newer
# ones are there, and the worker counts them
fed_and_gone() {
  [ "$(q demo -c "SELECT NOT EXISTS (SELECT FROM demo_events WHERE id BETWEEN $first_id + 1 AND $first_id + 3)
                        AND max(id) > $first_id + 3 FROM demo_events")" = t ]
}
wait_for "the worker removes them 10 s after they came, while newer ones arrive" 40 fed_and_gone
expect_eq "ttl_stats counts the deletions since the feeder started" t \
  "$(q demo -c "SELECT sum(rows_deleted) > $first_deleted FROM ttl_stats")"
moved() {
  [ "$(q demo -c "SELECT (SELECT count(*) FROM demo_sessions_archive) >= 5
                         AND (SELECT count(*) FROM demo_sessions) + (SELECT count(*) FROM demo_sessions_archive) = 40")" = t ]
}
wait_for "the demo's idle sessions move into their archive, none lost" 20 moved
codes_go() {
  [ "$(q demo -c "SELECT count(*) = 30 AND count(*) FILTER (WHERE doc ? 'otp') BETWEEN 1 AND 25 FROM demo_accounts")" = t ]
}
wait_for "the demo's one-time codes expire one a second, the 30 accounts stay" 20 codes_go
"$ROOT/scripts/cluster.sh" stop "$CLUSTER"
feeder_gone() { ! kill -0 "$feeder" 2>/dev/null; }
wait_for "the feeder ends once the server is gone" 10 feeder_gone
kill -- -"$feeder" 2>/dev/null || true
finish
