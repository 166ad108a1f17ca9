#!/usr/bin/env bash
# jsonb_ttl on a Citus cluster (issue 23): a coordinator and two worker nodes, then a third
# (tests/e2e/citus_lib.sh). A TTL index on a hash-distributed table is purged where its shards
# live, by each node's own worker, from the TTL definitions the coordinator's worker hands on to
# the worker nodes; reference tables are purged through the coordinator. Shows:
#   1. a 16-shard table of 20,000 rows, half expired: the expired go from every placement on
#      both worker nodes, the live stay; each worker node's ttl_stats counts its part;
#   2. a reference table purged, on every copy;
#   3. a shard moved (block_writes, then force_logical): the node that now holds it purges it,
#      the old node's leftover copy is not purged; ttl_index_alter reaches the worker nodes;
#   4. a node added and the table rebalanced onto it: the new node purges its placements;
#   5. a distributed table with a foreign key to a reference table, with a filter;
#      ttl_index_drop reaches the worker nodes;
#   6. the options refused on a distributed table, and ttl_index_* refused on a worker node;
#   7. ttl_expire_now and ttl_stats on the coordinator, for the whole distributed table; then
#      each worker node's batches by key range through its shards' own TTL indexes;
#   8. the coordinator stopped: the worker nodes keep purging;
#   9. ttl_expire_preview on the coordinator for the distributed table: the rows counted directly;
#  10. a per-row TTL (row_ttl_path) on a distributed table, purged by every worker node;
#  11. schema-based sharding: a tenant schema's table (one shard), purged through the coordinator;
#  12. a shard split over two nodes: the nodes holding the new shards purge them;
#  13. the safety brake on the worker nodes: each pauses its shards of a mass-expired table,
#      nothing deleted, until ttl_index_resume on that node;
#  14. the operator's controls handed on: ttl_index_pause / ttl_index_resume and batch_size on the
#      coordinator hold on every node.
source "$(dirname "$0")/citus_lib.sh"
test_started=$(now_ms)
# wal_level = logical: shard moves with shard_transfer_mode => 'force_logical' (scenario 3).
start_citus "jsonb_ttl.frequency = 500" "wal_level = logical"

info() { echo "  info $*"; }
# expect_match DESCRIPTION REGEX ACTUAL
expect_match() {
  if [[ $3 =~ $2 ]]; then pass "$1"; else fail "$1: expected /$2/, got [$3]"; fi
}
expired="(doc->>'ts')::timestamptz < now() - interval '1 day'"
live="(doc->>'ts')::timestamptz >= now() - interval '1 day'"
events_shards="SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass"
# rows_deleted|errors of TABLE in NODE's ttl_stats (every row of its TTL index: the node's part)
stats_of() {
  qn "$1" "$CITUS_DB" -c "SELECT coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0)
                          FROM ttl_stats WHERE ttl_table = '$2'::regclass"
}
deleted_on() { stats_of "$1" "$2" | cut -d'|' -f1; }
# the sum of the rows_deleted of TABLE in the ttl_stats of the worker nodes started
deleted_on_workers() {
  local node total=0
  for node in "${CITUS_NODES[@]}"; do
    [ "$node" = coord ] || total=$((total + $(deleted_on "$node" "$1")))
  done
  echo $total
}
deleted_on_workers_is() { [ "$(deleted_on_workers "$1")" = "$2" ]; }
# N ids from FROM on that hash to shard SHARD of events, comma-separated
ids_in_shard() {
  qc -c "SELECT string_agg(g::text, ',') FROM (SELECT g FROM generate_series($2, $2 + 200000) g
         WHERE get_shard_id_for_distribution_column('events', g) = $1 LIMIT $3) s"
}
placement_port() {  # the port of the node that holds SHARD
  qc -c "SELECT string_agg(nodeport::text, ',') FROM pg_dist_shard_placement WHERE shardid = $1"
}
shard_exists_on() {  # whether NODE has a table named events_SHARD (a placement or a leftover)
  qn "$1" "$CITUS_DB" -c "SET citus.override_table_visibility = off" \
    -c "SELECT to_regclass('events_$2') IS NOT NULL"
}
insert_expired() {  # insert_expired NODE IDS (comma-separated): rows of events expired a day ago
  qn "$1" "$CITUS_DB" -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '2 days')
                          FROM unnest('{$2}'::bigint[]) g"
}

echo "== the cluster: Citus 13.2, a coordinator and two worker nodes with metadata"
for node in coord w1 w2; do
  expect_eq "$node: citus 13.2" "13.2-1" "$(qn "$node" "$CITUS_DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
done
expect_eq "the coordinator knows three nodes, all with metadata" "3|3" \
  "$(qc -c "SELECT count(*), count(*) FILTER (WHERE hasmetadata AND metadatasynced) FROM pg_dist_node")"
create_extension_on coord
for node in w1 w2; do
  expect_eq "$node has jsonb_ttl (Citus propagated CREATE EXTENSION)" 1 \
    "$(qn "$node" "$CITUS_DB" -c "SELECT count(*) FROM pg_extension WHERE extname = 'jsonb_ttl'")"
done

echo "== 1. a distributed table of 16 shards, 20,000 rows, half expired"
qc >/dev/null <<'SQL'
CREATE TABLE events (id bigint PRIMARY KEY, doc jsonb);
SELECT create_distributed_table('events', 'id', shard_count => 16);
INSERT INTO events
SELECT g, jsonb_build_object('ts', CASE WHEN g % 2 = 0 THEN now() - interval '2 days' ELSE now() END)
FROM generate_series(1, 20000) g;
SQL
expect_eq "the shards are on the two worker nodes, 8 each" "${CITUS_PORT[w1]}:8 ${CITUS_PORT[w2]}:8" \
  "$(qc -c "SELECT string_agg(nodeport || ':' || n, ' ' ORDER BY nodeport) FROM (SELECT nodeport, count(*) n FROM pg_dist_shard_placement WHERE shardid IN ($events_shards) GROUP BY nodeport) s")"
for node in w1 w2; do
  info "$node holds $(placement_count "$node" events "$expired") expired and $(placement_count "$node" events "$live") live rows of events"
done
expect_eq "ttl_index_create('events', 'ts', interval '1 day') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_index_create('events', 'ts', interval '1 day')")"
shard_ttl_indexes() {  # shard_ttl_indexes NODE: its shards of events with their TTL index
  qn "$1" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "
    SELECT count(*) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
    WHERE t.relname ~ '^events_[0-9]+\$' AND x.relname = 'events_ttl_idx_' || substring(t.relname from '[0-9]+\$')"
}
expect_eq "the TTL index reached every shard (events_ttl_idx_<shardid> on events_<shardid>)" 16 \
  $(($(shard_ttl_indexes w1) + $(shard_ttl_indexes w2)))
expect_eq "a worker node hides its shards from pg_class by default (placement_count looks behind it)" 0 \
  "$(qw1 -c "SELECT count(*) FROM pg_class WHERE relname ~ '^events_[0-9]+\$'")"
for node in w1 w2; do
  eventually_on "$node" "$node's ttl_index holds events (handed on by the coordinator's worker)" 10 \
    "1|1 day" "SELECT count(*) || '|' || min(expire_after) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass"
done
eventually_eq "no expired row left in events (the coordinator's view)" 30 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE $expired"
for node in w1 w2; do
  expect_eq "$node's placements: no expired row left (read on $node, shard by shard)" 0 \
    "$(placement_count "$node" events "$expired")"
done
expect_eq "the live rows stay: 10,000, on both worker nodes" 10000 \
  $(($(placement_count w1 events "$live") + $(placement_count w2 events "$live")))
expect_eq "every one of the 16 placements: no expired row left, live rows kept (run_command_on_placements)" "16|16|0|10000" \
  "$(qc -c "SELECT count(*) || '|' || count(*) FILTER (WHERE l.result::bigint > 0) || '|' || sum(e.result::bigint) || '|' || sum(l.result::bigint)
            FROM run_command_on_placements('events', \$\$SELECT count(*) FROM %s WHERE $expired\$\$) e
            JOIN run_command_on_placements('events', \$\$SELECT count(*) FROM %s WHERE $live\$\$) l USING (shardid, nodeport)")"
wait_for "the worker nodes' ttl_stats of events add up to 10,000 rows deleted" 10 deleted_on_workers_is events 10000 || true
for node in w1 w2; do
  s=$(stats_of "$node" events)
  info "$node's ttl_stats of events: $(qn "$node" "$CITUS_DB" -c "SELECT string_agg(table_name || ': runs ' || runs || ', rows_deleted ' || rows_deleted || ', errors ' || errors, '; ') FROM ttl_stats WHERE ttl_table = 'events'::regclass")"
  expect_match "$node's ttl_stats of events: rows deleted, no errors" '^[1-9][0-9]*\|0$' "$s"
done

echo "== 2. a reference table (a copy on every node): purged through the coordinator"
qc >/dev/null <<'SQL'
CREATE TABLE settings (id int PRIMARY KEY, doc jsonb);
SELECT create_reference_table('settings');
INSERT INTO settings
SELECT g, jsonb_build_object('ts', CASE WHEN g % 2 = 0 THEN now() - interval '2 days' ELSE now() END)
FROM generate_series(1, 100) g;
SQL
expect_eq "ttl_index_create on the reference table" ok \
  "$(outcome_on coord "SELECT ttl_index_create('settings', 'ts', interval '1 day')")"
eventually_eq "its expired rows go (the coordinator's view)" 10 50 "$CITUS_DB" "SELECT count(*) FROM settings"
settings_shard=settings_$(qc -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'settings'::regclass")
for node in coord w1 w2; do
  expect_eq "and from $node's copy ($settings_shard)" 50 \
    "$(qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM $settings_shard")"
done
eventually_eq "ttl_stats of settings on the coordinator: 50 rows deleted, no errors" 5 "50|0|" "$CITUS_DB" \
  "SELECT rows_deleted || '|' || errors || '|' || coalesce(last_error, '') FROM ttl_stats WHERE table_name = 'settings'::regclass"
expect_eq "the worker nodes' ttl_index leave it to the coordinator (no row for settings)" "0 0" \
  "$(qw1 -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'settings'::regclass") $(qw2 -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'settings'::regclass")"

echo "== 3. a shard moved from worker 1 to worker 2 (block_writes), another back (force_logical)"
moved=$(qc -c "SELECT min(shardid) FROM pg_dist_shard_placement WHERE nodeport = ${CITUS_PORT[w1]} AND shardid IN ($events_shards)")
# rows of that shard that expire only once expire_after drops to 12 hours, below
aging=$(ids_in_shard "$moved" 100001 50)
qc -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '18 hours') FROM unnest('{$aging}'::bigint[]) g"
# the old copy stays until citus_cleanup_orphaned_resources (not 15 s later), to look at it
qc -c "ALTER SYSTEM SET citus.defer_shard_delete_interval = -1" -c "SELECT pg_reload_conf()" >/dev/null
t0=$(now_ms)
expect_eq "citus_move_shard_placement($moved, worker 1 → worker 2, block_writes)" ok \
  "$(outcome_on coord "SELECT citus_move_shard_placement($moved, '127.0.0.1', ${CITUS_PORT[w1]}, '127.0.0.1', ${CITUS_PORT[w2]}, shard_transfer_mode => 'block_writes')")"
info "the move took $(($(now_ms) - t0)) ms; pg_dist_cleanup: $(qc -c "SELECT coalesce(string_agg(object_name || ' on group ' || node_group_id, ', '), 'empty') FROM pg_dist_cleanup")"
expect_eq "shard $moved is on worker 2 now" "${CITUS_PORT[w2]}" "$(placement_port "$moved")"
w1_before=$(deleted_on w1 events) w2_before=$(deleted_on w2 events)
fresh=$(ids_in_shard "$moved" 200001 200)
insert_expired coord "$fresh"
eventually_eq "200 expired rows inserted into shard $moved after the move go" 20 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE id IN ($fresh)"
eventually_on w2 "worker 2 deleted them (its ttl_stats of events: +200)" 10 $((w2_before + 200)) \
  "SELECT coalesce(sum(rows_deleted), 0) FROM ttl_stats WHERE ttl_table = 'events'::regclass"
expect_eq "worker 1 did not (its ttl_stats of events: +0)" "$w1_before" "$(deleted_on w1 events)"
if [ "$(shard_exists_on w1 "$moved")" = t ]; then
  expect_eq "worker 1's leftover copy of shard $moved (awaiting cleanup) holds the 50 rows 18 hours old" 50 \
    "$(qw1 -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM events_$moved WHERE id IN ($aging)")"
  expect_eq "ttl_index_alter('events', expire_after => interval '12 hours') on the coordinator" ok \
    "$(outcome_on coord "SELECT ttl_index_alter('events', expire_after => interval '12 hours')")"
  for node in w1 w2; do
    eventually_on "$node" "$node's ttl_index follows: expire_after 12:00:00" 10 "12:00:00" \
      "SELECT expire_after FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass"
  done
  eventually_eq "the 50 rows, now expired, go from the placement on worker 2" 20 0 "$CITUS_DB" \
    "SELECT count(*) FROM events WHERE id IN ($aging)"
  sleep 1  # two more passes of worker 1
  expect_eq "and stay in worker 1's leftover copy: a placement moved away is not purged" 50 \
    "$(qw1 -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM events_$moved WHERE id IN ($aging)")"
  expect_eq "ttl_index_alter('events', expire_after => interval '1 day') again" ok \
    "$(outcome_on coord "SELECT ttl_index_alter('events', expire_after => interval '1 day')")"
  for node in w1 w2; do
    eventually_on "$node" "$node's ttl_index follows: expire_after 1 day" 10 "1 day" \
      "SELECT expire_after FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass"
  done
else
  fail "worker 1 has no leftover copy of shard $moved to look at (citus.defer_shard_delete_interval = -1)"
fi
qc -c "ALTER SYSTEM RESET citus.defer_shard_delete_interval" -c "SELECT pg_reload_conf()" -c "CALL citus_cleanup_orphaned_resources()" >/dev/null
expect_eq "citus_cleanup_orphaned_resources() dropped the leftover copy" f "$(shard_exists_on w1 "$moved")"

moved_back=$(qc -c "SELECT min(shardid) FROM pg_dist_shard_placement WHERE nodeport = ${CITUS_PORT[w2]} AND shardid IN ($events_shards) AND shardid <> $moved")
t0=$(now_ms)
expect_eq "citus_move_shard_placement($moved_back, worker 2 → worker 1, force_logical)" ok \
  "$(outcome_on coord "SELECT citus_move_shard_placement($moved_back, '127.0.0.1', ${CITUS_PORT[w2]}, '127.0.0.1', ${CITUS_PORT[w1]}, shard_transfer_mode => 'force_logical')")"
info "the move took $(($(now_ms) - t0)) ms"
expect_eq "shard $moved_back is on worker 1 now" "${CITUS_PORT[w1]}" "$(placement_port "$moved_back")"
w1_before=$(deleted_on w1 events)
fresh=$(ids_in_shard "$moved_back" 300001 200)
insert_expired coord "$fresh"
eventually_eq "200 expired rows inserted into shard $moved_back after the move go" 20 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE id IN ($fresh)"
eventually_on w1 "worker 1 deleted them (its ttl_stats of events: +200)" 10 $((w1_before + 200)) \
  "SELECT coalesce(sum(rows_deleted), 0) FROM ttl_stats WHERE ttl_table = 'events'::regclass"
qc -c "CALL citus_cleanup_orphaned_resources()" >/dev/null

echo "== 4. a third worker node added, the table rebalanced onto it"
t0=$(now_ms)
add_citus_node w3
info "worker 3 started and added in $(($(now_ms) - t0)) ms"
expect_eq "worker 3 has jsonb_ttl: citus_add_node created it there (Citus propagates extensions)" 1 \
  "$(qw3 -c "SELECT count(*) FROM pg_extension WHERE extname = 'jsonb_ttl'")"
eventually_on w3 "worker 3's ttl_index holds events (handed on at the next pass: the nodes changed)" 10 \
  "1|1 day" "SELECT count(*) || '|' || min(expire_after) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass"
t0=$(now_ms)
# two statements, two transactions: the background job that citus_rebalance_start schedules
# runs once it commits (in one transaction with citus_rebalance_wait, the wait never ends)
expect_eq "citus_rebalance_start(shard_transfer_mode => 'block_writes'), citus_rebalance_wait()" ok \
  "$(qc -c "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')" -c "SET statement_timeout = '120s'" \
        -c "SELECT citus_rebalance_wait()" >/dev/null 2>&1 && echo ok || echo "failed: $(qc -c "SELECT state || ' ' || coalesce(description, '') FROM pg_dist_background_job ORDER BY job_id DESC LIMIT 1")")"
info "the rebalance took $(($(now_ms) - t0)) ms; placements of events: $(qc -c "SELECT string_agg(nodeport || ':' || n, ' ' ORDER BY nodeport) FROM (SELECT nodeport, count(*) n FROM pg_dist_shard_placement WHERE shardid IN ($events_shards) GROUP BY nodeport) s")"
w3_shards=$(qc -c "SELECT string_agg(shardid::text, ',') FROM pg_dist_shard_placement WHERE nodeport = ${CITUS_PORT[w3]} AND shardid IN ($events_shards)")
expect_match "worker 3 holds shards of events" '^[0-9]+(,[0-9]+)+$' "$w3_shards"
expect_eq "the TTL index is on worker 3's shards" "$(echo "$w3_shards" | tr ',' '\n' | grep -c .)" "$(shard_ttl_indexes w3)"
w3_ids=$(qc -c "SELECT string_agg(g::text, ',') FROM (SELECT g FROM generate_series(400001, 410000) g
                WHERE get_shard_id_for_distribution_column('events', g) IN (${w3_shards:-0}) LIMIT 300) s")
w3_before=$(deleted_on w3 events)
insert_expired coord "$w3_ids"
eventually_eq "300 expired rows inserted into worker 3's shards go" 20 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE id IN (${w3_ids:-0})"
eventually_on w3 "worker 3 deleted them (its ttl_stats of events: +300, no errors)" 10 "$((w3_before + 300))|0" \
  "SELECT coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0) FROM ttl_stats WHERE ttl_table = 'events'::regclass"
for node in w1 w2 w3; do
  expect_eq "$node's placements after the rebalance: no expired row" 0 "$(placement_count "$node" events "$expired")"
done
expect_eq "the live rows stay: 10,000" 10000 "$(qc -c "SELECT count(*) FROM events WHERE $live")"

echo "== 5. a distributed table with a foreign key to a reference table, and a filter"
qc >/dev/null <<'SQL'
CREATE TABLE tenants (id int PRIMARY KEY, doc jsonb);
SELECT create_reference_table('tenants');
INSERT INTO tenants SELECT g, jsonb_build_object('ts', now() - interval '2 days') FROM generate_series(1, 10) g;
CREATE TABLE sessions (id bigint PRIMARY KEY, tenant_id int NOT NULL REFERENCES tenants (id), doc jsonb);
SELECT create_distributed_table('sessions', 'id', colocate_with => 'events');
-- g % 4: 0 expired log, 1 live log, 2 expired audit, 3 live audit
INSERT INTO sessions
SELECT g, g % 10 + 1, jsonb_build_object('kind', CASE WHEN g % 4 < 2 THEN 'log' ELSE 'audit' END,
                                         'ts', CASE WHEN g % 2 = 0 THEN now() - interval '2 days' ELSE now() END)
FROM generate_series(1, 4000) g;
SQL
expect_eq "ttl_index_create('sessions', 'ts', interval '1 day', filter => \$\$doc->>'kind' = 'log'\$\$)" ok \
  "$(outcome_on coord "SELECT ttl_index_create('sessions', 'ts', interval '1 day', filter => \$\$doc->>'kind' = 'log'\$\$)")"
sessions_filter=$(qc -c "SELECT filter FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass")
for node in w1 w2 w3; do
  eventually_on "$node" "$node's ttl_index holds sessions with its filter" 10 "$sessions_filter" \
    "SELECT filter FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass"
done
eventually_eq "the 1,000 expired log sessions go" 30 0 "$CITUS_DB" \
  "SELECT count(*) FROM sessions WHERE $expired AND doc->>'kind' = 'log'"
expect_eq "the 1,000 expired audit sessions (outside the filter) and the 2,000 live stay" "1000|2000" \
  "$(qc -c "SELECT count(*) FILTER (WHERE $expired) || '|' || count(*) FILTER (WHERE $live) FROM sessions")"
expect_eq "the 10 tenants they reference stay" 10 "$(qc -c "SELECT count(*) FROM tenants")"
expect_eq "ttl_index_drop('sessions') on the coordinator" t "$(qc -c "SELECT ttl_index_drop('sessions')")"
for node in w1 w2 w3; do
  eventually_on "$node" "$node's ttl_index drops sessions too" 10 0 \
    "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass"
done

echo "== 6. what a distributed table refuses, at creation (SQLSTATE 0A000, naming the table)"
qc >/dev/null <<'SQL'
CREATE TABLE refused (id bigint, doc jsonb);
SELECT create_distributed_table('refused', 'id', shard_count => 4);
CREATE TABLE parted (id bigint, day date, doc jsonb) PARTITION BY RANGE (day);
CREATE TABLE parted_2026 PARTITION OF parted FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
SELECT create_distributed_table('parted', 'id', shard_count => 4);
SQL
expect_match "touch => true" '^0A000: .*touch.* (public\.)?refused( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_create('refused', 'ts', interval '1 day', touch => true)")"
expect_match "hide_expired => true" '^0A000: .*hide_expired.* (public\.)?refused( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_create('refused', 'ts', interval '1 day', hide_expired => true)")"
expect_match "drop_partitions => 'drop'" '^0A000: .*drop_partitions.* (public\.)?refused( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_create('refused', 'ts', interval '1 day', drop_partitions => 'drop')")"
qc -c "CREATE TABLE refused_archive (id bigint, doc jsonb)" >/dev/null
expect_match "archive_to => a local table" '^0A000: .*archive_to.* (public\.)?refused( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_create('refused', 'ts', interval '1 day', archive_to => 'refused_archive')")"
expect_match "ttl_index_alter('events', archive_to => a local table)" '^0A000: .*archive_to.* (public\.)?events( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_alter('events', archive_to => 'refused_archive')")"
expect_match "ttl_field_create on a distributed table" '^0A000: (public\.)?refused .*Citus' \
  "$(sqlstate_on coord "SELECT ttl_field_create('refused', 'otp.at', interval '1 day')")"
expect_match "a partitioned distributed table" '^0A000: .*partitioned.* (public\.)?parted( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_create('parted', 'ts', interval '1 day')")"
expect_match "ttl_index_alter('events', touch => true) on the coordinator" '^0A000: .*touch.* (public\.)?events( |$)' \
  "$(sqlstate_on coord "SELECT ttl_index_alter('events', touch => true)")"
expect_eq "no TTL index left behind by the refusals" 0 \
  "$(qc -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid IN ('refused'::regclass, 'parted'::regclass)")"
expect_match "ttl_index_create on a worker node: managed on the coordinator" '^0A000: .* (public\.)?refused .*coordinator' \
  "$(sqlstate_on w1 "SELECT ttl_index_create('refused', 'ts', interval '1 day')")"
expect_match "ttl_index_alter on a worker node" '^0A000: .* (public\.)?events .*coordinator' \
  "$(sqlstate_on w1 "SELECT ttl_index_alter('events', interval '2 days')")"
expect_match "ttl_index_drop on a worker node" '^0A000: .* (public\.)?events .*coordinator' \
  "$(sqlstate_on w2 "SELECT ttl_index_drop('events')")"
expect_eq "the worker nodes' catalog unchanged: events, 1 day" "1 day|1 day" \
  "$(qw1 -c "SELECT expire_after FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass")|$(qw2 -c "SELECT expire_after FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'events'::regclass")"

echo "   a table distributed after its TTL index got archive_to: not handed on, nothing deleted"
qc >/dev/null <<'SQL'
CREATE TABLE later (id bigint, doc jsonb);
CREATE TABLE later_archive (id bigint, doc jsonb);
SELECT FROM ttl_index_create('later', 'ts', interval '1 day', archive_to => 'later_archive');
SELECT create_distributed_table('later', 'id', shard_count => 4);
INSERT INTO later SELECT g, jsonb_build_object('ts', now() - interval '2 days') FROM generate_series(1, 200) g;
SQL
sleep 3  # the coordinator's handing on, and several passes of the nodes (every 500 ms)
later_on() { "$1" -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'later'::regclass"; }
expect_eq "its 200 expired rows stay on the shards, archived nowhere; no node has its TTL index" "200|0|0" \
  "$(qc -c "SELECT count(*) FROM later")|$(later_on qw1)|$(later_on qw2)"
expect_match "ttl_expire_now refuses it" '^0A000: .*archive_to.* (public\.)?later( |$)' \
  "$(sqlstate_on coord "SELECT ttl_expire_now('later')")"
qc -c "DROP TABLE later, later_archive" >/dev/null

echo "   a table distributed after its field TTL was created: left alone, nothing changed"
qc >/dev/null <<'SQL'
CREATE TABLE later_codes (id bigint, doc jsonb);
SELECT ttl_field_create('later_codes', 'otp.at', interval '1 minute');
SELECT create_distributed_table('later_codes', 'id', shard_count => 4);
INSERT INTO later_codes SELECT g, jsonb_build_object('otp', jsonb_build_object('at', now() - interval '1 day')) FROM generate_series(1, 50) g;
SQL
sleep 2  # several passes of every node (every 500 ms)
expect_eq "its 50 expired codes stay (field TTLs are not distributed)" "50" \
  "$(qc -c "SELECT count(*) FROM later_codes WHERE doc ? 'otp'")"
qc -c "DROP TABLE later_codes" >/dev/null

echo "== 7. ttl_expire_now and ttl_stats on the coordinator, for the whole distributed table"
for node in "${CITUS_NODES[@]}"; do
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
done
all_passes_stopped() {
  local node
  for node in "${CITUS_NODES[@]}"; do
    [ "$(qn "$node" "$CITUS_DB" -c "SELECT coalesce(now() - last_pass_at > interval '600 ms', true) FROM ttl_statistics()")" = t ] || return 1
  done
}
wait_for "jsonb_ttl.enabled = off: every node's worker stopped" 10 all_passes_stopped || true
on_workers=$(deleted_on_workers events)
eventually_eq "ttl_stats on the coordinator: events once, its rows_deleted summed over the nodes ($on_workers), no errors" 10 \
  "1|$on_workers|0" "$CITUS_DB" \
  "SELECT count(*) || '|' || coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0) FROM ttl_stats WHERE table_name = 'events'::regclass"
qc -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '2 days') FROM generate_series(500001, 501000) g"
sleep 1
expect_eq "1,000 expired rows inserted stay while the workers are off" 1000 \
  "$(qc -c "SELECT count(*) FROM events WHERE id > 500000 AND id <= 501000")"
expect_eq "ttl_expire_now('events') on the coordinator removes the 1,000 from every node" "1000" \
  "$(qc -c "SELECT ttl_expire_now('events')" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "none left" 0 "$(qc -c "SELECT count(*) FROM events WHERE id > 500000 AND id <= 501000")"
for node in w1 w2 w3; do
  expect_eq "none left on $node's placements" 0 "$(placement_count "$node" events "id > 500000 AND id <= 501000")"
done
# ttl_expire_now('events') called in a client session of a worker node itself, where Citus
# hides the shards from pg_class: its shards' TTL indexes are found by their shape all the same
qc -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '2 days') FROM generate_series(501001, 502000) g"
on_w1=$(placement_count w1 events "id > 501000 AND id <= 502000")
expect_eq "ttl_expire_now('events') in a client session of w1 removes w1's $on_w1 of them" "$on_w1" \
  "$(qw1 -c "SELECT ttl_expire_now('events')" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "none left on w1's placements" 0 "$(placement_count w1 events "id > 501000 AND id <= 502000")"
qc -c "DELETE FROM events WHERE id > 501000 AND id <= 502000" >/dev/null
for node in "${CITUS_NODES[@]}"; do
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM RESET jsonb_ttl.enabled" -c "SELECT pg_reload_conf()" >/dev/null
done

echo "== 7b. each worker node's batches read its shards' TTL indexes: no document parsed again"
# 40,000 expired rows, each a millisecond apart (about 2,500 a shard, more than a first batch
# of 1,000), inserted while the workers are off; then, with track_functions = all on the
# worker nodes, their workers purge them: batches by key range through each shard's own copy of
# the TTL index decide expiry on the keys it stores, and compute no reference time
# (ttl_timestamp); batches that picked their rows and tested expiry again in their DELETE
# compute it once per row (40,000).
# Two other things the counts below would take in, kept out: an ANALYZE of a shard computes the
# TTL index's expression for each row it samples (autovacuum's, at any moment after 40,000
# inserts: 7,440 calls on one node with autovacuum_naptime = 1, 20,216 in a loaded CI run), so
# autovacuum is off for the shards of events meanwhile; and the copies left by the moves of
# scenarios 3 and 4, whose n_tup_del leaves any sum when Citus drops them (every 15 s): they are
# dropped first, and the deletes are counted in the shards there both before and after.
for node in "${CITUS_NODES[@]}"; do
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
done
wait_for "jsonb_ttl.enabled = off: every node's worker stopped" 10 all_passes_stopped || true
info "leftover copies awaiting Citus's cleanup, dropped now: $(qc -c "SELECT count(*) FROM pg_dist_cleanup")"
qc -c "ALTER TABLE events SET (autovacuum_enabled = off)" -c "CALL citus_cleanup_orphaned_resources()" >/dev/null
autovacuum_off_on_shards() {  # every placement of events on the worker nodes: autovacuum_enabled=off
  [ "$(on_worker_nodes "SELECT count(*) FROM pg_class WHERE relname ~ '^events_[0-9]+\$' AND relkind = 'r'
                        AND coalesce(reloptions::text !~ 'autovacuum_enabled=(off|false)', true)")" = 0 ]
}
qc -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '2 days' - g * interval '1 ms') FROM generate_series(510001, 550000) g"
on_worker_nodes() {  # on_worker_nodes SQL: its (numeric) result summed over the worker nodes
  local node total=0
  for node in "${CITUS_NODES[@]}"; do
    [ "$node" = coord ] && continue
    total=$((total + $(qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "$1")))
  done
  echo $total
}
expect_eq "autovacuum off on every shard of events (an ANALYZE would compute the reference time)" yes \
  "$(autovacuum_off_on_shards && echo yes || echo no)"
reference_calls_on_workers() {
  on_worker_nodes "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'ttl_timestamp'"
}
# the deletes the worker nodes' statistics count in each of their shards of events, a line
# `NODE:RELID N_TUP_DEL` each (the workers flush their function calls with them)
shard_deletes_table() {
  local node
  for node in "${CITUS_NODES[@]}"; do
    [ "$node" = coord ] && continue
    qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" \
      -c "SELECT '$node:' || relid || ' ' || n_tup_del FROM pg_stat_user_tables WHERE relname ~ '^events_[0-9]+\$'"
  done | LC_ALL=C sort
}
for node in "${CITUS_NODES[@]}"; do
  [ "$node" = coord ] || qn "$node" "$CITUS_DB" -c "ALTER SYSTEM SET track_functions = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
done
calls_before=$(reference_calls_on_workers)
deletes_before=$(shard_deletes_table)
for node in "${CITUS_NODES[@]}"; do
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM RESET jsonb_ttl.enabled" -c "SELECT pg_reload_conf()" >/dev/null
done
eventually_eq "the 40,000 go" 60 0 "$CITUS_DB" "SELECT count(*) FROM events WHERE id > 510000 AND id <= 550000"
# the deletes counted since the baseline in the shards there then and now (a table Citus drops
# meanwhile takes its counts out of any sum)
shard_deletes_since() {
  LC_ALL=C join <(echo "$deletes_before") <(shard_deletes_table) | awk '{s += $3 - $2} END {print s + 0}'
}
shard_deletes_flushed() { [ "$(shard_deletes_since)" -ge 40000 ]; }
# (a node's worker flushes its table statistics when it next reports them: under a loaded CI run
# that took over 10 s once, cig6)
if ! wait_for "the worker nodes' statistics count the 40,000 deletes in their shards" 30 shard_deletes_flushed; then
  info "deletes counted since in the shards still there: $(shard_deletes_since); shards gone since:" \
    "$(LC_ALL=C comm -23 <(echo "$deletes_before" | cut -d' ' -f1) <(shard_deletes_table | cut -d' ' -f1) | tr '\n' ' ')"
fi
calls=$(( $(reference_calls_on_workers) - calls_before ))
if [ "$calls" -lt 4000 ]; then
  pass "the worker nodes computed the reference time $calls times for 40,000 rows deleted from their shards (batches that test expiry again: 40,000)"
else
  fail "the worker nodes computed the reference time $calls times for 40,000 rows deleted: documents parsed again"
  # (what each worker node says, for the next reader of a failed run: its calls, its shards'
  # deletes, its ttl_stats of events, what its worker does now)
  for node in "${CITUS_NODES[@]}"; do
    [ "$node" = coord ] && continue
    echo "       $node: $(qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "
      SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'ttl_timestamp') || ' calls, ' ||
             (SELECT coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables WHERE relname ~ '^events_[0-9]+\$') || ' shard deletes; ttl_stats: ' ||
             coalesce((SELECT string_agg(table_name::text || ' ' || rows_deleted || ' ' || coalesce(last_error, '-'), '; ') FROM ttl_stats), '-') || '; worker: ' ||
             coalesce((SELECT string_agg(coalesce(query, '-'), '; ') FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker'), '-')" 2>&1 | tail -1)"
  done
fi
for node in "${CITUS_NODES[@]}"; do
  [ "$node" = coord ] || qn "$node" "$CITUS_DB" -c "ALTER SYSTEM RESET track_functions" -c "SELECT pg_reload_conf()" >/dev/null
done
qc -c "ALTER TABLE events RESET (autovacuum_enabled)" >/dev/null

echo "== 8. the coordinator stopped: the worker nodes keep purging"
before=$(deleted_on_workers events)
stop_citus_node coord
expect_eq "the coordinator is down" down "$(qc -c "SELECT 1" >/dev/null 2>&1 && echo up || echo down)"
expect_eq "INSERT INTO events on worker 1 (metadata synced): 600 expired rows, spread over the nodes" ok \
  "$(outcome_on w1 "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - interval '2 days') FROM generate_series(600001, 600600) g")"
eventually_on w1 "they go (worker 1's view of events)" 30 0 "SELECT count(*) FROM events WHERE id > 600000"
for node in w1 w2 w3; do
  expect_eq "none left on $node's placements" 0 "$(placement_count "$node" events "id > 600000")"
done
wait_for "the worker nodes' ttl_stats of events: +600" 10 deleted_on_workers_is events $((before + 600)) || true
restart_citus_node coord
expect_eq "the coordinator back: no expired row in events" 0 "$(qc -c "SELECT count(*) FROM events WHERE $expired")"

workers=()  # the worker nodes started (w1, w2, w3 by now)
for node in "${CITUS_NODES[@]}"; do [ "$node" = coord ] || workers+=("$node"); done

echo "== 9. ttl_expire_preview on the coordinator: what the distributed table would lose, as counted directly"
# 300 rows 18 hours old and 200 rows 6 hours old, live today (expire_after 1 day), on every node
qc -c "INSERT INTO events SELECT g, jsonb_build_object('ts', now() - CASE WHEN g <= 700300 THEN interval '18 hours' ELSE interval '6 hours' END)
       FROM generate_series(700001, 700500) g"
# the preview and the direct count in one statement (one now()): rows, whether the oldest and
# newest agree, and the direct count
preview_vs_count() {
  qc -c "SELECT p.rows || '|' || (p.oldest IS NOT DISTINCT FROM d.oldest) || '|' || (p.newest IS NOT DISTINCT FROM d.newest) || '|' || d.rows
         FROM ttl_expire_preview('events', now() + interval '$1') p,
              (SELECT count(*) AS rows, min((doc->>'ts')::timestamptz) AS oldest, max((doc->>'ts')::timestamptz) AS newest
               FROM events WHERE (doc->>'ts')::timestamptz < now() + interval '$1' - interval '1 day') d"
}
for ahead in "12 hours:300" "20 hours:500" "1 minute:0"; do
  expect_eq "ttl_expire_preview('events', now() + interval '${ahead%%:*}'): the ${ahead##*:} rows counted directly (rows|oldest agrees|newest agrees|counted)" \
    "${ahead##*:}|true|true|${ahead##*:}" "$(preview_vs_count "${ahead%%:*}" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
done
expect_eq "the preview deleted nothing: the 500 rows are there" 500 \
  "$(qc -c "SELECT count(*) FROM events WHERE id BETWEEN 700001 AND 700500")"
qc -c "DELETE FROM events WHERE id BETWEEN 700001 AND 700500"

echo "== 10. a per-row TTL (row_ttl_path => 'ttl') on a distributed table of 8 shards"
# g % 5: 0 its own TTL (60 s) passed an hour ago: goes; 1 two days old, ttl -1 (never): stays;
#        2 two days old, no ttl (1 day): goes; 3 an hour old, no ttl: stays;
#        4 two days old, its own TTL 7 days: stays
qc >/dev/null <<'SQL'
CREATE TABLE tickets (id bigint PRIMARY KEY, doc jsonb);
SELECT create_distributed_table('tickets', 'id', shard_count => 8);
INSERT INTO tickets
SELECT g, CASE g % 5
            WHEN 0 THEN jsonb_build_object('ts', now() - interval '1 hour', 'ttl', 60)
            WHEN 1 THEN jsonb_build_object('ts', now() - interval '2 days', 'ttl', -1)
            WHEN 2 THEN jsonb_build_object('ts', now() - interval '2 days')
            WHEN 3 THEN jsonb_build_object('ts', now() - interval '1 hour')
            ELSE jsonb_build_object('ts', now() - interval '2 days', 'ttl', 7 * 86400)
          END
FROM generate_series(1, 2500) g;
SQL
info "tickets' shards per node: $(qc -c "SELECT string_agg(nodeport || ':' || n, ' ' ORDER BY nodeport) FROM (SELECT nodeport, count(*) n FROM pg_dist_shard_placement WHERE shardid IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'tickets'::regclass) GROUP BY nodeport) s")"
expect_eq "ttl_index_create('tickets', 'ts', interval '1 day', row_ttl_path => 'ttl') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_index_create('tickets', 'ts', interval '1 day', row_ttl_path => 'ttl')")"
for node in "${workers[@]}"; do
  eventually_on "$node" "$node's ttl_index holds tickets with row_ttl_path ttl" 10 "ttl|1 day" \
    "SELECT row_ttl_path || '|' || expire_after FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'tickets'::regclass"
done
eventually_eq "the 500 rows whose own TTL passed and the 500 old rows without ttl go" 30 "0|0" "$CITUS_DB" \
  "SELECT count(*) FILTER (WHERE id % 5 = 0) || '|' || count(*) FILTER (WHERE id % 5 = 2) FROM tickets"
expect_eq "the 500 with ttl -1, the 500 an hour old without ttl and the 500 with 7 days of their own stay" "500|500|500" \
  "$(qc -c "SELECT count(*) FILTER (WHERE id % 5 = 1) || '|' || count(*) FILTER (WHERE id % 5 = 3) || '|' || count(*) FILTER (WHERE id % 5 = 4) FROM tickets")"
wait_for "the worker nodes' ttl_stats of tickets add up to 1,000 rows deleted" 10 deleted_on_workers_is tickets 1000 || true
for node in "${workers[@]}"; do
  held=$(placement_count "$node" tickets true)
  if [ "$held" -gt 0 ]; then
    expect_match "$node (holds $held rows of tickets) deleted some: its ttl_stats of tickets, no errors" \
      '^[1-9][0-9]*\|0$' "$(stats_of "$node" tickets)"
  fi
  expect_eq "$node's placements of tickets: none of the 1,000 left" 0 "$(placement_count "$node" tickets "id % 5 IN (0, 2)")"
done
expect_eq "ttl_stats of tickets on the coordinator: once a part (expire_after, row_ttl), 1,000 rows deleted, no errors" "2|1000|0" \
  "$(qc -c "SELECT count(*) || '|' || coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0) FROM ttl_stats WHERE table_name = 'tickets'::regclass")"

echo "== 11. schema-based sharding: tenant1.ev, a single-shard distributed table"
qc >/dev/null <<'SQL'
SET citus.enable_schema_based_sharding = on;
CREATE SCHEMA tenant1;
CREATE TABLE tenant1.ev (id bigint PRIMARY KEY, doc jsonb);
RESET citus.enable_schema_based_sharding;
INSERT INTO tenant1.ev
SELECT g, jsonb_build_object('ts', CASE WHEN g % 3 = 0 THEN now() ELSE now() - interval '2 days' END)
FROM generate_series(1, 600) g;
SQL
expect_eq "tenant1.ev is a schema table of one shard" "schema|1" \
  "$(qc -c "SELECT citus_table_type || '|' || shard_count FROM citus_tables WHERE table_name = 'tenant1.ev'::regclass")"
info "its shard is on port $(qc -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'tenant1.ev'::regclass)")"
expect_eq "ttl_index_create('tenant1.ev', 'ts', interval '1 day') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_index_create('tenant1.ev', 'ts', interval '1 day')")"
eventually_eq "its 400 expired rows go, its 200 live stay" 20 "0|200" "$CITUS_DB" \
  "SELECT count(*) FILTER (WHERE $expired) || '|' || count(*) FILTER (WHERE $live) FROM tenant1.ev"
eventually_eq "ttl_stats of tenant1.ev on the coordinator: 400 rows deleted, no errors" 5 "400|0|" "$CITUS_DB" \
  "SELECT rows_deleted || '|' || errors || '|' || coalesce(last_error, '') FROM ttl_stats WHERE table_name = 'tenant1.ev'::regclass"
for node in "${workers[@]}"; do
  expect_eq "$node's ttl_index leaves tenant1.ev to the coordinator (no row)" 0 \
    "$(qn "$node" "$CITUS_DB" -c "SELECT count(*) FROM jsonb_ttl_internal.ttl_index WHERE table_oid = to_regclass('tenant1.ev')")"
done

echo "== 12. a shard of events split in two (block_writes), the halves on worker 1 and worker 2"
split=$(qc -c "SELECT min(shardid) FROM pg_dist_shard_placement WHERE nodeport = ${CITUS_PORT[w1]} AND shardid IN ($events_shards)")
range=$(qc -c "SELECT shardminvalue || ' ' || shardmaxvalue FROM pg_dist_shard WHERE shardid = $split")
point=$(( (${range% *} + ${range#* }) / 2 ))
node_w1=$(qc -c "SELECT nodeid FROM pg_dist_node WHERE nodeport = ${CITUS_PORT[w1]}")
node_w2=$(qc -c "SELECT nodeid FROM pg_dist_node WHERE nodeport = ${CITUS_PORT[w2]}")
t0=$(now_ms)
expect_eq "citus_split_shard_by_split_points($split [${range% *}, ${range#* }], ARRAY['$point'], ARRAY[$node_w1, $node_w2], block_writes)" ok \
  "$(outcome_on coord "SELECT citus_split_shard_by_split_points($split, ARRAY['$point'], ARRAY[$node_w1, $node_w2], shard_transfer_mode => 'block_writes')")"
info "the split took $(($(now_ms) - t0)) ms"
lower=$(qc -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass AND shardminvalue = '${range% *}' AND shardmaxvalue = '$point'")
upper=$(qc -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass AND shardminvalue = '$((point + 1))' AND shardmaxvalue = '${range#* }'")
expect_match "two new shards: [${range% *}, $point] and [$((point + 1)), ${range#* }]" '^[0-9]+ [0-9]+$' "$lower $upper"
expect_eq "shard $split is gone from the metadata" 0 "$(qc -c "SELECT count(*) FROM pg_dist_shard WHERE shardid = $split")"
expect_eq "the lower half on worker 1, the upper on worker 2" "${CITUS_PORT[w1]} ${CITUS_PORT[w2]}" \
  "$(placement_port "${lower:-0}") $(placement_port "${upper:-0}")"
expect_eq "the TTL index is on both new shards" "events_ttl_idx_${lower} events_ttl_idx_${upper}" \
  "$(qw1 -c "SET citus.override_table_visibility = off" -c "SELECT coalesce(to_regclass('events_ttl_idx_${lower:-0}')::text, 'missing')") $(qw2 -c "SET citus.override_table_visibility = off" -c "SELECT coalesce(to_regclass('events_ttl_idx_${upper:-0}')::text, 'missing')")"
lower_ids=$(qc -c "SELECT string_agg(g::text, ',') FROM (SELECT g FROM generate_series(800001, 900000) g
                   WHERE get_shard_id_for_distribution_column('events', g) = ${lower:-0} LIMIT 150) s")
upper_ids=$(qc -c "SELECT string_agg(g::text, ',') FROM (SELECT g FROM generate_series(800001, 900000) g
                   WHERE get_shard_id_for_distribution_column('events', g) = ${upper:-0} LIMIT 150) s")
# (a node's ttl_stats counts its shards under the table: a node's total, which the split keeps)
w1_before=$(deleted_on w1 events) w2_before=$(deleted_on w2 events) w3_before=$(deleted_on w3 events)
insert_expired coord "${lower_ids:-0},${upper_ids:-0}"
eventually_eq "150 expired rows inserted into each new shard go" 20 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE id IN (${lower_ids:-0},${upper_ids:-0})"
for half in "w1:${lower:-0}" "w2:${upper:-0}"; do
  expect_eq "and from ${half%%:*}'s shard ${half##*:} (read on ${half%%:*})" 0 \
    "$(qn "${half%%:*}" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM events_${half##*:} WHERE id IN (${lower_ids:-0},${upper_ids:-0})")"
done
eventually_on w1 "worker 1 deleted those of shard $lower (its ttl_stats of events: +150, no errors)" 10 "$((w1_before + 150))|0" \
  "SELECT coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0) FROM ttl_stats WHERE ttl_table = 'events'::regclass"
eventually_on w2 "worker 2 deleted those of shard $upper (its ttl_stats of events: +150, no errors)" 10 "$((w2_before + 150))|0" \
  "SELECT coalesce(sum(rows_deleted), 0) || '|' || coalesce(sum(errors), 0) FROM ttl_stats WHERE ttl_table = 'events'::regclass"
expect_eq "worker 3 did not (+0)" "$w3_before" "$(deleted_on w3 events)"
expect_eq "no expired row left in events" 0 "$(qc -c "SELECT count(*) FROM events WHERE $expired")"
qc -c "CALL citus_cleanup_orphaned_resources()" >/dev/null

echo "== 13. the safety brake on the worker nodes: a table of 6,000 rows, 75 % expired at once"
for node in "${workers[@]}"; do
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM SET jsonb_ttl.max_table_fraction = 0.5" \
    -c "ALTER SYSTEM SET jsonb_ttl.brake_min_rows = 100" -c "SELECT pg_reload_conf()" >/dev/null
done
for node in "${workers[@]}"; do
  eventually_on "$node" "$node: max_table_fraction 0.5, brake_min_rows 100" 5 "0.5|100" \
    "SELECT current_setting('jsonb_ttl.max_table_fraction') || '|' || current_setting('jsonb_ttl.brake_min_rows')"
done
# 6 shards of about 1,000 rows (over brake_min_rows), about 750 of each expired (over half);
# ANALYZE (propagated to the shards) gives the brake their size
qc >/dev/null <<'SQL'
CREATE TABLE bulk (id bigint PRIMARY KEY, doc jsonb);
SELECT create_distributed_table('bulk', 'id', shard_count => 6);
INSERT INTO bulk
SELECT g, jsonb_build_object('ts', CASE WHEN g % 4 = 0 THEN now() ELSE now() - interval '2 days' END)
FROM generate_series(1, 6000) g;
ANALYZE bulk;
SQL
info "bulk's shards (reltuples): $(qc -c "SELECT string_agg(shardid || '@' || nodeport || ':' || result, ' ' ORDER BY shardid) FROM run_command_on_shards('bulk', \$\$SELECT reltuples::int FROM pg_class WHERE oid = '%s'::regclass\$\$) JOIN pg_dist_shard_placement USING (shardid)")"
expect_eq "ttl_index_create('bulk', 'ts', interval '1 day') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_index_create('bulk', 'ts', interval '1 day')")"
for node in "${workers[@]}"; do
  eventually_on "$node" "$node pauses bulk: ttl_indexes.paused_at set, its ttl_stats.skipped says why" 15 "true|true" \
    "SELECT (paused_at IS NOT NULL) || '|' || (SELECT bool_and(skipped LIKE 'paused by the safety brake: more than % rows of %(jsonb_ttl.max_table_fraction = 0.5)%')
                                                 FROM ttl_stats WHERE ttl_table = 'bulk'::regclass)
     FROM ttl_indexes WHERE table_name = 'bulk'::regclass"
done
sleep 1  # two more passes of every node
expect_eq "nothing of bulk deleted: 6,000 rows" 6000 "$(qc -c "SELECT count(*) FROM bulk")"
for node in "${workers[@]}"; do
  # (a pause is not an error: ttl_stats shows it in paused, paused_by and skipped)
  expect_eq "$node: its ttl_stats of bulk, 0 rows deleted, paused by the brake, no error" "0|true|brake|0" \
    "$(qn "$node" "$CITUS_DB" -c "SELECT DISTINCT rows_deleted || '|' || paused || '|' || paused_by || '|' || errors FROM ttl_stats WHERE ttl_table = 'bulk'::regclass")"
  info "$node: $(qn "$node" "$CITUS_DB" -c "SELECT skipped FROM ttl_stats WHERE ttl_table = 'bulk'::regclass LIMIT 1")"
done
expect_match "the reason names the resume to run on the node: ttl_index_resume('public.bulk')" \
  "ttl_index_resume\('public\.bulk'\)$" "$(qw1 -c "SELECT skipped FROM ttl_stats WHERE ttl_table = 'bulk'::regclass LIMIT 1")"
expect_eq "the coordinator's ttl_index of bulk is not paused (each node keeps its own brake state)" t \
  "$(qc -c "SELECT paused_at IS NULL FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'bulk'::regclass")"
for node in "${workers[@]}"; do
  expect_eq "ttl_index_resume('bulk') on $node: it was paused" t "$(qn "$node" "$CITUS_DB" -c "SELECT ttl_index_resume('bulk')" 2>&1)"
done
eventually_eq "then the nodes remove the 4,500 expired rows, the 1,500 live stay" 30 "0|1500" "$CITUS_DB" \
  "SELECT count(*) FILTER (WHERE $expired) || '|' || count(*) FILTER (WHERE $live) FROM bulk"
wait_for "the worker nodes' ttl_stats of bulk add up to 4,500 rows deleted" 10 deleted_on_workers_is bulk 4500 || true
for node in "${workers[@]}"; do
  expect_eq "$node: bulk no longer paused" t \
    "$(qn "$node" "$CITUS_DB" -c "SELECT paused_at IS NULL FROM ttl_indexes WHERE table_name = 'bulk'::regclass")"
  qn "$node" "$CITUS_DB" -c "ALTER SYSTEM RESET jsonb_ttl.max_table_fraction" \
    -c "ALTER SYSTEM RESET jsonb_ttl.brake_min_rows" -c "SELECT pg_reload_conf()" >/dev/null
done
for node in "${workers[@]}"; do
  eventually_on "$node" "$node: max_table_fraction back to 1, brake_min_rows to 10000" 5 "1|10000" \
    "SELECT current_setting('jsonb_ttl.max_table_fraction') || '|' || current_setting('jsonb_ttl.brake_min_rows')"
done

echo "== 14. the operator's controls handed on: a pause by hand and an index's own limits"
expect_eq "ttl_index_pause('events') on the coordinator: it was running" t \
  "$(qc -c "SELECT ttl_index_pause('events', 'maintenance')")"
qc -c "SELECT FROM ttl_index_alter('events', batch_size => 300)" >/dev/null
for node in "${workers[@]}"; do
  eventually_on "$node" "$node: events paused by the operator, with the coordinator's reason, and its batch_size" 20 \
    "operator|true|300" \
    "SELECT paused_by || '|' || (paused_reason LIKE 'paused by %: maintenance')::text || '|' || batch_size FROM ttl_indexes WHERE table_name = 'events'::regclass"
done
paused_ids=$(qc -c "SELECT string_agg(g::text, ',') FROM generate_series(950001, 950100) g")
insert_expired coord "$paused_ids"
sleep 2  # every node's worker passes a few times
expect_eq "paused, the 100 expired rows inserted stay" 100 \
  "$(qc -c "SELECT count(*) FROM events WHERE id BETWEEN 950001 AND 950100")"
expect_eq "ttl_index_resume('events') on the coordinator: it was paused" t "$(qc -c "SELECT ttl_index_resume('events')")"
eventually_eq "resumed there, the nodes delete them" 20 0 "$CITUS_DB" \
  "SELECT count(*) FROM events WHERE id BETWEEN 950001 AND 950100"

info "runtime $(($(now_ms) - test_started)) ms"
[ "$E2E_FAILURES" -eq 0 ] || citus_logs
finish
