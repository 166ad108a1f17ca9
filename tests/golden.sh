#!/usr/bin/env bash
# Golden-file tests against a real cluster with jsonb_ttl preloaded (the worker off, so output
# never depends on when a pass happens):
#   tests/golden.sh regress [names...]    pg_regress, tests/pg_regress/{sql,expected}
#   tests/golden.sh isolation [names...]  isolationtester specs, tests/isolation/{specs,expected}
# Set REGRESS_ACCEPT=1 to copy the results over the expected files (then read the diff!).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}  # make test PG=N sets it
PGXS=$($PG_CONFIG --pkglibdir)/pgxs
cd "$ROOT"
mode=${1:?regress|isolation}
shift
case "$mode" in
  regress)
    runner=$PGXS/src/test/regress/pg_regress inputs=tests/pg_regress/sql ext=sql port=28816
    # psql through a launcher: ISO dates and intervals, UTC, as users see them by default
    extra=(--launcher="$ROOT/tests/pg_regress/launcher.sh") dir=tests/pg_regress ;;
  isolation)
    runner=$PGXS/src/test/isolation/pg_isolation_regress inputs=tests/isolation/specs ext=spec port=28819
    extra=() dir=tests/isolation ;;
  *) echo "usage: $0 regress|isolation [names...]" >&2; exit 2 ;;
esac
# E2E_PORT_OFFSET moves the port, as for tests/e2e (a second checkout testing at once)
port=$((port + ${E2E_PORT_OFFSET:-0}))
if [ $# -gt 0 ]; then tests=("$@"); else
  mapfile -t tests < <(ls "$inputs" | sed -n "s/\\.$ext\$//p" | sort)
fi

name=golden-$mode
scripts/cluster.sh destroy "$name"
trap 'scripts/cluster.sh destroy "$name"' EXIT
scripts/cluster.sh start "$name" "$port" "jsonb_ttl.enabled = off" "timezone = 'UTC'"

out=build/$mode-out
rm -rf "$out" && mkdir -p "$out" && chmod 777 "$out"
if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  for t in "${tests[@]}"; do touch "$dir/expected/$t.out"; done
fi
status=0
"$runner" --bindir="$($PG_CONFIG --bindir)" \
  --host="$(scripts/cluster.sh dir "$name")/sock" --port="$port" --user=postgres \
  --inputdir="$dir" --outputdir="$out" \
  --dbname="jsonb_ttl_$mode" --load-extension=jsonb_ttl "${extra[@]}" \
  "${tests[@]}" || status=$?
if [ "${REGRESS_ACCEPT:-0}" = 1 ]; then
  for t in "${tests[@]}"; do cp "$out/results/$t.out" "$dir/expected/$t.out"; done
  echo "$mode: accepted ${#tests[@]} result files"
  exit 0
fi
[ $status -eq 0 ] || head -200 "$out/regression.diffs" 2>/dev/null
exit $status
