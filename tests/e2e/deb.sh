#!/usr/bin/env bash
# The Debian package of the major of $PG_CONFIG (make deb PG=N builds it; make test-deb builds
# and checks every major's; not part of make e2e, which runs the development install).
# For every major: the package's control fields, no maintainer scripts, its files at Debian's
# paths, owners and modes, the library's links, and the library loading in that major's server.
# Where that major is Debian's own (postgresql-N installed with dpkg, pg_config at Debian's
# paths: 15 on bookworm), also the round trip: the development install set aside, `apt-get
# install ./…deb`, the README's example purged by the worker, `apt-get remove --purge`, no
# file of the package left, and the development install put back as it was (also on failure).
# Bookworm has no postgresql-16/17/18 to satisfy Depends, so those packages are not installed.
source "$(dirname "$0")/lib.sh"
major=$PG_MAJOR
version=$(cd "$ROOT" && cargo pkgid -p jsonb_ttl | sed 's/.*[#@]//')
arch=$(dpkg --print-architecture)
pkg=postgresql-$major-jsonb-ttl
deb=${DEB:-$ROOT/target/deb/${pkg}_${version}_$arch.deb}
if [ ! -f "$deb" ]; then
  fail "no package $deb (make deb PG=$major builds it)"
  finish
fi
echo "package: $deb ($(stat -c %s "$deb") bytes)"

tmp=$(mktemp -d /tmp/jsonb_ttl-deb.XXXXXX)
chmod 755 "$tmp"   # the postgres user loads the library from here, and _apt reads the .deb
clusters=()
restore=:          # the round trip sets it to put the development install back
cleanup() {
  local status=$? c
  trap '' INT TERM    # a second signal must not cut the cleanup short
  for c in "${clusters[@]}"; do "$ROOT/scripts/cluster.sh" destroy "$c"; done
  $restore || status=1
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT   # then the EXIT trap: an interrupted round trip still puts everything back
trap 'exit 143' TERM

echo "== control fields"
field() { dpkg-deb --field "$deb" "$1"; }
expect_eq "Package" "$pkg" "$(field Package)"
expect_eq "Version is Cargo.toml's" "$version" "$(field Version)"
expect_eq "Architecture" "$arch" "$(field Architecture)"
expect_eq "Section" database "$(field Section)"
depends=$(field Depends)
expect_eq "Depends on the server of its major first" "postgresql-$major" "${depends%%,*}"
for lib in libc6 libgcc-s1; do
  if [[ $depends =~ (^|, )$lib\ \(\>=\ [0-9][0-9.]*\)(,|$) ]]; then
    pass "Depends on $lib with a version floor ($depends)"
  else
    fail "Depends has no '$lib (>= …)': $depends"
  fi
done
if [[ $(field Maintainer) =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]]; then
  pass "Maintainer: a name and an address"
else
  fail "Maintainer: $(field Maintainer)"
fi
expect_eq "Description names the major" "TTL indexes for JSONB documents in PostgreSQL $major" \
  "$(field Description | head -1)"
expect_eq "no maintainer scripts: control and md5sums only" "control md5sums" \
  "$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed -n 's|^\./\(.\)|\1|p' | sort | xargs)"

echo "== files at Debian's paths for PostgreSQL $major"
extdir=/usr/share/postgresql/$major/extension
expected=$(
  echo "/usr/lib/postgresql/$major/lib/jsonb_ttl.so"
  echo "$extdir/jsonb_ttl.control"
  echo "$extdir/jsonb_ttl--$version.sql"
  for s in "$ROOT"/sql/jsonb_ttl--*.sql; do echo "$extdir/$(basename "$s")"; done
  for d in CHANGELOG.md.gz README.md.gz changelog.gz copyright; do echo "/usr/share/doc/$pkg/$d"; done
)
expected=$(echo "$expected" | sort -u)
contents=$(dpkg-deb --fsys-tarfile "$deb" | tar -tv)
files=$(echo "$contents" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\.||' | sort)
expect_eq "the files (library, control file, install and update scripts, docs)" "$expected" "$files"
expect_eq "everything owned by root:root" "" "$(echo "$contents" | awk '$2 != "root/root"')"
expect_eq "files -rw-r--r--, directories drwxr-xr-x" "" \
  "$(echo "$contents" | awk '!($1 == "-rw-r--r--" || $1 == "drwxr-xr-x")')"
dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/DEBIAN"
if (cd "$tmp/root" && md5sum --check --quiet "$tmp/DEBIAN/md5sums"); then pass "md5sums match"; else fail "md5sums"; fi
control=$tmp/root$extdir/jsonb_ttl.control
expect_eq "the control file's default_version" "default_version = '$version'" "$(grep '^default_version' "$control")"
expect_eq "the control file's module_pathname" "module_pathname = '\$libdir/jsonb_ttl'" "$(grep '^module_pathname' "$control")"
differ=""
for s in "$ROOT"/sql/jsonb_ttl--*.sql; do cmp -s "$s" "$tmp/root$extdir/$(basename "$s")" || differ+=" $(basename "$s")"; done
expect_eq "the released install scripts and the update scripts are sql/'s" "" "$differ"

if ! command -v lintian >/dev/null; then
  fail "lintian is missing (scripts/install-deps.sh installs it)"
elif out=$(lintian --fail-on error,warning "$deb" 2>&1); then
  pass "lintian: no error, no warning"
else
  fail "lintian: $(echo "$out" | grep -v '^running with root privileges')"
fi

echo "== the library"
so=$tmp/root/usr/lib/postgresql/$major/lib/jsonb_ttl.so
expect_eq "an x86-64 shared object" "DYN / Advanced Micro Devices X86-64" \
  "$(readelf -h "$so" | sed -n 's/^ *Type: *\([A-Z]*\).*/\1/p') / $(readelf -h "$so" | sed -n 's/^ *Machine: *//p')"
expect_eq "links only the C runtime and libgcc_s" "ld-linux-x86-64.so.2 libc.so.6 libgcc_s.so.1" \
  "$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs)"
expect_eq "no RPATH or RUNPATH" "" "$(readelf -d "$so" | grep -E '\((RPATH|RUNPATH)\)' || true)"
expect_eq "ldd finds every library it links" "" "$(ldd "$so" | grep 'not found' || true)"
expect_eq "ldd resolves them at the system's paths" "" \
  "$(ldd "$so" | awk '$3 ~ /^\// && $3 !~ /^\/(usr\/)?lib(64|x86_64-linux-gnu)?\//')"
# The server it was built against lives elsewhere for 16-18 (scripts/pg-server.sh's cache):
# no path of it may be in the library.
for prefix in "$(dirname "$(dirname "$PG_CONFIG")")" "${JSONB_TTL_PG_CACHE:-/var/cache/jsonb_ttl/pg}"; do
  [ "$prefix" = "/usr/lib/postgresql/$major" ] ||
    expect_eq "no path of the build server's ($prefix) in it" 0 "$(grep -c -F "$prefix" "$so" || true)"
done
expect_eq "stripped (no .symtab)" 0 "$(readelf -S "$so" | grep -c '\.symtab' || true)"
expect_eq "exports Pg_magic_func and _PG_init" "Pg_magic_func _PG_init" \
  "$(readelf --dyn-syms -W "$so" | awk '$7 != "UND" && ($8 == "Pg_magic_func" || $8 == "_PG_init") {print $8}' | sort | xargs)"

echo "== it loads in a PostgreSQL $major server ($PG_CONFIG)"
start_cluster e2e-deb 28860 "shared_preload_libraries = ''"
clusters+=(e2e-deb)
trap cleanup EXIT  # start_cluster set its own
if out=$(q postgres -c "LOAD '$so'" -c "SHOW jsonb_ttl.frequency" 2>&1); then
  expect_eq "LOAD by path (magic block of $major), its GUCs registered" 30s "$out"
else
  fail "LOAD '$so': $out"
fi
started=$(q postgres -c "SELECT pg_postmaster_start_time()")
first_sock=$SOCK first_port=$PORT
first_started() { SOCK=$first_sock PORT=$first_port q postgres -c "SELECT pg_postmaster_start_time()"; }

debian_server=no
dpkg-query -W -f='${db:Status-Abbrev}' "postgresql-$major" 2>/dev/null | grep -q '^ii' &&
  [ "$("$PG_CONFIG" --pkglibdir)" = "/usr/lib/postgresql/$major/lib" ] && debian_server=yes
if [ $debian_server = no ]; then
  if [ "$major" = 15 ]; then
    fail "the round trip needs Debian's postgresql-15 and its pg_config (scripts/install-deps.sh)"
  else
    echo "== no round trip: postgresql-$major is not a Debian package here (bookworm has none)"
  fi
  finish
  exit
fi

echo "== the round trip: apt-get install, the README's example with the worker, apt-get purge"
if dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -q '^.i'; then
  fail "$pkg is installed already: remove it first"
  finish
fi
# The development install (make install) of this major: set aside for the test, then put back
# exactly (the other end-to-end scripts run it).
libdir=$("$PG_CONFIG" --pkglibdir) sharedir=$("$PG_CONFIG" --sharedir)/extension
dev_files=$(find "$libdir" "$sharedir" -maxdepth 1 -type f -name 'jsonb_ttl*' | sort)
fingerprint() { [ -z "$dev_files" ] || (echo "$dev_files" | xargs stat -c '%n %s %a %U:%G %Y'; echo "$dev_files" | xargs sha256sum); }
dev_before=$(fingerprint)
mkdir -p "$tmp/dev"
restore_dev() {
  local f
  if dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -q '^.i'; then
    echo "(purging $pkg, left installed by a failure)"
    DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q "$pkg" >/dev/null 2>&1 || true
  fi
  for f in $dev_files; do mv "$tmp/dev/$(basename "$f")" "$f"; done
  restore=:
  if [ "$(fingerprint)" = "$dev_before" ]; then
    echo "  (development install back: $(echo "$dev_files" | grep -c . || true) files, set aside for $(($(date +%s) - aside_at)) s)"
  else
    echo "  FAIL the development install is not back as it was"; return 1
  fi
}
aside_at=$(date +%s)
restore=restore_dev
for f in $dev_files; do mv "$f" "$tmp/dev/"; done
expect_eq "development install set aside" "" "$(find "$libdir" "$sharedir" -maxdepth 1 -name 'jsonb_ttl*')"

cp "$deb" "$tmp/" && chmod 644 "$tmp/$(basename "$deb")"
if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$tmp/$(basename "$deb")" 2>&1); then
  pass "apt-get install ./$(basename "$deb")"
else
  fail "apt-get install: $out"
  finish
fi
expect_eq "dpkg: installed, at its version" "ii $version" "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$pkg" 2>&1)"
installed=$(dpkg -L "$pkg" | while read -r f; do [ -d "$f" ] || echo "$f"; done | sort)
expect_eq "dpkg -L: the files at Debian's paths" "$expected" "$installed"
expect_eq "dpkg -S: the library is the package's" "$pkg: $libdir/jsonb_ttl.so" "$(dpkg -S "$libdir/jsonb_ttl.so" 2>&1)"
expect_eq "a running server was not restarted" "$started" "$(first_started)"

clusters+=(e2e-deb-worker)
start_cluster e2e-deb-worker 28861 "jsonb_ttl.frequency = 200"
trap cleanup EXIT
q postgres -c "CREATE DATABASE readme" -c "CREATE DATABASE upgraded"
example=$(awk '/^```sql$/ {on=1; next} on && /^```$/ {exit} on {print}' "$ROOT/README.md")
if echo "$example" | grep -q "CREATE EXTENSION jsonb_ttl" && echo "$example" | grep -q "ttl_index_create('events', 'creationDate'"; then
  pass "the README's first example creates the extension and a TTL index on events.creationDate"
else
  fail "the README's first example is not the one this test knows: $example"
fi
if out=$(echo "$example" | q readme 2>&1); then pass "the README's example runs"; else fail "the README's example: $out"; fi
q readme -c "INSERT INTO events (doc) VALUES (jsonb_build_object('creationDate', now(), 'live', true))"
expect_eq "the extension's version" "$version" "$(q readme -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"
only_live() { [ "$(q readme -c "SELECT string_agg(coalesce(doc->>'live', 'expired'), ',') FROM events")" = true ]; }
wait_for "the worker removes the README's two expired rows, the live one stays" 10 only_live || true
eventually_eq "ttl_stats: the worker's count" 1 2 readme "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'events'::regclass"
expect_eq "a launcher and the database's worker run" "1 1" \
  "$(q postgres -c "SELECT count(*) FILTER (WHERE backend_type = 'jsonb_ttl launcher') || ' ' || count(*) FILTER (WHERE backend_type = 'jsonb_ttl worker' AND datname = 'readme') FROM pg_stat_activity")"
expect_eq "CREATE EXTENSION … VERSION '0.1.0' and ALTER EXTENSION UPDATE: the released scripts" "$version" \
  "$(q upgraded -c "CREATE EXTENSION jsonb_ttl VERSION '0.1.0'" -c "ALTER EXTENSION jsonb_ttl UPDATE" \
       -c "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'" 2>&1)"
"$ROOT/scripts/cluster.sh" stop e2e-deb-worker

if out=$(DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q "$pkg" 2>&1); then
  pass "apt-get remove --purge $pkg"
else
  fail "apt-get remove --purge: $out"
fi
expect_eq "dpkg knows it no more" "" "$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -v '^[pu]n' || true)"
left=$(for f in $installed "/usr/share/doc/$pkg"; do [ ! -e "$f" ] || echo "$f"; done)
expect_eq "no file of the package left ($(echo "$installed" | wc -l) files)" "" "$left"
expect_eq "a running server was not restarted" "$started" "$(first_started)"
if restore_dev; then pass "the development install is back as it was"; else fail "the development install"; fi
finish
