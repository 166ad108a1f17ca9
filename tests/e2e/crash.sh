#!/usr/bin/env bash
# Crashes: kill -9 a per-database worker mid-batch, then the postmaster mid-pass. Afterwards no
# batch is half-applied (a trigger logs every deletion in the deleting transaction: present +
# logged = inserted), counts stay consistent, the worker is back within a frequency and a probe,
# and the log shows no error loop.
source "$(dirname "$0")/lib.sh"
ROWS=300000
start_cluster e2e-crash 28836 "jsonb_ttl.frequency = 200" "jsonb_ttl.batch_size = 500" \
  "jsonb_ttl.max_removes_per_second = 50000" "restart_after_crash = on"

q postgres -c "CREATE DATABASE crash"
q crash <<SQL
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('events', 'at', 0);
CREATE TABLE deleted (id int);
CREATE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
\$\$ BEGIN INSERT INTO deleted VALUES (OLD.id); RETURN OLD; END \$\$;
CREATE TRIGGER log_delete AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION log_delete();
INSERT INTO events SELECT g, jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, $ROWS) g;
SQL
consistent() { q crash -c "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM deleted) = $ROWS
                             AND NOT EXISTS (SELECT FROM events e JOIN deleted d USING (id))"; }
worker_pid() { q postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'crash'"; }
purging() { [ "$(q crash -c "SELECT count(*) > 0 FROM deleted")" = t ]; }
up() { q postgres -c "SELECT 1" >/dev/null 2>&1; }

wait_for "the worker is purging" 5 purging
pid=$(worker_pid)
kill -9 "$pid"
pass "killed worker $pid with SIGKILL mid-pass"
# (until the postmaster has reaped the worker, the old server still answers: wait for the reset)
reset() { grep -q 'all server processes terminated; reinitializing' "$CLUSTER_DIR/server.log"; }
wait_for "the postmaster resets every process" 30 reset
wait_for "the server is back after crash recovery" 30 up
expect_eq "no half-applied batch after the worker's crash" t "$(consistent)"
back() { [ -n "$(worker_pid)" ] && [ "$(worker_pid)" != "$pid" ]; }
wait_for "the worker is back" 10 back
progress_from=$(q crash -c "SELECT count(*) FROM deleted")
more() { [ "$(q crash -c "SELECT count(*) FROM deleted")" -gt "$progress_from" ]; }
wait_for "and purging again" 5 more

postmaster=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
children=$(pgrep -P "$postmaster" | tr '\n' ' ')
kill -9 "$postmaster"
pass "killed the postmaster $postmaster with SIGKILL mid-pass"
gone() { for c in $children; do kill -0 "$c" 2>/dev/null && return 1; done; return 0; }
wait_for "its children notice and exit" 30 gone
env -u RUST_BACKTRACE runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w -t 60 start >/dev/null
wait_for "the cluster restarts with crash recovery" 30 up
expect_eq "no half-applied batch after the postmaster's crash" t "$(consistent)"
wait_for "the worker is back after the restart" 10 back
all_gone() { [ "$(q crash -c "SELECT count(*) FROM events")" = 0 ]; }
wait_for "all $ROWS rows purged in the end" 60 all_gone
# every row went through its DELETE trigger (a purge that bypassed the owner's triggers, say
# with session_replication_role = replica, would empty the table and fail this)
expect_eq "every one of the $ROWS rows has its deletion logged by its trigger" "$ROWS" \
  "$(q crash -c "SELECT count(DISTINCT id) FROM deleted")"
errors=$(grep -c 'ERROR' "$CLUSTER_DIR/server.log" || true)
if [ "$errors" -le 2 ]; then pass "no error loop in the log ($errors ERROR lines)"; else
  fail "$errors ERROR lines in the log"; grep ERROR "$CLUSTER_DIR/server.log" | sort | uniq -c | sort -rn | head -5; fi
finish
