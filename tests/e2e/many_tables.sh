#!/usr/bin/env bash
# Issue 24: ttl_stats keeps an entry for every TTL table, up to jsonb_ttl.max_tables (a
# postmaster setting), and says so when it is full instead of reusing another table's entry.
# Here max_tables = 100 (its minimum), with 150 TTL tables in one database and more in another.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-many-tables 28849 "jsonb_ttl.frequency = 300" "jsonb_ttl.max_tables = 100"

expect_eq "jsonb_ttl.max_tables needs a restart" "postmaster" \
  "$(q postgres -c "SELECT context FROM pg_settings WHERE name = 'jsonb_ttl.max_tables'")"
q postgres -c "CREATE DATABASE many"
q many -c "CREATE EXTENSION jsonb_ttl" -c "CREATE FUNCTION rows_left() RETURNS bigint LANGUAGE plpgsql AS \$\$
  DECLARE n bigint := 0; c bigint; t text;
  BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE tablename LIKE 't\_%' LOOP
      EXECUTE format('SELECT count(*) FROM %I', t) INTO c;
      n := n + c;
    END LOOP;
    RETURN n;
  END \$\$"
tables() {  # tables FROM TO: TTL tables t_FROM..t_TO, one expired row each
  q many -c "DO \$\$ BEGIN FOR i IN $1..$2 LOOP
               EXECUTE format('CREATE TABLE t_%s (doc jsonb)', i);
               PERFORM ttl_index_create(format('t_%s', i), 'at', interval '1 hour');
               EXECUTE format('INSERT INTO t_%s VALUES (''{\"at\": \"2000-01-01\"}'')', i);
             END LOOP; END \$\$"
}
tables 1 80
eventually_eq "80 tables: a ttl_stats row each, with its row counted" 30 "80 80" many \
  "SELECT count(*) FILTER (WHERE runs > 0) || ' ' || sum(rows_deleted) FROM ttl_stats"
expect_eq "ttl_stats_store(): 80 entries, none refused" "80 0" \
  "$(q many -c "SELECT entries || ' ' || refused FROM ttl_stats_store()")"

# Past the limit: the first 100 keep their entries (no other table's history is erased), the
# others go without, counted, and the log says so once.
tables 81 150
eventually_eq "150 tables, 100 entries: every table purged all the same" 30 "0" many \
  "SELECT rows_left()"
eventually_eq "ttl_stats: 100 tables with a row, the first 80 among them" 10 "100 80" many \
  "SELECT count(*) FILTER (WHERE runs > 0) || ' ' || count(*) FILTER (WHERE runs > 0 AND table_name::text ~ '^t_([1-7]?[0-9]|80)$') FROM ttl_stats"
refused=$(q many -c "SELECT entries || ' ' || (refused > 0) FROM ttl_stats_store()")
expect_eq "ttl_stats_store(): 100 entries, records refused" "100 true" "$refused"
sleep 1
expect_eq "the log says the statistics are full, once" 1 \
  "$(grep -c 'jsonb_ttl: the statistics are full (jsonb_ttl.max_tables = 100' "$CLUSTER_DIR/server.log" || true)"

# Dropped tables give their entries back at the next pass: the tables without one get theirs.
q many -c "DO \$\$ BEGIN FOR i IN 1..60 LOOP EXECUTE format('DROP TABLE t_%s', i); END LOOP; END \$\$"
# (the new rows once the entries are given back: a row deleted before, while its table had no
# entry, would not be counted)
eventually_eq "the 60 dropped tables' entries given back, and taken by the 50 without one" 30 "90" many \
  "SELECT count(*) FROM ttl_stats WHERE runs > 0"
q many -c "CREATE TABLE counted_before AS SELECT table_name::text AS t, rows_deleted FROM ttl_stats"
q many -c "DO \$\$ BEGIN FOR i IN 61..150 LOOP EXECUTE format('INSERT INTO t_%s VALUES (''{\"at\": \"2000-01-01\"}'')', i); END LOOP; END \$\$"
eventually_eq "after dropping 60: all 90 tables left have a row, and their new rows counted" 30 "90 90" many \
  "SELECT count(*) FILTER (WHERE runs > 0) || ' ' ||
          count(*) FILTER (WHERE s.rows_deleted = b.rows_deleted + 1)
   FROM ttl_stats s JOIN counted_before b ON b.t = s.table_name::text"
expect_eq "ttl_stats_store(): 90 entries" "90" "$(q many -c "SELECT entries FROM ttl_stats_store()")"

# A dropped database gives its entries back (the launcher's next look at pg_database).
q postgres -c "CREATE DATABASE other TEMPLATE many"
eventually_eq "a copy of the database: 100 entries again (90 + 10 of the copy)" 30 "100" many \
  "SELECT entries FROM ttl_stats_store()"
q postgres -c "DROP DATABASE other"
eventually_eq "the copy dropped: 90 entries" 30 "90" many "SELECT entries FROM ttl_stats_store()"

# ttl_stats_reset() clears the entries and the count of refusals.
q many -c "SELECT ttl_stats_reset()"
expect_eq "after ttl_stats_reset(): no entry, nothing refused" "0 0" \
  "$(q many -c "SELECT entries || ' ' || refused FROM ttl_stats_store()")"
finish
