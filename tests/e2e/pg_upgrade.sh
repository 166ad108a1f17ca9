#!/usr/bin/env bash
# pg_upgrade from the major before this one (PostgreSQL PG_MAJOR - 1, its jsonb_ttl installed:
# make test-majors runs the majors in order) to this one (PG_CONFIG), with each kind of TTL
# index: a JSON path, a plain column with a filter, a partitioned table whose expired
# partitions are dropped, a per-row TTL field, and one paused by hand. The old cluster holds
# expired rows and an expired partition while pg_upgrade runs, its worker on: the servers
# pg_upgrade starts (binary-upgrade mode, the library preloaded) must run no worker, so the old
# cluster is unchanged afterwards. Then the new cluster has every definition and pause, and its
# worker purges as before.
source "$(dirname "$0")/lib.sh"
OLD_MAJOR=$((PG_MAJOR - 1))
OLD_PG_CONFIG=${OLD_PG_CONFIG:-$("$ROOT/scripts/pg-server.sh" "$OLD_MAJOR")}
OLDBIN=$("$OLD_PG_CONFIG" --bindir)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")
if [ ! -f "$("$OLD_PG_CONFIG" --sharedir)/extension/jsonb_ttl--$version.sql" ]; then
  fail "jsonb_ttl $version is not installed for PostgreSQL $OLD_MAJOR (make install PG=$OLD_MAJOR)"; finish; exit 1
fi
OLD=e2e-pg-upgrade-old NEW=e2e-pg-upgrade-new
OLD_PORT=$((28866 + ${E2E_PORT_OFFSET:-0})) NEW_PORT=$((28867 + ${E2E_PORT_OFFSET:-0}))
cluster() { PG_CONFIG=$1 "$ROOT/scripts/cluster.sh" "${@:2}"; }
cluster "$OLD_PG_CONFIG" destroy $OLD; cluster "$PG_CONFIG" destroy $NEW
trap 'status=$?; cluster "$OLD_PG_CONFIG" destroy $OLD; cluster "$PG_CONFIG" destroy $NEW; exit $status' EXIT
OLD_DIR=$(cluster "$OLD_PG_CONFIG" dir $OLD) NEW_DIR=$(cluster "$PG_CONFIG" dir $NEW)
# q (lib.sh) reads SOCK and PORT: point them at one cluster or the other
at() { SOCK=$1/sock PORT=$2; }

# the old cluster's worker off from the start while the tables are made and filled (on again
# below, for pg_upgrade's starts of this cluster): a reload after CREATE EXTENSION could reach
# its new worker after a first pass, which dropped parted_2019 before its row went in
cluster "$OLD_PG_CONFIG" start $OLD "$OLD_PORT" "jsonb_ttl.frequency = 100" "jsonb_ttl.max_table_fraction = 1" \
  "jsonb_ttl.enabled = off"
at "$OLD_DIR" "$OLD_PORT"
q postgres -c "CREATE DATABASE app"
q app -c "CREATE EXTENSION jsonb_ttl" >/dev/null
q app >/dev/null <<'SQL'
CREATE TABLE events (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', interval '1 hour');
CREATE TABLE visits (id int, seen timestamptz);
SELECT FROM ttl_index_create('visits', 'seen', interval '1 day', filter => 'id > 0');
CREATE TABLE parted (at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE parted_2019 PARTITION OF parted FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE parted_now PARTITION OF parted FOR VALUES FROM ('2020-01-01') TO ('3000-01-01');
SELECT FROM ttl_index_create('parted', 'at', interval '1 day', drop_partitions => 'drop');
CREATE TABLE items (id int, doc jsonb);
SELECT FROM ttl_index_create('items', 'at', interval '100 years', row_ttl_path => 'ttl');
CREATE TABLE held (id int, doc jsonb);
SELECT FROM ttl_index_create('held', 'at', 0, paused => true);
INSERT INTO events SELECT g, '{"at": "2019-01-01"}' FROM generate_series(1, 50) g;
INSERT INTO events SELECT g, jsonb_build_object('at', now()) FROM generate_series(51, 60) g;
INSERT INTO visits SELECT g, now() - interval '2 days' FROM generate_series(1, 20) g;
INSERT INTO visits VALUES (0, now() - interval '2 days');
INSERT INTO parted VALUES ('2019-06-01'), (now());
INSERT INTO items VALUES (1, '{"ttl": 0, "at": 1}'), (2, '{"at": 1}');
INSERT INTO held SELECT g, '{"at": 1}' FROM generate_series(1, 5) g;
-- on again for the next start: pg_upgrade's own starts of this cluster
ALTER SYSTEM SET jsonb_ttl.enabled = on;
SQL
definitions="SELECT string_agg(concat_ws(' ', table_name, path, expire_after, filter, row_ttl_path, drop_partitions,
                                      paused_by), '; ' ORDER BY table_name::text) FROM ttl_indexes"
contents="SELECT (SELECT count(*) FROM events) || ' events, ' || (SELECT count(*) FROM visits) || ' visits, '
          || (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relname LIKE 'parted_%' AND relkind = 'r')
          || ', ' || (SELECT count(*) FROM items) || ' items, ' || (SELECT count(*) FROM held) || ' held'"
before_defs=$(q app -c "$definitions")
before=$(q app -c "$contents")
expect_eq "the old cluster before pg_upgrade" "60 events, 21 visits, parted_2019,parted_now, 2 items, 5 held" "$before"
if [ "$OLD_MAJOR" = 15 ] && "$OLD_PG_CONFIG" --version | grep -q Debian; then
  # Debian's 15.20 stamps a pg_attver option on every column, which pg_dump --binary-upgrade
  # carries over and PostgreSQL 16 refuses ("unrecognized parameter"): Debian's, not
  # jsonb_ttl's; removed from the user's columns first
  for db in app postgres; do
    q $db -c "UPDATE pg_catalog.pg_attribute SET attoptions = NULL
              WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg_attver%'"
  done
fi
cluster "$OLD_PG_CONFIG" stop $OLD

# the new cluster: made, configured as the old one, stopped
cluster "$PG_CONFIG" start $NEW "$NEW_PORT" "jsonb_ttl.frequency = 100" "jsonb_ttl.max_table_fraction = 1"
cluster "$PG_CONFIG" stop $NEW
# PostgreSQL 18's initdb turns data checksums on by default; pg_upgrade wants them as the old
# cluster has them (off: cluster.sh's initdb of 15 to 17)
if "$PGBIN/pg_controldata" "$NEW_DIR/data" | grep -q "checksum version: *[1-9]"; then
  runuser -u postgres -- "$PGBIN/pg_checksums" --disable -D "$NEW_DIR/data" >/dev/null 2>&1
fi
work=$NEW_DIR/pg_upgrade && mkdir -p "$work" && chown postgres: "$work"
start=$(now_ms)
if (cd "$work" && runuser -u postgres -- "$PGBIN/pg_upgrade" -b "$OLDBIN" -B "$PGBIN" -d "$OLD_DIR/data" \
      -D "$NEW_DIR/data" -p "$OLD_PORT" -P "$NEW_PORT" -s "$work" -U postgres >"$work/out.txt" 2>&1); then
  pass "pg_upgrade $OLD_MAJOR → $PG_MAJOR with the library preloaded in both ($(($(now_ms) - start)) ms)"
else
  fail "pg_upgrade $OLD_MAJOR → $PG_MAJOR: $(tail -20 "$work/out.txt")"; finish; exit 1
fi

# the old cluster, started again with its worker off: as it was (copy mode leaves it whole)
echo "jsonb_ttl.enabled = off" >>"$OLD_DIR/data/postgresql.conf"
sed -i '/^jsonb_ttl.enabled/d' "$OLD_DIR/data/postgresql.auto.conf"  # (its ALTER SYSTEM above)
cluster "$OLD_PG_CONFIG" start $OLD "$OLD_PORT"
at "$OLD_DIR" "$OLD_PORT"
expect_eq "no worker ran in pg_upgrade's servers: the old cluster is unchanged" "$before" "$(q app -c "$contents")"
cluster "$OLD_PG_CONFIG" stop $OLD

cluster "$PG_CONFIG" start $NEW "$NEW_PORT"
at "$NEW_DIR" "$NEW_PORT"
expect_eq "the new cluster has every TTL index, its options and its pause" "$before_defs" "$(q app -c "$definitions")"
eventually_eq "the new cluster's worker purges: expired rows, the expired partition, the per-row TTL; the paused table kept" 10 \
  "10 events, 1 visits, parted_now, 1 items, 5 held" app "$contents"
expect_eq "ttl_stats: each table visited, no error" "0" \
  "$(q app -c "SELECT sum(errors) FROM ttl_stats")"
finish
