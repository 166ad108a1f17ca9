#!/usr/bin/env bash
# Real clients, installed from npm and driven unchanged, in a non-UTC TimeZone: an express app
# with express-session and connect-pg-simple (its PostgreSQL session store, which writes
# expire = to_timestamp(…) into a timestamp(6) column, so New York time in a New York
# database). With a TTL index on expire, sessions live their full hour, expired ones go within
# a pass, and a logged-in user stays logged in. (Before 0.2.0 the column was read as UTC and
# every one-hour session was deleted within seconds.)
source "$(dirname "$0")/lib.sh"

# The client libraries, pinned in tests/e2e/clients/package.json, installed once into build/.
clients=$ROOT/build/node-clients
mkdir -p "$clients"
cp "$ROOT/tests/e2e/clients/package.json" "$ROOT/tests/e2e/clients/session_app.js" "$clients/"
if ! (cd "$clients" && npm install --no-audit --no-fund --silent >npm.log 2>&1); then
  cat "$clients/npm.log"
  fail "npm install of the client libraries"
  finish
fi

start_cluster e2e-clients 28842 "jsonb_ttl.frequency = 200"
q postgres -c "CREATE DATABASE app" -c "ALTER DATABASE app SET TimeZone = 'America/New_York'"
q app -c "CREATE EXTENSION jsonb_ttl"
export DATABASE_URL="postgresql://postgres@127.0.0.1:$PORT/app"
app() { (cd "$clients" && node session_app.js "$@"); }
cookies=$CLUSTER_DIR/cookies.json

# Ten users log in for an hour; the store creates its table on first use.
app login stays 10 3600000 "$cookies"
expect_eq "the store wrote ten sessions" 10 "$(q app -c "SELECT count(*) FROM session")"
expect_eq "in New York time, an hour ahead" t \
  "$(q app -c "SELECT bool_and(expire - localtimestamp BETWEEN interval '59 minutes' AND interval '61 minutes') FROM session")"
expect_eq "the TTL index on expire reads it in the database's zone" "America/New_York" \
  "$(q app -c "SELECT time_zone FROM ttl_index_create('session', 'expire', 0)")"

# Ten more log in for 4 s; the worker removes exactly those once they expire.
app login brief 10 4000 "$cookies"
expect_eq "the brief sessions are there until they expire" 10 \
  "$(q app -c "SELECT count(*) FROM session WHERE sess->>'user' LIKE 'brief%'")"
brief_gone() { [ "$(q app -c "SELECT count(*) FROM session WHERE sess->>'user' LIKE 'brief%'")" = 0 ]; }
wait_for "expired sessions go within a pass of their expiry" 8 brief_gone
sleep 1
expect_eq "the hour-long sessions are all still there" 10 \
  "$(q app -c "SELECT count(*) FROM session WHERE sess->>'user' LIKE 'stays%'")"
expect_eq "the worker removed the ten brief ones" 10 "$(q app -c "SELECT rows_deleted FROM ttl_stats")"
expect_eq "logged-in users are still logged in, the others are anonymous" \
  "brief:anonymous*10 stays:stays*10" \
  "$(app check "$cookies" | awk -F: '{sub(/[0-9]+$/, "", $1); r = ($2 == "anonymous") ? "anonymous" : "stays"; n[$1 ":" r]++}
      END {for (k in n) print k "*" n[k]}' | sort | paste -sd' ')"
finish
