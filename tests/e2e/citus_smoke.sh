#!/usr/bin/env bash
# jsonb_ttl on a Citus cluster (a coordinator and two worker nodes, tests/e2e/citus_lib.sh), as
# it stands before Citus support (issue 23): what works, and what does not yet — expired rows of
# a distributed table stay, and ttl_stats counts errors; those checks FAIL until the support
# lands, when this script grows into tests/e2e/citus.sh. Also pins the Citus behaviour that
# support builds on: metadata synced to the workers, the TTL index on every shard, what a worker
# node lets a session do to a shard.
source "$(dirname "$0")/citus_lib.sh"
start_citus "jsonb_ttl.frequency = 1000"

echo "== the cluster: Citus 13.2 on three nodes, metadata synced to the workers"
for node in coord w1 w2; do
  expect_eq "$node: citus 13.2" "13.2-1" "$(qn "$node" "$CITUS_DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
done
expect_eq "the coordinator knows three nodes, all with metadata" "3|3" \
  "$(qc -c "SELECT count(*), count(*) FILTER (WHERE hasmetadata AND metadatasynced) FROM pg_dist_node")"

echo "== CREATE EXTENSION jsonb_ttl on the coordinator reaches the worker nodes"
create_extension_on coord
for node in w1 w2; do
  expect_eq "$node has jsonb_ttl (Citus propagated CREATE EXTENSION)" 1 \
    "$(qn "$node" "$CITUS_DB" -c "SELECT count(*) FROM pg_extension WHERE extname = 'jsonb_ttl'")"
done
expect_eq "the same version on every node" 1 \
  "$(for node in coord w1 w2; do qn "$node" "$CITUS_DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'"; done | sort -u | wc -l)"

echo "== a distributed table of 16 shards, 20,000 rows, half expired"
qc >/dev/null <<'SQL'
CREATE TABLE events (id bigint, doc jsonb);
SELECT create_distributed_table('events', 'id', shard_count => 16);
INSERT INTO events
SELECT g, jsonb_build_object('ts', CASE WHEN g % 2 = 0 THEN now() - interval '2 days' ELSE now() END)
FROM generate_series(1, 20000) g;
SQL
expired_sql="SELECT count(*) FROM events WHERE (doc->>'ts')::timestamptz < now() - interval '1 day'"
expect_eq "16 shards" 16 "$(qc -c "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass")"
expect_eq "the shards are on the two worker nodes, 8 each" "${CITUS_PORT[w1]}:8 ${CITUS_PORT[w2]}:8" \
  "$(qc -c "SELECT string_agg(nodeport || ':' || n, ' ' ORDER BY nodeport) FROM (SELECT nodeport, count(*) n FROM pg_dist_shard_placement WHERE shardid IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass) GROUP BY nodeport) s")"
for node in w1 w2; do
  expect_eq "$node's metadata: 3 nodes, 16 shards and their placements" "3 16 16" \
    "$(qn "$node" "$CITUS_DB" -c "SELECT (SELECT count(*) FROM pg_dist_node) || ' ' || (SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass) || ' ' || (SELECT count(*) FROM pg_dist_placement WHERE shardid IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass))")"
done
expect_eq "20,000 rows, 10,000 expired" "20000 10000" "$(qc -c "SELECT count(*) FROM events") $(qc -c "$expired_sql")"

echo "== ttl_index_create on the distributed table"
expect_eq "ttl_index_create('events', 'ts', interval '1 day') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_index_create('events', 'ts', interval '1 day')")"
# Citus hides shards from pg_class on the nodes (citus.override_table_visibility); the count
# looks behind it.
shard_ttl_indexes() {  # shard_ttl_indexes NODE: its shards of events with their TTL index
  qn "$1" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "
    SELECT count(*) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
    WHERE t.relname ~ '^events_[0-9]+\$' AND x.relname = 'events_ttl_idx_' || substring(t.relname from '[0-9]+\$')"
}
expect_eq "the TTL index reached every shard (events_ttl_idx_<shardid> on events_<shardid>)" 16 \
  $(($(shard_ttl_indexes w1) + $(shard_ttl_indexes w2)))
expect_eq "a worker node hides its shards from pg_class by default" 0 \
  "$(qw1 -c "SELECT count(*) FROM pg_class WHERE relname ~ '^events_[0-9]+\$'")"
for node in w1 w2; do
  echo "  info $node's ttl_index catalog: $(qn "$node" "$CITUS_DB" -c "SELECT count(*) FROM ttl_index") row(s) (ttl_index_create ran on the coordinator only)"
done

echo "== the worker removes the expired rows of the distributed table (FAILS before Citus support)"
eventually_eq "expired rows left in events (the coordinator's view), within 20 s" 20 0 "$CITUS_DB" "$expired_sql"
expect_eq "the 10,000 fresh rows stay" 10000 "$(qc -c "SELECT count(*) FROM events WHERE (doc->>'ts')::timestamptz >= now() - interval '1 day'")"
expect_eq "ttl_stats of events: no errors" "0|" \
  "$(qc -c "SELECT errors || '|' || coalesce(last_error, '') FROM ttl_stats WHERE table_name = 'events'::regclass")"
expect_eq "ttl_stats of events: 10,000 rows deleted" 10000 \
  "$(qc -c "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'events'::regclass")"
expect_eq "ttl_expire_now('events') on the coordinator" ok \
  "$(outcome_on coord "SELECT ttl_expire_now('events')")"

echo "== a reference table (a copy on every node)"
qc >/dev/null <<'SQL'
CREATE TABLE settings (id int PRIMARY KEY, doc jsonb);
SELECT create_reference_table('settings');
INSERT INTO settings
SELECT g, jsonb_build_object('ts', CASE WHEN g % 2 = 0 THEN now() - interval '2 days' ELSE now() END)
FROM generate_series(1, 100) g;
SQL
expect_eq "ttl_index_create on the reference table" ok \
  "$(outcome_on coord "SELECT ttl_index_create('settings', 'ts', interval '1 day')")"
eventually_eq "its expired rows go (the coordinator's view)" 5 50 "$CITUS_DB" "SELECT count(*) FROM settings"
settings_shard=settings_$(qc -c "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'settings'::regclass")
for node in coord w1 w2; do
  expect_eq "and from $node's copy ($settings_shard)" 50 \
    "$(qn "$node" "$CITUS_DB" -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM $settings_shard")"
done
eventually_eq "ttl_stats of settings: 50 rows deleted, no errors" 2 "50|0|" "$CITUS_DB" \
  "SELECT rows_deleted || '|' || errors || '|' || coalesce(last_error, '') FROM ttl_stats WHERE table_name = 'settings'::regclass"

echo "== what a worker node lets a session (postgres) do to a shard of its own"
shard=events_$(qc -c "SELECT min(shardid) FROM pg_dist_shard_placement WHERE nodeport = ${CITUS_PORT[w1]} AND shardid IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass)")
expired_in_shard=$(qw1 -c "SELECT count(*) FROM $shard WHERE (doc->>'ts')::timestamptz < now() - interval '1 day'")
echo "  info $shard on worker 1: $expired_in_shard expired row(s) of $(qw1 -c "SELECT count(*) FROM $shard")"
deleted=$(qw1 -c "DELETE FROM $shard WHERE ctid IN (SELECT ctid FROM $shard WHERE ttl_timestamp(doc->'ts') < now() - interval '1 day' LIMIT 5 FOR UPDATE SKIP LOCKED) RETURNING id" | paste -sd, -)
expect_eq "DELETE FROM $shard on worker 1 (a batch of 5 by ctid, FOR UPDATE SKIP LOCKED), no setting needed" 5 \
  "$(echo "$deleted" | tr ',' '\n' | grep -c .)"
expect_eq "LOCK TABLE $shard is refused without citus.enable_manual_changes_to_shards" \
  "cannot modify \"$shard\" because it is a shard of a distributed table" \
  "$(outcome_on w1 "BEGIN; LOCK TABLE $shard IN ROW EXCLUSIVE MODE; ROLLBACK")"
expect_eq "and allowed with it" ok \
  "$(outcome_on w1 "SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $shard IN ROW EXCLUSIVE MODE; ROLLBACK")"
expect_eq "the coordinator sees those 5 rows gone" 0 "$(qc -c "SELECT count(*) FROM events WHERE id IN (${deleted:-0})")"

finish
