#!/usr/bin/env bash
# More databases than jsonb_ttl.max_workers: 40 databases with the extension and 4 workers.
# Workers take turns (one pass each while others wait): all 40 are served, never more than 4
# workers run, and never two on one database.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-rotation 28845 "jsonb_ttl.frequency = 500" "jsonb_ttl.max_workers = 4"

# One database with the extension and rows that expire tomorrow; 40 copies of it (CREATE
# DATABASE … TEMPLATE copies the files, and the hook lets the template's worker step aside for
# each copy); then every copy's rows dated to expire at one instant, a few seconds on. (Dated
# 12 seconds on before the copies, the rows expired while 40 copies were made on a loaded
# machine, before the check that they had not.)
q postgres -c "CREATE DATABASE rot_template"
q rot_template -c "CREATE EXTENSION jsonb_ttl" -c "CREATE TABLE t (id int, doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t', 'at', 0)" \
  -c "INSERT INTO t SELECT g, jsonb_build_object('at', now() + interval '1 day') FROM generate_series(1, 100) g"
for i in $(seq -w 1 40); do
  q postgres -c "CREATE DATABASE rot_$i TEMPLATE rot_template"
done
q postgres -c "DROP DATABASE rot_template"
expect_eq "40 databases, each with 100 rows not yet expired" 40 \
  "$(for i in $(seq -w 1 40); do q rot_$i -c "SELECT count(*) FROM t"; done | grep -c '^100$')"
at=$(q postgres -c "SELECT now() + interval '3 seconds'")
for i in $(seq -w 1 40); do
  q rot_$i -c "UPDATE t SET doc = jsonb_build_object('at', '$at'::timestamptz)"
done

# Until every database is purged: never more than 4 workers, never two on one database.
workers="SELECT count(*) || ' ' || count(DISTINCT datname) || ' ' || (count(*) - count(DISTINCT datname))
         FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname LIKE 'rot_%'"
most=0 doubled=0 samples=0
deadline=$(($(now_ms) + 60000))
while :; do
  read -r running _ twice <<<"$(q postgres -c "$workers")"
  samples=$((samples + 1))
  [ "$running" -gt "$most" ] && most=$running
  [ "$twice" -gt 0 ] && doubled=$((doubled + 1))
  left=$(for i in $(seq -w 1 40); do q rot_$i -c "SELECT count(*) FROM t"; done | grep -vc '^0$' || true)
  [ "$left" = 0 ] && break
  if [ "$(now_ms)" -ge "$deadline" ]; then break; fi
  sleep 0.1
done
expect_eq "all 40 databases purged (by their turns)" 0 "$left"
if [ "$most" -le 4 ] && [ "$most" -ge 2 ]; then
  pass "at most 4 workers ran at once ($most seen, $samples samples)"
else
  fail "workers at once: $most (max_workers = 4)"
fi
expect_eq "never two workers on one database" 0 "$doubled"
expect_eq "every database's rows were counted by its worker" 4000 \
  "$(for i in $(seq -w 1 40); do q rot_$i -c "SELECT sum(rows_deleted) FROM ttl_stats"; done | awk '{s += $1} END {print s}')"
finish
