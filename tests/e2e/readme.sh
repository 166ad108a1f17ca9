#!/usr/bin/env bash
# Every ```sql block of the README runs as written, in order, in a fresh database.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-readme 28834

q postgres -c "CREATE DATABASE readme"
blocks=$(awk '/^```sql$/ {on=1; n++; next} /^```$/ {on=0} on {print}' "$ROOT/README.md")
count=$(grep -c '^```sql$' "$ROOT/README.md")
if out=$(echo "$blocks" | q readme 2>&1); then
  pass "the README's $count SQL blocks run without error"
else
  fail "a README SQL block failed: $out"
fi
expect_eq "and did what they say (events purged by ttl_expire_now)" 0 "$(q readme -c "SELECT count(*) FROM events")"
finish
