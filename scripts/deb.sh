#!/usr/bin/env bash
# Builds the Debian package of jsonb_ttl for PostgreSQL MAJOR (make deb PG=MAJOR):
#   target/deb/postgresql-MAJOR-jsonb-ttl_VERSION_ARCH.deb
# VERSION is Cargo.toml's. The library is built (release profile) against $PG_CONFIG, that
# major's server, wherever it lives (15: Debian's; 16-18: scripts/pg-server.sh's cache), and
# laid out at Debian's (and PGDG's) paths for that major, whatever pg_config says:
#   /usr/lib/postgresql/MAJOR/lib/jsonb_ttl.so
#   /usr/share/postgresql/MAJOR/extension/jsonb_ttl.control, jsonb_ttl--*.sql
#   /usr/share/doc/postgresql-MAJOR-jsonb-ttl/
# Depends: postgresql-MAJOR and the shared libraries the .so links (dpkg-shlibdeps). No
# maintainer scripts: installing or removing the package restarts nothing; the server loads
# the new library when it next starts (shared_preload_libraries) or a session first uses it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
major=${1:?MAJOR}
PG_CONFIG=${PG_CONFIG:?the pg_config of PostgreSQL $major}
log() { echo "deb: $*" >&2; }
die() { log "$*"; exit 1; }

server=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
[ "$server" = "$major" ] || die "$PG_CONFIG is PostgreSQL $server, not $major"
for tool in dpkg-deb dpkg-shlibdeps strip; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev binutils)"
done

version=$(cargo pkgid -p jsonb_ttl | sed 's/.*[#@]//')
arch=$(dpkg --print-architecture)
pkg=postgresql-$major-jsonb-ttl
out=$ROOT/target/deb
deb=$out/${pkg}_${version}_${arch}.deb
work=$out/work-pg$major            # dpkg-shlibdeps wants debian/control and debian/PACKAGE/
tree=$out/pgrx-pg$major            # cargo pgrx package's output, at pg_config's paths
stage=$work/debian/$pkg
# DEB_REUSE_BUILD=1 (.ci/run's make test-deb, after the same commit's packages were built
# beside make test-majors): the library cargo pgrx package built from this very commit, kept
# with a stamp, is packaged again instead of built again (cargo would rebuild it: a cdylib's file
# in target/ has no hash in its name, so each major's build overwrites the last one's).
stamp=$tree.built-from
from="$(git rev-parse HEAD 2>/dev/null || true) $PG_CONFIG"
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || from=""  # local changes
if [ -n "${DEB_REUSE_BUILD:-}" ] && [ -n "$from" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$from" ]; then
  log "reusing the library built from this commit ($tree)"
  rm -rf "$work" "$deb"
else
  rm -rf "$work" "$tree" "$stamp" "$deb"
  mkdir -p "$out"
  log "building $pkg $version with $PG_CONFIG"
  cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$tree"
  [ -z "$from" ] || echo "$from" >"$stamp"
fi

# What pgrx put out, at the server's paths; anything else is a surprise to look at.
pkglibdir=$tree$("$PG_CONFIG" --pkglibdir)
extdir=$tree$("$PG_CONFIG" --sharedir)/extension
unexpected=$(find "$tree" -type f ! -path "$pkglibdir/jsonb_ttl.so" ! -path "$extdir/jsonb_ttl*")
[ -z "$unexpected" ] || die "unexpected files from cargo pgrx package: $unexpected"
[ -f "$pkglibdir/jsonb_ttl.so" ] || die "no jsonb_ttl.so in $pkglibdir"
grep -q "^default_version = '$version'" "$extdir/jsonb_ttl.control" ||
  die "$extdir/jsonb_ttl.control does not say default_version = '$version'"
[ -f "$extdir/jsonb_ttl--$version.sql" ] || die "no jsonb_ttl--$version.sql"

lib=$stage/usr/lib/postgresql/$major/lib
ext=$stage/usr/share/postgresql/$major/extension
doc=$stage/usr/share/doc/$pkg
install -d -m 755 "$lib" "$ext" "$doc" "$stage/DEBIAN"
# Stripped as dh_strip does (the dynamic symbols PostgreSQL looks up stay).
install -m 644 "$pkglibdir/jsonb_ttl.so" "$lib/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$lib/jsonb_ttl.so"
install -m 644 "$extdir"/jsonb_ttl* "$ext/"
# The released install scripts pgrx no longer generates (see RELEASED_SCRIPTS in the Makefile).
for s in sql/jsonb_ttl--*.sql; do
  case $s in *--*--*) ;; *) [ -e "$ext/$(basename "$s")" ] || install -m 644 "$s" "$ext/" ;; esac
done

# File times clamped to the last commit's (dpkg-deb), owners root:root. Two builds of one commit
# differ only in the order of the statements pgrx writes into jsonb_ttl--VERSION.sql.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
maintainer=${DEB_MAINTAINER:-jsonb_ttl maintainers <maintainers@users.noreply.a-seed-7c027a67.example>}
first_year=$(git log --max-parents=0 --format=%cd --date=format:%Y 2>/dev/null | sort -n | sed -n 1p || true)
year=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
years=${first_year:-$year}; [ "$years" = "$year" ] || years=$years-$year

gzip -9n <README.md >"$doc/README.md.gz"
gzip -9n <CHANGELOG.md >"$doc/CHANGELOG.md.gz"
# A native package's changelog.gz is Debian's format; the project's own is CHANGELOG.md.gz.
gzip -9n >"$doc/changelog.gz" <<EOF
$pkg ($version) unstable; urgency=medium

  * jsonb_ttl $version for PostgreSQL $major (see CHANGELOG.md.gz).

 -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")
EOF
{
  cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: jsonb_ttl

Files: *
Copyright: $years the jsonb_ttl authors
License: PostgreSQL

Files: usr/lib/postgresql/*/lib/jsonb_ttl.so
Copyright: $years the jsonb_ttl authors, and the authors of the Rust crates it links statically
License: PostgreSQL, and for each crate its own (Comment)
Comment: the Rust crates linked into the library, with their licenses:
EOF
  cargo tree -p jsonb_ttl -e normal,no-proc-macro --no-default-features --features "pg$major" \
    --prefix none --format ' {p}: {l}' | sed 's/ (\*)$//; s| (/[^)]*)||' | sort -u
  cat <<'EOF'

License: PostgreSQL
 Permission to use, copy, modify, and distribute this software and its
 documentation for any purpose, without fee, and without a written agreement is
 hereby granted, provided that the above copyright notice and this paragraph and
 the following two paragraphs appear in all copies.
 .
 IN NO EVENT SHALL THE AUTHORS BE LIABLE TO ANY PARTY FOR DIRECT, INDIRECT,
 SPECIAL, INCIDENTAL, OR CONSEQUENTIAL DAMAGES, INCLUDING LOST PROFITS, ARISING
 OUT OF THE USE OF THIS SOFTWARE AND ITS DOCUMENTATION, EVEN IF THE AUTHORS HAVE
 BEEN ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
 .
 THE AUTHORS SPECIFICALLY DISCLAIM ANY WARRANTIES, INCLUDING, BUT NOT LIMITED TO,
 THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE.
 THE SOFTWARE PROVIDED HEREUNDER IS ON AN "AS IS" BASIS, AND THE AUTHORS HAVE NO
 OBLIGATIONS TO PROVIDE MAINTENANCE, SUPPORT, UPDATES, ENHANCEMENTS, OR
 MODIFICATIONS.
EOF
} >"$doc/copyright"
chmod 644 "$doc"/*

# Depends: the server, and the libraries the .so needs at the versions its symbols need.
printf 'Source: jsonb-ttl\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "debian/$pkg/usr/lib/postgresql/$major/lib/jsonb_ttl.so" |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no dependencies"

(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
cat >"$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: postgresql-$major, $shlibs
Section: database
Priority: optional
Description: TTL indexes for JSONB documents in PostgreSQL $major
 jsonb_ttl gives tables of JSONB documents TTL indexes, as MongoDB, ArangoDB
 and Cosmos DB have them: name the attribute that holds a point in time and
 how long after it a row expires, and a background worker removes expired
 rows in batches, in every database, as the table's owner, on the primary.
 .
 Add jsonb_ttl to shared_preload_libraries and restart the server for the
 worker, then CREATE EXTENSION jsonb_ttl in each database that wants it.
 Installing or removing this package restarts nothing.
EOF
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

dpkg-deb --build --root-owner-group "$stage" "$deb" >/dev/null
log "$(basename "$deb"): $(stat -c %s "$deb") bytes (library: $(stat -c %s "$lib/jsonb_ttl.so") stripped, $(stat -c %s "$pkglibdir/jsonb_ttl.so") as built)"
rm -rf "$work"  # ($tree stays, for DEB_REUSE_BUILD)
echo "$deb"
