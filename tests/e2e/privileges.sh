#!/usr/bin/env bash
# Privileges: the worker connects as a superuser but never runs a table owner's code as one:
# DELETE triggers and RLS policies (forced on the owner) see the owner. (Index expressions are
# not evaluated by a DELETE, and the worker's probe only reads the TTL index.) Another role sees other roles' tables in ttl_stats only as pg_class shows
# them, without their lag (which the worker records: reading ttl_stats runs no owner code).
source "$(dirname "$0")/lib.sh"
start_cluster e2e-privileges 28838 "jsonb_ttl.frequency = 100"

q postgres -c "CREATE DATABASE priv"
q priv <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE alice;
CREATE ROLE mallory;
GRANT CREATE ON SCHEMA public TO alice;
CREATE TABLE seen (what text, who name, superuser boolean);
GRANT INSERT ON seen TO PUBLIC;
CREATE FUNCTION public.note(what text) RETURNS boolean LANGUAGE sql VOLATILE SECURITY INVOKER
  SET search_path = public AS
$$ INSERT INTO seen SELECT what, current_user, rolsuper FROM pg_roles WHERE rolname = current_user RETURNING true $$;
SET ROLE alice;
CREATE TABLE secrets (doc jsonb);
ALTER TABLE secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE secrets FORCE ROW LEVEL SECURITY;
CREATE POLICY everything ON secrets USING (note('policy'));
CREATE FUNCTION on_delete() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
$$ BEGIN
  PERFORM note('trigger');
  IF OLD.doc ->> 'k' = 'keep' THEN RAISE EXCEPTION 'this one stays'; END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER on_delete BEFORE DELETE ON secrets FOR EACH ROW EXECUTE FUNCTION on_delete();
INSERT INTO secrets SELECT jsonb_build_object('at', '2019-01-01', 'k', g) FROM generate_series(1, 20) g;
RESET ROLE;
DELETE FROM seen;   -- what alice's own inserts noted
SET ROLE alice;     -- only now may the worker start deleting
SELECT FROM ttl_index_create('secrets', 'at', 0);
SQL
gone() { [ "$(q priv -c "SET row_security = off; SELECT count(*) FROM secrets")" = 0 ]; }
wait_for "the worker purges alice's table" 3 gone
expect_eq "the trigger and the policy ran, as alice and never as a superuser" "policy:alice:false trigger:alice:false" \
  "$(q priv -c "SELECT string_agg(DISTINCT s, ' ' ORDER BY s) FROM (SELECT what || ':' || who || ':' || superuser AS s FROM seen) x")"
expect_eq "no code ran as a superuser" 0 "$(q priv -c "SELECT count(*) FROM seen WHERE superuser")"

# a row alice's trigger refuses stays, set aside: the worker records its age as the lag
q priv -c "INSERT INTO secrets VALUES ('{\"at\": \"2019-01-01\", \"k\": \"keep\"}')"
lag_recorded() { [ "$(q priv -c "SELECT count(*) FROM ttl_stats WHERE oldest_expired IS NOT NULL")" = 1 ]; }
wait_for "the worker records the lag of the row it cannot delete" 5 lag_recorded
q priv -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "passes stop after enabled = off is reloaded" 5 passes_stopped priv
expect_eq "mallory sees alice's TTL table in ttl_stats, as pg_class shows it" "secrets" \
  "$(q priv -c "SET ROLE mallory; SELECT table_name FROM ttl_stats")"
expect_eq "but not its lag (no SELECT on it)" "" \
  "$(q priv -c "SET ROLE mallory; SELECT oldest_expired FROM ttl_stats")"
expect_eq "alice sees her lag" t "$(q priv -c "SET ROLE alice; SELECT oldest_expired IS NOT NULL FROM ttl_stats")"
for call in "SELECT ttl_index_alter('secrets', 60)" "SELECT ttl_index_drop('secrets')" \
            "SELECT ttl_expire_now('secrets')" "SELECT ttl_index_create('secrets', 'x', 60)" \
            "SELECT ttl_stats_reset()" "DELETE FROM jsonb_ttl_internal.ttl_index"; do
  code=$( (q priv -c "SET ROLE mallory; $call" 2>&1 >/dev/null || true) | sed -n 's/.*ERROR: *//p' | head -1)
  case "$code" in
    *"must be owner"*|*"permission denied"*) pass "mallory: $call → $code" ;;
    *) fail "mallory: $call → [$code]" ;;
  esac
done
finish
