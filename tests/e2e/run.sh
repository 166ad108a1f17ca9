#!/usr/bin/env bash
# Runs end-to-end scripts, E2E_JOBS at a time (default 2: each script has its own cluster and
# port), each script's output printed whole when it ends, with how long it took; then the
# scripts by duration, slowest first, and one closing line "e2e: N passed, M failed" (scripts).
#   tests/e2e/run.sh SCRIPT...
set -uo pipefail
jobs=${E2E_JOBS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A started=()
passed=0 failed=0 failures=()

# report NAME STATUS: prints a finished script's output and counts it
report() {
  local name=$1 status=$2 took
  took=$(($(date +%s) - started[$name]))
  echo "== tests/e2e/$name.sh ($took s)"
  cat "$out/$name.log"
  echo "$took $name" >>"$out/durations"
  if [ "$status" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

# waits for one running script to end and reports it
reap() {
  local pid name status
  wait -n -p pid "${!running[@]}"
  status=$?
  name=${running[$pid]}
  unset "running[$pid]"
  report "$name" "$status"
}

declare -A running=()
for script in "$@"; do
  name=$(basename "$script" .sh)
  while [ ${#running[@]} -ge "$jobs" ]; do reap; done
  started[$name]=$(date +%s)
  "$script" >"$out/$name.log" 2>&1 &
  running[$!]=$name
done
while [ ${#running[@]} -gt 0 ]; do reap; done

echo "== end-to-end scripts by duration (s), $jobs at a time"
sort -rn "$out/durations" | awk '{ printf "  %5d  %s\n", $1, $2 }'
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
