#!/usr/bin/env bash
# A real Django project (installed from PyPI, tests/e2e/clients/django_app), configured as many
# are: USE_TZ = False, TIME_ZONE = 'America/New_York', so DateTimeFields hold naive New York
# times and DjangoJSONEncoder writes naive ISO strings into JSONFields. Django's own migrations
# create the tables and the TTL indexes (a timestamp column read in the migration's TimeZone,
# and a JSON date read with time_zone => 'America/New_York'). Rows expire on time, never
# early; a session a Visit still references (Django cascades in Python; its foreign key is
# DEFERRABLE INITIALLY DEFERRED) is set aside and counted without holding back the rest.
source "$(dirname "$0")/lib.sh"

venv=$ROOT/build/django-venv
app=$ROOT/build/django-app
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/pip" install -q -r "$ROOT/tests/e2e/clients/django_app/requirements.txt" >"$ROOT/build/django-pip.log" 2>&1; then
  cat "$ROOT/build/django-pip.log"
  fail "pip install of Django and psycopg"
  finish
fi
rm -rf "$app" && cp -r "$ROOT/tests/e2e/clients/django_app" "$app"

start_cluster e2e-django 28844 "jsonb_ttl.frequency = 200"
q postgres -c "CREATE DATABASE django_shop"
export PGDATABASE=django_shop PGPORT=$PORT
django() { (cd "$app" && "$venv/bin/python" "$@"); }

django manage.py migrate --no-input -v 0
expect_eq "Django's migrations made both TTL indexes (a DateTimeField is timestamptz, absolute; the JSON date in New York time)" \
  "shop_event:data.at:America/New_York shop_session:expires:" \
  "$(q django_shop -c "SELECT string_agg(table_name || ':' || path || ':' || coalesce(time_zone, ''), ' ' ORDER BY table_name::text) FROM ttl_indexes")"
expect_eq "and the foreign key is Django's: deferrable, initially deferred" "true|true" \
  "$(q django_shop -c "SELECT condeferrable || '|' || condeferred FROM pg_constraint WHERE conrelid = 'shop_visit'::regclass AND contype = 'f'")"

django drive.py write
expect_eq "the ORM wrote naive New York times" t \
  "$(q django_shop -c "SET TimeZone = 'America/New_York'; SELECT bool_and(expires - localtimestamp BETWEEN interval '59 minutes' AND interval '61 minutes') FROM shop_session WHERE key LIKE 'hour%'")"
expect_eq "DjangoJSONEncoder wrote them without an offset" t \
  "$(q django_shop -c "SELECT bool_and(data->>'at' !~ '(Z|[+-][0-9:]+)\$') FROM shop_event")"

brief_gone() {
  [ "$(django drive.py sessions | grep -c '^brief')" = 1 ] && [ "$(django drive.py events | grep -c '^brief')" = 0 ]
}
wait_for "the 4-second rows go within a pass of expiring (but the referenced session)" 12 brief_gone
sleep 1
expect_eq "hour-long sessions all stay (read as UTC, they would have gone at once)" 10 \
  "$(django drive.py sessions | grep -c '^hour')"
expect_eq "hour-long events all stay" 10 "$(django drive.py events | grep -c '^hour')"
expect_eq "the session a Visit references is the one kept" brief0 "$(django drive.py sessions | grep '^brief')"
eventually_eq "and it is counted as set aside" 5 "shop_session=1" django_shop \
  "SELECT string_agg(table_name || '=' || rows_undeletable, ' ') FROM ttl_stats WHERE rows_undeletable > 0"
finish
