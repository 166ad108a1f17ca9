#!/usr/bin/env bash
# pg_regress golden files (tests/pg_regress/{sql,expected}) against a real cluster with
# jsonb_ttl preloaded. Usage: tests/regress.sh [test names...] (default: every file in sql/).
# Set REGRESS_ACCEPT=1 to copy the results over the expected files (then read the diff!).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PGXS=$($PG_CONFIG --pkglibdir)/pgxs
NAME=regress
PORT=${REGRESS_PORT:-28816}
cd "$ROOT"

if [ $# -gt 0 ]; then tests=("$@"); else
  mapfile -t tests < <(ls tests/pg_regress/sql | sed -n 's/\.sql$//p' | sort)
fi

scripts/cluster.sh destroy "$NAME"
trap 'scripts/cluster.sh destroy "$NAME"' EXIT
# The worker stays off: golden output must not depend on when a pass happens.
scripts/cluster.sh start "$NAME" "$PORT" "jsonb_ttl.enabled = off"

if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  for t in "${tests[@]}"; do touch "tests/pg_regress/expected/$t.out"; done
fi
out=build/regress-out
rm -rf "$out" && mkdir -p "$out" && chmod 777 "$out"
status=0
"$PGXS/src/test/regress/pg_regress" \
  --bindir="$($PG_CONFIG --bindir)" \
  --host="$(scripts/cluster.sh dir "$NAME")/sock" --port="$PORT" --user=postgres \
  --inputdir=tests/pg_regress --outputdir="$out" \
  --dbname=jsonb_ttl_regress --load-extension=jsonb_ttl \
  --launcher="$ROOT/tests/pg_regress/launcher.sh" \
  "${tests[@]}" || status=$?
if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  mkdir -p tests/pg_regress/expected
  for t in "${tests[@]}"; do cp "$out/results/$t.out" "tests/pg_regress/expected/$t.out"; done
  echo "regress: accepted ${#tests[@]} result files"
  exit 0
fi
[ $status -eq 0 ] || cat "$out/regression.diffs" 2>/dev/null | head -200
exit $status
