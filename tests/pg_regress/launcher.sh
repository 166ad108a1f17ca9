#!/bin/sh
# pg_regress runs psql through this launcher (--launcher): it replaces pg_regress's
# "Postgres, MDY" / postgres_verbose / PST8PDT defaults with the ISO output users see by default,
# so the golden files read like a psql session.
PGDATESTYLE='ISO, MDY' PGTZ=UTC PGOPTIONS='-c intervalstyle=postgres' exec "$@"
