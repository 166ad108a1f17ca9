#!/usr/bin/env bash
# Prints the pg_config of PostgreSQL MAJOR (15, 16, 17 or 18), installing that server first
# when it is missing, and registers it with pgrx (~/.pgrx/config.toml).
#   scripts/pg-server.sh MAJOR
#   scripts/pg-server.sh --deps MAJOR   only the Debian packages (and sources list) that
#                                       fetching or building MAJOR needs: apt's part, so that
#                                       the rest can run beside other work (.ci/run)
# Only package registries are reachable from where this project is built and tested, so:
#   15  Debian bookworm's postgresql-15 and postgresql-server-dev-15 (scripts/install-deps.sh)
#   16  PostgreSQL 16.2 as the PyPI wheel pgserver 0.1.4 ships it (binaries, headers, pg_config;
#       relocatable): no Debian suite has 16 any more
#   17  the upstream source Debian's pool still serves (17.11; trixie's index names 17.12,
#       whose files answer 404), built here
#   18  `apt-get source postgresql-18` (sid), built here
# Servers live in $JSONB_TTL_PG_CACHE (default /var/cache/jsonb_ttl/pg/MAJOR), outside the
# checkout and readable by the postgres user that runs the test clusters; a build takes about
# 5 minutes on 2 cores, once.
set -euo pipefail
deps_only=false
[ "${1:-}" = --deps ] && { deps_only=true; shift; }
major=${1:?MAJOR}
cache=${JSONB_TTL_PG_CACHE:-/var/cache/jsonb_ttl/pg}
dir=$cache/$major
log() { echo "pg-server: $*" >&2; }

build_from_source() {  # build_from_source TARBALL: configure, make, install into $dir/install
  local src
  mkdir -p "$dir/src"
  tar xjf "$1" -C "$dir/src"
  src=$(find "$dir/src" -maxdepth 1 -mindepth 1 -type d | head -1)
  log "building PostgreSQL $major from $(basename "$src") into $dir/install (about 5 minutes)"
  # Called from a make recipe (make test-majors), MAKELEVEL > 0 would tell PostgreSQL's
  # makefiles they run under its own top-level make, which skips the generated headers
  # (utils/errcodes.h: "No such file or directory"); MAKEFLAGS would hand them our jobserver.
  (unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES && cd "$src" && ./configure --prefix="$dir/install" --without-icu >"$dir/configure.log" 2>&1 \
     && make -j"$(nproc)" >"$dir/make.log" 2>&1 && make install >"$dir/install.log" 2>&1) \
    || { log "build failed, see $dir/*.log"; exit 1; }
  rm -rf "$dir/src"
}

# need PACKAGE…: installs those not installed yet (nothing, and no apt lock, when all are)
need() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]}"
  apt-get update -qq  # a fresh machine's package lists may be empty
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
}

# what fetching or building MAJOR needs from apt
deps() {
  case "$major" in
    16) python3 -m venv --help >/dev/null 2>&1 || need python3-venv ;;
    17) need bison flex libreadline-dev zlib1g-dev curl bzip2 ;;
    18)
      need bison flex libreadline-dev zlib1g-dev dpkg-dev bzip2
      local src_list=/etc/apt/sources.list.d/jsonb_ttl-pg-src.sources
      if [ ! -f "$src_list" ]; then
        # sid's sources from the Debian archive this machine's apt uses (scripts/debian-mirror.sh)
        printf 'Types: deb-src\nURIs: %s\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
          "$("$(dirname "$0")/debian-mirror.sh")" >"$src_list"
        apt-get update -qq
      fi ;;
  esac
}

case "$major" in
  15) pg_config=/usr/lib/postgresql/15/bin/pg_config ;;
  16) pg_config=$dir/pgserver/pginstall/bin/pg_config ;;
  *) pg_config=$dir/install/bin/pg_config ;;
esac

if [ ! -x "$pg_config" ] || $deps_only; then
  case "$major" in 15|16|17|18) ;; *) log "no PostgreSQL $major here (15, 16, 17 or 18)"; exit 2 ;; esac
  deps
  $deps_only && exit 0
  mkdir -p "$dir"
  case "$major" in
    15) log "PostgreSQL 15 comes from scripts/install-deps.sh"; exit 1 ;;
    16)
      log "fetching PostgreSQL 16.2 (PyPI: pgserver 0.1.4)"
      python3 -m venv "$dir/venv"
      "$dir/venv/bin/pip" download -q --no-deps --only-binary :all: \
        --platform manylinux2014_x86_64 --python-version 3.11 -d "$dir/wheel" pgserver==0.1.4 >&2
      rm -rf "$dir/venv"
      python3 - "$dir" <<'PY'
import pathlib, sys, zipfile
target = pathlib.Path(sys.argv[1])
wheel = next((target / "wheel").glob("pgserver-*.whl"))
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        # the server, and the libraries its binaries find through RPATH $ORIGIN/../../../pgserver.libs
        if name.startswith(("pgserver/pginstall/", "pgserver.libs/")):
            z.extract(name, target)
# zip entries lose their mode bits: the programs get theirs back
pginstall = target / "pgserver/pginstall"
programs = list((pginstall / "bin").iterdir()) + [
    p for p in (pginstall / "lib/postgresql/pgxs").rglob("*")
    if p.is_file() and p.name in {"pg_regress", "isolationtester", "pg_isolation_regress",
                                  "install-sh", "missing"}]
for f in programs:
    f.chmod(0o755)
PY
      rm -rf "$dir/wheel" ;;
    17)
      # from the Debian archive this machine's apt uses (scripts/debian-mirror.sh)
      curl -fsS -o "$dir/postgresql-17.tar.bz2" \
        "$("$(dirname "$0")/debian-mirror.sh")/pool/main/p/postgresql-17/postgresql-17_17.11.orig.tar.bz2"
      build_from_source "$dir/postgresql-17.tar.bz2"
      rm -f "$dir/postgresql-17.tar.bz2" ;;
    18)
      (cd "$dir" && apt-get source -q --download-only postgresql-18 >/dev/null 2>&1)
      build_from_source "$(ls "$dir"/postgresql-18_*.orig.tar.bz2 | head -1)"
      rm -f "$dir"/postgresql-18_* ;;
    *) log "no PostgreSQL $major here (15, 16, 17 or 18)"; exit 2 ;;
  esac
  chmod -R a+rX "$cache"
fi

# pgrx: register this major next to the others (cargo pgrx init would rewrite the whole file)
config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
mkdir -p "$(dirname "$config")"
[ -f "$config" ] || printf '[configs]\n' >"$config"
if ! grep -qs "^pg$major = \"$pg_config\"" "$config"; then
  sed -i "/^pg$major = /d" "$config"
  sed -i "/^\[configs\]/a pg$major = \"$pg_config\"" "$config"
fi
echo "$pg_config"
