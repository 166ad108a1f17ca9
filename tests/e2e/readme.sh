#!/usr/bin/env bash
# Every ```sql block of the README and of docs/ runs as written (docs/testing.md says so too):
#   1. README.md, then docs/functions.md, then docs/monitoring.md, in order, in one fresh
#      database: the function reference's examples use the quick start's `events` table;
#   2. every other docs/*.md with SQL blocks, in alphabetical order, each in a fresh database of
#      its own (docs/security.md installs the extension into a schema of its own);
#   3. the README's psql line for make run's demo (its port moved to this cluster's), and
#      make psql, run from another directory.
# The worker is paused (jsonb_ttl.enabled = off), so only the examples remove rows: the quick
# start's two rows are still there, expired, after the README, and gone after
# ttl_expire_now('events') in docs/functions.md, whose rollup trigger (on the same table, fed
# the same two documents) counts the rows ttl_expire_now removes. Then the results the docs
# show are what the functions return (ttl_index_create's sample, run in a fresh database; the
# tables of ttl_stats's and ttl_throttle()'s columns in docs/monitoring.md).
source "$(dirname "$0")/lib.sh"
start_cluster e2e-readme 28834 "jsonb_ttl.enabled = off"

# (README.md's "On a managed service" is the SQL edition's, on a cluster with pg_cron and
# without this library: make test-managed runs its lines as written, scripts/managed.sh)
sql_blocks() {
  awk '/^## On a managed service/ {skip=1} /^## / && !/^## On a managed service/ {skip=0}
       /^```sql$/ {on=!skip; next} /^```$/ {on=0} on {print}' "$ROOT/$1"
}
block_count() {
  awk '/^## On a managed service/ {skip=1} /^## / && !/^## On a managed service/ {skip=0}
       /^```sql$/ && !skip {n++} END {print n+0}' "$ROOT/$1"
}

# run_page DB FILE: FILE's SQL blocks in order, in one psql session, stopping at the first error.
run_page() {
  local out
  if out=$(sql_blocks "$2" | q "$1" 2>&1); then
    pass "$2: every SQL block runs without error ($(block_count "$2"))"
  else
    fail "$2: an SQL block failed: $out"
  fi
}

echo "-- 1. the README, then the pages that build on its quick start, in database readme"
q postgres -c "CREATE DATABASE readme"
run_page readme README.md
expect_eq "the quick start's two rows are there, both expired (ttl_expire_preview)" "2|2" \
  "$(q readme -c "SELECT (SELECT count(*) FROM events), (SELECT rows FROM ttl_expire_preview('events'))")"
then_pages=(docs/functions.md docs/monitoring.md)
run_page readme docs/functions.md
# the rollup trigger of "Telling TTL deletes apart in a trigger", on the quick start's table and
# documents (an epoch number and an ISO string, both of 2019-02-14): ttl_expire_now's two rows
# counted on their day; the application's own DELETE not
expect_eq "docs/functions.md: the rollup trigger counts the two rows ttl_expire_now deleted" "2019-02-14|2" \
  "$(q readme -c "SELECT string_agg(concat_ws('|', day, expired), ', ') FROM events_daily")"
expect_eq "and not the application's own DELETE" "2019-02-14|2" \
  "$(q readme -c "INSERT INTO events (doc) VALUES ('{\"creationDate\": 1550165973}')" \
               -c "DELETE FROM events" \
               -c "SELECT string_agg(concat_ws('|', day, expired), ', ') FROM events_daily")"
run_page readme docs/monitoring.md
expect_eq "and did what they say (events purged by ttl_expire_now)" 0 "$(q readme -c "SELECT count(*) FROM events")"

echo "-- 2. the documented results are what the functions return"
# shown_sample FILE: the first ```sql block followed by "(as psql's `\x` shows it)" and the output
# block after it, as "sql<TAB-separated>" … the two separated by a line "--8<--"
shown_sample() {
  awk '/^```sql$/ {sql=""; on=1; next}
       on && /^```$/ {on=0; last=sql; next}
       on {sql = sql $0 "\n"; next}
       /^\(as psql.s `\\x` shows it\)$/ {want=1; next}
       want && /^```$/ && !out {out=1; printf "%s--8<--\n", last; next}
       out && /^```$/ {exit}
       out {print}' "$ROOT/$1"
}
sample=$(shown_sample docs/functions.md)
q postgres -c "CREATE DATABASE sample" -c "ALTER DATABASE sample SET TimeZone = 'UTC'" >/dev/null
q sample -c "CREATE EXTENSION jsonb_ttl" >/dev/null
got=$(printf '%s' "${sample%%--8<--*}" | q sample -x -P format=aligned -P tuples_only=off -P footer=off 2>&1 | sed 's/ *$//')
expect_eq "docs/functions.md: ttl_index_create's sample result is what psql shows (\\x)" \
  "$(printf '%s\n' "${sample#*--8<--}" | sed '1{/^$/d}; s/ *$//')" "$got"
# column_table FILE N: the names of the N-th "| column | meaning |" table of FILE, in order
column_table() {
  awk -v n="$2" '/^\| column \| meaning \|$/ {k++; on = (k == n); next}
                 on && /^\|---/ {next}
                 on && /^\|/ {split($0, cell, "|"); c = cell[2]; gsub(/`/, "", c); gsub(/ /, "", c); print c; next}
                 on {exit}' "$ROOT/$1" | tr ',' '\n' | sort | paste -sd' '
}
columns_of() {  # columns_of RELATION-QUERY: the columns of its result, sorted
  q readme -c "SELECT * FROM $1 LIMIT 0" -P tuples_only=off -A -F ' ' | head -1 | tr ' ' '\n' | sort | paste -sd' '
}
expect_eq "docs/monitoring.md: the table of ttl_stats's columns names each of them" \
  "$(columns_of ttl_stats)" "$(column_table docs/monitoring.md 1)"
expect_eq "docs/monitoring.md: the table of ttl_throttle()'s columns names each of them" \
  "$(columns_of "ttl_throttle()")" "$(column_table docs/monitoring.md 2)"

echo "-- 3. every other page of docs/ with SQL blocks, each in a fresh database"
for path in "$ROOT"/docs/*.md; do
  page=docs/$(basename "$path")
  [[ " ${then_pages[*]} " == *" $page "* ]] && continue
  [ "$(block_count "$page")" -gt 0 ] || continue
  db=docs_$(basename "$page" .md | tr -c 'a-z0-9_\n' '_')
  q postgres -c "CREATE DATABASE $db"
  run_page "$db" "$page"
done

echo "-- 4. the README's psql line for make run's demo, and make psql, from another directory"
# the first line of a code block of the README that starts with "psql ", its port (make run's,
# RUN_PORT) moved to this cluster's, which has a demo database too
q postgres -c "CREATE DATABASE demo"
line=$(awk '/^```/ {on = !on; next} on && /^psql / {print; exit}' "$ROOT/README.md")
run_port=$(sed -n 's/^RUN_PORT *?= *//p' "$ROOT/Makefile")
line=${line//"-p $run_port "/"-p $PORT "}
if [ -n "$line" ] && got=$(cd / && eval "PGCONNECT_TIMEOUT=5 $line -X -At -c 'SELECT current_database()'" 2>&1); then
  expect_eq "README.md: '$line' connects from /" demo "$got"
else
  fail "README.md: '$line' from /: ${got:-no psql line}"
fi
got=$(cd / && echo "SELECT current_database() AS db" | make -s -C "$ROOT" psql RUN_PORT="$PORT" 2>&1) || true
expect_eq "make psql connects to the demo database (from /, make -C)" demo "$(echo "$got" | sed -n 3p | tr -d ' ')"
finish
