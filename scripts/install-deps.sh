#!/usr/bin/env bash
# Installs what building and testing jsonb_ttl needs on Debian bookworm, and nothing twice:
# PostgreSQL 15 with its server headers, sudo (for `cargo pgrx test --runas`), libclang (bindgen),
# dpkg-dev and lintian (make deb, make test-deb), Debian's postgres_exporter and curl
# (tests/e2e/prometheus.sh), cargo-pgrx 0.18.0, pgrx's configuration pointing at Debian's
# pg_config, Node.js and Python's venv.
set -euo pipefail

PGRX_VERSION=0.18.0
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
packages=(postgresql-15 postgresql-server-dev-15 postgresql-contrib sudo libclang-dev clang pkg-config dpkg-dev lintian
          postgresql-15-auto-failover pg-auto-failover-cli iproute2
          prometheus-postgres-exporter curl)

# Node.js and npm for the real-client end-to-end tests (tests/e2e/clients.sh), unless a Node.js
# is there already (Debian's nodejs package would conflict with another vendor's).
command -v npm >/dev/null || packages+=(nodejs npm)
# A Python with venv for the Django end-to-end test (tests/e2e/django.sh).
python3 -m venv --help >/dev/null 2>&1 || packages+=(python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$(cargo pgrx --version 2>/dev/null)" != "cargo-pgrx $PGRX_VERSION" ]; then
  echo "install-deps: installing cargo-pgrx $PGRX_VERSION (a few minutes)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "^pg15 = \"$PG_CONFIG\"" "$PGRX_HOME/config.toml"; then
  echo "install-deps: cargo pgrx init --pg15 $PG_CONFIG"
  cargo pgrx init --pg15 "$PG_CONFIG"
fi
