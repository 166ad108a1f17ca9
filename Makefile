# jsonb_ttl: `make run` starts a local cluster with the worker and demo data; `make test` runs
# every test layer. Both install whatever is missing first (scripts/install-deps.sh).
# PG: the PostgreSQL major to build and test against (make test PG=18): 15 is Debian's;
# scripts/pg-server.sh fetches or builds 16, 17 and 18 once, into /var/cache/jsonb_ttl/pg.
PG ?= 15
PG_CONFIG ?= $(if $(filter 15,$(PG)),/usr/lib/postgresql/15/bin/pg_config,$(shell scripts/pg-server.sh $(PG)))
export PG_CONFIG
RUN_PORT  ?= 28815
PSQL       = $(shell $(PG_CONFIG) --bindir)/psql
RUN_SOCK   = $$(scripts/cluster.sh dir run)/sock

.PHONY: deps structure test test-majors test-deb test-long unit package deb regress isolation e2e install install-release run psql stop bench fmt lint mutants clean-clusters

deps:
	@scripts/install-deps.sh

## make test [PG=15|16|17|18]: every test layer, each against a real PostgreSQL (15 by default):
##   structure  the shape of src/ (scripts/structure.py: the layers of src/lib.rs, no circle of
##              imports, files <= 450 lines, functions <= 80, the internals PUBLIC may run)
##   unit       the pure crate's tests (core/, cargo test), then #[pg_test] in-backend tests and
##              the extension's Rust unit tests (cargo pgrx test)
##   regress    pg_regress golden files, tests/pg_regress
##   isolation  isolationtester specs, tests/isolation
##   e2e        end-to-end scripts against a cluster with the library preloaded, tests/e2e
test: deps structure unit regress isolation e2e

structure:
	python3 scripts/structure.py

## make test-majors: on PostgreSQL 16, 17 and 18 (each fetched or built once, see PG above),
## the pg_regress and isolation golden files and the worker's end-to-end tests (worker, kept_targets,
## security: the 16+ ownership checks of the hooks, attacks, traps, upgrade, brake, dump_restore,
## options, partitions, change_streams: the subscribers with origin = none / any; replicas:
## pg_stat_replication, slots and WAL counts as each major has them; pg_upgrade: from the major
## before, 15 → 16, 16 → 17, 17 → 18, each kind of TTL index, no worker in pg_upgrade's servers).
## CI runs it after make test.
MAJORS ?= 16 17 18
MAJORS_E2E = worker kept_targets security attacks traps upgrade brake dump_restore options partitions change_streams replicas pg_upgrade field_ttl
test-majors: deps
	@set -e; for v in $(MAJORS); do \
	  echo "== PostgreSQL $$v"; \
	  pg_config=$$(scripts/pg-server.sh $$v); \
	  $(MAKE) --no-print-directory PG=$$v PG_CONFIG=$$pg_config install regress isolation; \
	  PG_CONFIG=$$pg_config tests/e2e/run.sh $(patsubst %,tests/e2e/%.sh,$(MAJORS_E2E)); \
	done

## make test-long: the race test at full size (1M rows, 60 s of concurrent date moves).
test-long: deps install
	RACE_ROWS=1000000 RACE_SECONDS=60 tests/e2e/race.sh

unit:
	cargo test -p jsonb_ttl_core
	@d=$$(scripts/cluster.sh dir pgrx-test-data); rm -rf $$d && mkdir -p $$d && chown postgres: $$d && \
	  echo "cargo pgrx test pg$(PG) --runas postgres --pgdata $$d" && \
	  cargo pgrx test pg$(PG) --runas postgres --pgdata $$d

# cargo pgrx installs the current version's script and the update scripts (sql/jsonb_ttl--A--B.sql);
# the released install scripts it no longer generates (sql/jsonb_ttl--X.Y.Z.sql) are copied here,
# so `CREATE EXTENSION jsonb_ttl VERSION '0.1.0'` and its update keep working.
RELEASED_SCRIPTS = $(filter-out $(wildcard sql/jsonb_ttl--*--*.sql),$(wildcard sql/jsonb_ttl--*.sql))

install:
	cargo pgrx install --pg-config $(PG_CONFIG)
	install -m 644 $(RELEASED_SCRIPTS) $$($(PG_CONFIG) --sharedir)/extension/

install-release:
	cargo pgrx install --release --pg-config $(PG_CONFIG)
	install -m 644 $(RELEASED_SCRIPTS) $$($(PG_CONFIG) --sharedir)/extension/

## make package [PG=N]: an installable tree for that major, target/release/jsonb_ttl-pgN/, laid
## out at the server's own paths (pg_config): copy it onto the server's /.
package:
	cargo pgrx package --pg-config $(PG_CONFIG)
	install -m 644 $(RELEASED_SCRIPTS) \
	  target/release/jsonb_ttl-pg$(PG)$$($(PG_CONFIG) --sharedir)/extension/

## make deb [PG=15|16|17|18]: the Debian package of that major,
## target/deb/postgresql-N-jsonb-ttl_VERSION_amd64.deb (VERSION: Cargo.toml's), built with that
## major's pg_config but laid out at Debian's (PGDG's) paths for it, whatever pg_config says:
## /usr/lib/postgresql/N/lib/jsonb_ttl.so, /usr/share/postgresql/N/extension/jsonb_ttl*;
## Depends: postgresql-N and the libraries the .so links; no maintainer scripts, so installing
## or removing it restarts nothing. About 1 minute per major on 2 cores (scripts/deb.sh).
deb: deps
	scripts/deb.sh $(PG)

## make test-deb: builds the package of every major (DEB_MAJORS) and checks each with
## tests/e2e/deb.sh: control fields, its files at Debian's paths, no maintainer scripts,
## lintian, the library's links, and the library loading in that major's server. Only PostgreSQL 15 is a
## Debian package on bookworm: apt-get cannot satisfy Depends: postgresql-16 (17, 18) here, so
## those packages are built and checked, not installed. The 15 one goes the whole round trip:
## apt-get install ./…deb (the development install set aside meanwhile, then put back), the
## README's example purged by the worker, apt-get remove --purge, no file of it left.
## CI runs it after make test. Not part of make e2e, which tests the development install.
DEB_MAJORS ?= 15 16 17 18
test-deb: deps
	@set -e; for v in $(DEB_MAJORS); do \
	  echo "== PostgreSQL $$v: make deb"; \
	  pg_config=$$(scripts/pg-server.sh $$v); \
	  PG_CONFIG=$$pg_config scripts/deb.sh $$v; \
	  echo "== PostgreSQL $$v: tests/e2e/deb.sh"; \
	  PG_CONFIG=$$pg_config tests/e2e/deb.sh; \
	done

regress: install
	tests/golden.sh regress

isolation: install
	tests/golden.sh isolation

## make e2e: the end-to-end scripts, E2E_JOBS (2) at a time, each on its own cluster and port
## (tests/e2e/run.sh: each script's output whole, then the scripts by duration).
E2E_SCRIPTS = $(filter-out tests/e2e/lib.sh tests/e2e/run.sh tests/e2e/deb.sh tests/e2e/citus%.sh tests/e2e/pg_upgrade.sh,$(wildcard tests/e2e/[a-z]*.sh))
e2e: install
	@tests/e2e/run.sh $(E2E_SCRIPTS)

## make run: a local cluster (build/run) with jsonb_ttl preloaded and the demo loaded.
run: deps install-release
	scripts/cluster.sh start run $(RUN_PORT) "jsonb_ttl.frequency = 1000"
	$(PSQL) -h $(RUN_SOCK) -p $(RUN_PORT) -U postgres -d postgres -qAt \
	  -c "SELECT 1 FROM pg_database WHERE datname = 'demo'" | grep -q 1 || \
	  $(PSQL) -h $(RUN_SOCK) -p $(RUN_PORT) -U postgres -d postgres -qc "CREATE DATABASE demo"
	$(PSQL) -h $(RUN_SOCK) -p $(RUN_PORT) -U postgres -d demo -v ON_ERROR_STOP=1 -f sql/demo.sql
	@# the demo's feeder (scripts/demo-feed.sh): a few new events a second, in a process group of its own
	@pidfile=$$(scripts/cluster.sh dir run)/demo-feed.pid; \
	  { [ -f $$pidfile ] && kill -0 $$(cat $$pidfile) 2>/dev/null; } || { \
	    setsid scripts/demo-feed.sh $(PSQL) $(RUN_SOCK) $(RUN_PORT) </dev/null >/dev/null 2>&1 & \
	    echo $$! >$$pidfile; }
	@echo
	@echo "jsonb_ttl is running. Connect with:"
	@echo "  $(PSQL) -h $(RUN_SOCK) -p $(RUN_PORT) -U postgres demo"
	@echo "  (or: psql -h 127.0.0.1 -p $(RUN_PORT) -U postgres demo, from any directory; or: make psql)"
	@echo "Stop it with: make stop"

## make psql: psql into make run's demo database, over TCP (127.0.0.1:RUN_PORT) as the README's
## line does; make -C <checkout> psql from anywhere else.
psql:
	@$(PSQL) -h 127.0.0.1 -p $(RUN_PORT) -U postgres demo

stop:
	@pidfile=$$(scripts/cluster.sh dir run)/demo-feed.pid; \
	  [ ! -f $$pidfile ] || { kill -- -$$(cat $$pidfile) 2>/dev/null || true; rm -f $$pidfile; }
	scripts/cluster.sh stop run

## make bench: performance figures as ratios against baselines measured in the same run.
bench: deps install-release
	bench/run.sh

fmt:
	cargo fmt --all

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets --features "pg15 pg_test" -- -D warnings
	cargo clippy --all-targets -p jsonb_ttl_core -- -D warnings

## make mutants: cargo mutants over the pure crate (core/), run against its own tests (about
## 5 minutes on 2 cores; not part of make test). Fails when a mutant is missed; a mutant that
## makes the tests loop until the timeout counts as caught (core/MUTANTS.md). Results in
## build/mutants.out/.
MUTANTS_VERSION = 27.1.0
mutants:
	@cargo mutants --version 2>/dev/null | grep -q "$(MUTANTS_VERSION)" || \
	  cargo install cargo-mutants --version $(MUTANTS_VERSION) --locked
	@rc=0; cargo mutants --package jsonb_ttl_core --test-package jsonb_ttl_core --profile mutants \
	  --timeout 60 --jobs 2 --output build || rc=$$?; \
	if [ $$rc = 3 ]; then echo "timed out (caught):"; cat build/mutants.out/timeout.txt; rc=0; fi; \
	exit $$rc

## make clean-clusters: stop and remove every cluster the scripts made (make run's included).
clean-clusters:
	@base=$$(dirname "$$(scripts/cluster.sh dir any)"); \
	  for d in "$$base"/*/; do [ -f "$$d/data/PG_VERSION" ] && scripts/cluster.sh destroy "$$(basename "$$d")"; done; true

## make test-citus [PG=15|16|17]: jsonb_ttl on Citus 13.2, a coordinator and two worker nodes,
## then a third added (clusters on 127.0.0.1, ports 28870-28873): tests/e2e/citus.sh.
## scripts/citus.sh builds Citus from ../shared/vendor into the server once (1 to 2 minutes on
## 2 cores). CI runs it after make test.
.PHONY: test-citus
test-citus: deps install
	@scripts/citus.sh $(PG)
	@set -e; for t in tests/e2e/citus*.sh; do \
	  [ "$$t" = tests/e2e/citus_lib.sh ] || { echo "== $$t"; E2E_CITUS=1 $$t; }; done

## make managed: the SQL edition for managed services (issue 48), built from managed/*.sql into
## build/managed/jsonb_ttl.sql (psql -f) and build/managed/jsonb_ttl_pgtle.sql (pg_tle).
## make test-managed: its tests (tests/managed), on clusters that preload pg_cron (and pg_tle),
## every call by a role that is not a superuser; installs what it needs first.
.PHONY: managed test-managed
managed:
	@scripts/managed.sh build

test-managed:
	@scripts/managed.sh test

## make bench-managed: the SQL edition (managed/) side by side with the Rust edition and the plain
## pg_cron DELETE, on one PostgreSQL 15 cluster (bench/managed.sh, about 11 minutes on 2 cores).
.PHONY: bench-managed
bench-managed: deps install-release
	bench/managed.sh
