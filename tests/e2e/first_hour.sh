#!/usr/bin/env bash
# The first hour of a new user, with the setup mistakes real users make (issue 45): the
# database's TimeZone is UTC (what the application's sessions get), the DBA's psql is in Tokyo.
#  1. a timestamp column (express-session's layout) is never read in a guessed zone: created from
#     the DBA's Tokyo session, whose zone is not the one the owner's sessions get, the TTL index
#     is refused with both zones named until time_zone says which; told, it deletes no live
#     session; nor when the index comes first (a migration) and the application writes after;
#  2. a definition that would remove more than max_table_fraction of a table at once is held
#     at creation (20,000 naive New York strings read as UTC, all "expired"), with a NOTICE
#     giving the count, the points in time as read and now, and nothing goes until
#     ttl_index_resume(); the right mend (time_zone) then keeps every row;
#  3. an alter that widens what expires (a shorter expire_after) is held the same way, at the
#     alter, and resuming lets the rows go;
#  4. a first backlog under the fraction goes at once, as before;
#  5. dates past the year 2200 (epoch milliseconds read as seconds) count in
#     ttl_stats.rows_never_expire.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-first-hour 28892 "jsonb_ttl.frequency = 200" \
  "jsonb_ttl.max_table_fraction = 0.5" "timezone = 'Etc/UTC'"

q postgres -c "CREATE DATABASE app"
q app -c "CREATE EXTENSION jsonb_ttl"

# dba SQL: psql as a DBA whose client is in Tokyo (PGTZ), NOTICEs on stderr, merged
dba() {
  PGTZ=Asia/Tokyo PGOPTIONS="-c client_min_messages=notice" "$PGBIN/psql" -h "$SOCK" -p "$PORT" \
    -U postgres -d app -X -q -At -v ON_ERROR_STOP=1 -c "$1" 2>&1
}
# application SQL: the application's sessions take the database's zone (no PGTZ)
app() { (unset PGTZ; q app -c "$1"); }

echo "== 1. a timestamp column, the index made from a Tokyo session"
app "CREATE TABLE session (sid text PRIMARY KEY, sess json NOT NULL, expire timestamp(6) NOT NULL)"
# connect-pg-simple writes expire = to_timestamp(<ms> / 1000) in its own (UTC) session
app "INSERT INTO session SELECT 's' || g, '{}', to_timestamp(extract(epoch FROM now()) + 3600)
     FROM generate_series(1, 100) g"
out=$(dba "SELECT time_zone FROM ttl_index_create('session', 'expire', 0)" || true)
if echo "$out" | grep -q "ERROR:  column expire holds local times: say which time zone they are in (time_zone)"; then
  pass "created from Tokyo without time_zone: refused, no zone guessed"
else fail "no refusal: $out"; fi
if echo "$out" | grep -q "This session's TimeZone is 'Asia/Tokyo'; the sessions of the table's owner get 'Etc/UTC'" &&
   echo "$out" | grep -q "HINT:  Pass time_zone => 'Etc/UTC' .* or time_zone => 'Asia/Tokyo'"; then
  pass "it names both zones, and how to choose"
else fail "DETAIL/HINT: $out"; fi
expect_eq "told the application's zone, it takes it" "Etc/UTC" \
  "$(dba "SELECT time_zone FROM ttl_index_create('session', 'expire', 0, time_zone => 'Etc/UTC')" | tail -1)"
expect_eq "ttl_indexes shows the zone in use" "Etc/UTC" \
  "$(q app -c "SELECT time_zone FROM ttl_indexes WHERE table_name = 'session'::regclass")"
app "INSERT INTO session VALUES ('gone', '{}', to_timestamp(extract(epoch FROM now()) - 60))"
eventually_eq "the worker deletes the one expired session" 10 0 app \
  "SELECT count(*) FROM session WHERE sid = 'gone'"
sleep 1
expect_eq "100 of 100 live sessions are still there" 100 "$(q app -c "SELECT count(*) FROM session")"

echo "== 1b. the index first (a migration run from Tokyo), the application's rows after"
dba "CREATE TABLE session2 (sid text PRIMARY KEY, sess json NOT NULL, expire timestamp(6) NOT NULL)" >/dev/null
refused=$(dba "SELECT ttl_index_create('session2', 'expire', 0)" || true)
expect_eq "the migration from Tokyo is refused too, until told" "refused|Etc/UTC" \
  "$(echo "$refused" | grep -q 'holds local times' && echo refused)|$(dba "SELECT time_zone FROM ttl_index_create('session2', 'expire', 0, time_zone => 'Etc/UTC')" | tail -1)"
app "INSERT INTO session2 SELECT 's' || g, '{}', to_timestamp(extract(epoch FROM now()) + 3600)
     FROM generate_series(1, 100) g"
app "INSERT INTO session2 VALUES ('gone', '{}', to_timestamp(extract(epoch FROM now()) - 60))"
eventually_eq "the expired one goes" 10 0 app "SELECT count(*) FROM session2 WHERE sid = 'gone'"
sleep 1
expect_eq "100 of 100 live sessions are still there" 100 "$(q app -c "SELECT count(*) FROM session2")"

echo "== 2. naive New York strings read as UTC: 100 % 'expired' at creation, held"
app "CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL)"
app "INSERT INTO events (doc) SELECT jsonb_build_object('at',
       to_char(now() AT TIME ZONE 'America/New_York' - g * interval '250 milliseconds', 'YYYY-MM-DD\"T\"HH24:MI:SS'))
     FROM generate_series(1, 20000) g"
out=$(dba "SELECT paused FROM ttl_index_create('events', 'at', interval '2 hours')")
echo "$out" | sed 's/^/    /'
expect_eq "ttl_index_create returns it paused" "t" "$(echo "$out" | tail -1)"
if echo "$out" | grep -q "20000 of 20000 row(s) of public.events would expire at once: the TTL index is held"; then
  pass "creation holds it, with the count"
else fail "no hold NOTICE"; fi
if echo "$out" | grep -q "local times in UTC), their points in time run from .* to .*; now is"; then
  pass "the NOTICE gives the points in time as read, in the zone used, against now"
else fail "DETAIL"; fi
if echo "$out" | grep -q "HINT:  Check the time zone (time_zone), the unit of numbers (numeric_unit) and the path"; then
  pass "its HINT says what to check"
else fail "HINT"; fi
expect_eq "ttl_indexes and ttl_stats show it held by the brake" "t|brake" \
  "$(q app -c "SELECT paused_at IS NOT NULL, s.paused_by FROM ttl_indexes i JOIN ttl_stats s ON s.table_name = i.table_name WHERE i.table_name = 'events'::regclass")"
sleep 2
expect_eq "20,000 of 20,000 rows are still there after ten passes" 20000 "$(q app -c "SELECT count(*) FROM events")"
# the mend the HINT of a mistaken unit would suggest, made by mistake: still held, said at once
out=$(dba "SELECT numeric_unit FROM ttl_index_alter('events', numeric_unit => 'ms')")
if echo "$out" | grep -q "would expire at once: the TTL index is held"; then
  pass "a wrong mend is said held at the alter"
else fail "alter numeric_unit: $out"; fi
# the right mend: the strings are New York wall times
out=$(dba "SELECT time_zone FROM ttl_index_alter('events', time_zone => 'America/New_York')")
expect_eq "the right mend (time_zone) expires nothing" "America/New_York" "$(echo "$out" | tail -1)"
dba "SELECT ttl_index_resume('events')" >/dev/null
sleep 2
expect_eq "after the mend and the resume, 20,000 of 20,000 rows are still there" 20000 \
  "$(q app -c "SELECT count(*) FROM events")"

echo "== 3. an alter that widens what expires: held at the alter"
app "CREATE TABLE logs (id bigserial PRIMARY KEY, doc jsonb NOT NULL)"
app "INSERT INTO logs (doc) SELECT jsonb_build_object('at', extract(epoch FROM now() - interval '1 day')::bigint)
     FROM generate_series(1, 20000) g"
out=$(dba "SELECT paused FROM ttl_index_create('logs', 'at', interval '30 days')")
expect_eq "nothing expired under 30 days: not held" "f" "$(echo "$out" | tail -1)"
out=$(dba "SELECT paused FROM ttl_index_alter('logs', expire_after => interval '1 hour')")
if echo "$out" | grep -q "20000 of 20000 row(s) of public.logs would expire at once: the TTL index is held"; then
  pass "a shorter expire_after that expires the whole table is held at the alter"
else fail "alter expire_after: $out"; fi
expect_eq "ttl_index_alter returns it paused" "t" "$(echo "$out" | tail -1)"
sleep 2
expect_eq "20,000 rows still there" 20000 "$(q app -c "SELECT count(*) FROM logs")"
dba "SELECT ttl_index_resume('logs')" >/dev/null
eventually_eq "resumed, they go" 20 0 app "SELECT count(*) FROM logs"

echo "== 4. a first backlog under the fraction goes at once"
app "CREATE TABLE clicks (id bigserial PRIMARY KEY, doc jsonb NOT NULL)"
app "INSERT INTO clicks (doc) SELECT jsonb_build_object('at', extract(epoch FROM now() -
       CASE WHEN g <= 5000 THEN interval '2 days' ELSE interval '0' END)::bigint)
     FROM generate_series(1, 20000) g"
out=$(dba "SELECT rows_expired FROM ttl_index_create('clicks', 'at', interval '1 day')")
if echo "$out" | grep -q "5000 row(s) of public.clicks are expired already: the worker deletes them"; then
  pass "creation says the 5,000 go"
else fail "first backlog: $out"; fi
eventually_eq "the 5,000 go, the 15,000 stay" 20 15000 app "SELECT count(*) FROM clicks"

echo "== 5. dates past 2200 (epoch milliseconds read as seconds) never expire, and are counted"
app "CREATE TABLE otp (id bigserial PRIMARY KEY, doc jsonb NOT NULL)"
dba "SELECT ttl_index_create('otp', 'issuedAt', interval '5 minutes')" >/dev/null
app "INSERT INTO otp (doc) SELECT jsonb_build_object('issuedAt', (extract(epoch FROM now()) * 1000)::bigint - g)
     FROM generate_series(1, 2000) g"
app "ANALYZE otp"
got=$(q app -c "SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'otp'::regclass")
if [ -n "$got" ] && [ "$got" -ge 1900 ] && [ "$got" -le 2100 ]; then
  pass "ttl_stats.rows_never_expire counts the 2,000 rows dated in year 58888 ($got)"
else fail "rows_never_expire: [$got], expected about 2000"; fi
app "CREATE ROLE outsider LOGIN"
got=$(as outsider app -c "SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'otp'::regclass")
expect_eq "a role that may not read the table does not see the dates' histogram in it" 0 "$got"

finish
