#!/usr/bin/env bash
# Makes sure Citus 13.2.2 is installed into PostgreSQL MAJOR (15 by default; Citus 13.2 supports
# 15, 16 and 17), building it once from ../shared/vendor/citus-13.2.2.tar.gz. Skips everything
# when that server's citus.so and citus.control (default_version 13.2-*) are there already.
#   scripts/citus.sh [MAJOR]
#   scripts/citus.sh --deps    only the Debian packages the build needs (apt's part, see .ci/run)
# The build works in $JSONB_TTL_CITUS_CACHE/MAJOR (default /var/cache/jsonb_ttl/citus/MAJOR), logs
# there (configure.log, make.log, install.log) and installs into the server's own paths
# (pg_config: Debian's for 15, scripts/pg-server.sh's for 16 and 17): 1 to 2 minutes on 2 cores,
# without JIT bitcode (with_llvm=no; the server's JIT does without inlining Citus). It needs
# libcurl4-openssl-dev, liblz4-dev, libzstd-dev and libkrb5-dev (the server's headers include
# gssapi/gssapi.h), installed from apt when missing.
# The header fix: recent 15.x minors (Debian's 15.20) declare have_createdb_privilege() in
# commands/dbcommands.h, which Citus 13.2.2 also defines, static inline, in
# src/include/pg_version_compat.h ("static declaration … follows non-static declaration"): when
# the server's header declares it, Citus's copy gives way to an #include of that header.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
deps_only=false
[ "${1:-}" = --deps ] && { deps_only=true; shift; }
major=${1:-15}
version=13.2.2
# the project's vendored source: beside the checkout (../shared/vendor), or where this machine
# keeps it, or CITUS_TARBALL
tarball=${CITUS_TARBALL:-}
for candidate in "$ROOT/../shared/vendor" "$ROOT/../../shared/vendor" /work/shared/vendor; do
  [ -n "$tarball" ] || [ ! -f "$candidate/citus-$version.tar.gz" ] || tarball=$candidate/citus-$version.tar.gz
done
tarball=${tarball:-$ROOT/../shared/vendor/citus-$version.tar.gz}
cache=${JSONB_TTL_CITUS_CACHE:-/var/cache/jsonb_ttl/citus}
dir=$cache/$major
log() { echo "citus: $*" >&2; }

case "$major" in
  15) pg_config=/usr/lib/postgresql/15/bin/pg_config ;;
  16|17) pg_config=$("$ROOT/scripts/pg-server.sh" "$major") ;;
  *) log "Citus $version supports PostgreSQL 15, 16 and 17, not $major"; exit 2 ;;
esac
[ -x "$pg_config" ] || { log "no $pg_config (scripts/install-deps.sh installs PostgreSQL 15)"; exit 1; }

pkglibdir=$("$pg_config" --pkglibdir)
control=$("$pg_config" --sharedir)/extension/citus.control
if [ -f "$pkglibdir/citus.so" ] && grep -Eqs "^default_version = '13\.2-[0-9]+'" "$control"; then
  exit 0
fi

missing=()
for p in libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
$deps_only && exit 0

[ -f "$tarball" ] || { log "no $tarball"; exit 1; }

rm -rf "$dir" "$cache/src$major"  # src$major: an earlier layout's work dir
mkdir -p "$dir"
tar xzf "$tarball" -C "$dir"
src=$dir/citus-$version

# The header fix: the server's declaration instead of Citus's static copy.
includedir=$("$pg_config" --includedir-server)
if grep -qs 'have_createdb_privilege' "$includedir/commands/dbcommands.h"; then
  log "$includedir/commands/dbcommands.h declares have_createdb_privilege: leaving out Citus's copy"
  python3 - "$src/src/include/pg_version_compat.h" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
copy = re.compile(r"static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n", re.S)
text, n = copy.subn('#include "commands/dbcommands.h" /* the server declares have_createdb_privilege() */\n', text)
if n != 1:
    sys.exit(f"citus: expected one static have_createdb_privilege in {path}, found {n}")
open(path, "w").write(text)
PY
fi

log "building Citus $version for PostgreSQL $major in $dir (1 to 2 minutes on 2 cores)"
start=$(date +%s)
(cd "$src" && ./configure PG_CONFIG="$pg_config" >"$dir/configure.log" 2>&1) \
  || { log "configure failed, see $dir/configure.log"; exit 1; }
(cd "$src" && make -j"$(nproc)" with_llvm=no >"$dir/make.log" 2>&1) \
  || { log "build failed, see $dir/make.log"; exit 1; }
(cd "$src" && make install with_llvm=no >"$dir/install.log" 2>&1) \
  || { log "install failed, see $dir/install.log"; exit 1; }
rm -rf "$src"
chmod -R a+rX "$cache"
log "Citus $version installed into $pkglibdir in $(($(date +%s) - start)) s"
