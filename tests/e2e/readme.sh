#!/usr/bin/env bash
# Every ```sql block of the README and of docs/ runs as written (docs/testing.md says so too):
#   1. README.md, then docs/functions.md, then docs/monitoring.md, in order, in one fresh
#      database: the function reference's examples use the quick start's `events` table;
#   2. every other docs/*.md with SQL blocks, in alphabetical order, each in a fresh database of
#      its own (docs/security.md installs the extension into a schema of its own).
# The worker is paused (jsonb_ttl.enabled = off), so only the examples remove rows: the quick
# start's two rows are still there, expired, after the README, and gone after
# ttl_expire_now('events') in docs/functions.md.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-readme 28834 "jsonb_ttl.enabled = off"

sql_blocks() { awk '/^```sql$/ {on=1; next} /^```$/ {on=0} on {print}' "$ROOT/$1"; }
block_count() { grep -c '^```sql$' "$ROOT/$1" || true; }

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
for page in "${then_pages[@]}"; do run_page readme "$page"; done
expect_eq "and did what they say (events purged by ttl_expire_now)" 0 "$(q readme -c "SELECT count(*) FROM events")"

echo "-- 2. every other page of docs/ with SQL blocks, each in a fresh database"
for path in "$ROOT"/docs/*.md; do
  page=docs/$(basename "$path")
  [[ " ${then_pages[*]} " == *" $page "* ]] && continue
  [ "$(block_count "$page")" -gt 0 ] || continue
  db=docs_$(basename "$page" .md | tr -c 'a-z0-9_\n' '_')
  q postgres -c "CREATE DATABASE $db"
  run_page "$db" "$page"
done
finish
