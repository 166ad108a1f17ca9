#!/usr/bin/env bash
# A throwaway PostgreSQL cluster (15, or the server of $PG_CONFIG) with jsonb_ttl preloaded, run as the postgres user.
#   scripts/cluster.sh start NAME PORT [extra postgresql.conf lines...]
#   scripts/cluster.sh stop NAME
#   scripts/cluster.sh destroy NAME
#   scripts/cluster.sh dir NAME        prints the cluster's folder
# Data, socket and log live in the cluster's folder, build/NAME/ — or, when the postgres user
# cannot reach build/ (a checkout under a private folder) or the socket path would be too long,
# /tmp/jsonb_ttl-<checkout hash>/NAME/. The server listens on the Unix socket in its folder's
# sock/ and on 127.0.0.1:PORT, nowhere else.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=$("${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" --bindir)  # PG_CONFIG: which server
cmd=${1:?start|stop|destroy|dir}
name=${2:?cluster name}
as_pg() { runuser -u postgres -- "$@"; }

base=$ROOT/build
mkdir -p "$base"
if [ ${#base} -gt 60 ] || ! runuser -u postgres -- test -x "$base"; then
  base=/tmp/jsonb_ttl-$(echo "$ROOT" | md5sum | cut -c1-8)
  mkdir -p "$base" && chmod 755 "$base"
fi
dir=$base/$name

case "$cmd" in
start)
  port=${3:?port}
  shift 3
  mkdir -p "$dir/sock"
  chown postgres:postgres "$dir" "$dir/sock"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
    {
      echo "listen_addresses = '127.0.0.1'"
      echo "port = $port"
      echo "unix_socket_directories = '$dir/sock'"
      echo "shared_preload_libraries = 'jsonb_ttl'"
      echo "max_worker_processes = 16"
      echo "fsync = off"
      echo "log_line_prefix = '%m [%p] %b %d '"
      for line in "$@"; do echo "$line"; done
    } >>"$dir/data/postgresql.conf"
  fi
  # RUST_BACKTRACE=1 as on a developer's machine: the library keeps error DETAILs free of Rust
  # backtraces by itself (lib.rs, quiet_rust_backtraces), and every test runs so.
  env -u RUST_LIB_BACKTRACE RUST_BACKTRACE=1 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  ;;
stop)
  # A stale postmaster.pid (a crashed or killed server) is not an error here.
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  ;;
destroy)
  "$0" stop "$name"
  rm -rf "$dir"
  ;;
dir)
  echo "$dir"
  ;;
*)
  echo "usage: $0 start|stop|destroy|dir NAME [PORT]" >&2
  exit 2
  ;;
esac
