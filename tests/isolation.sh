#!/usr/bin/env bash
# isolationtester specs (tests/isolation/specs) against a real cluster with jsonb_ttl preloaded:
# exact interleavings of the deleter with concurrent sessions.
# Set REGRESS_ACCEPT=1 to copy the results over the expected files (then read the diff!).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PGXS=$($PG_CONFIG --pkglibdir)/pgxs
NAME=isolation
PORT=${ISOLATION_PORT:-28819}
cd "$ROOT"
mapfile -t specs < <(ls tests/isolation/specs | sed -n 's/\.spec$//p' | sort)

scripts/cluster.sh destroy "$NAME"
trap 'scripts/cluster.sh destroy "$NAME"' EXIT
# The worker stays off: golden output must not depend on when a pass happens.
scripts/cluster.sh start "$NAME" "$PORT" "jsonb_ttl.enabled = off"

out=build/isolation-out
rm -rf "$out" && mkdir -p "$out"
if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  for t in "${specs[@]}"; do touch "tests/isolation/expected/$t.out"; done
fi
status=0
"$PGXS/src/test/isolation/pg_isolation_regress" \
  --bindir="$($PG_CONFIG --bindir)" \
  --host="$(scripts/cluster.sh dir "$NAME")/sock" --port="$PORT" --user=postgres \
  --inputdir=tests/isolation --outputdir="$out" \
  --dbname=jsonb_ttl_isolation --load-extension=jsonb_ttl \
  "${specs[@]}" || status=$?
if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  for t in "${specs[@]}"; do cp "$out/results/$t.out" "tests/isolation/expected/$t.out"; done
  echo "isolation: accepted ${#specs[@]} result files"
  exit 0
fi
[ $status -eq 0 ] || cat "$out/regression.diffs" 2>/dev/null | head -200
exit $status
