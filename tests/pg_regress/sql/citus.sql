-- Citus (docs/citus.md): on a hash-distributed table each node's worker purges the shards it
-- holds, with the TTL index the coordinator's worker hands on to it. The two internals that
-- does, as they behave on a server without Citus (tests/e2e/citus.sh runs the real cluster):
\set SHOW_CONTEXT never
SET client_min_messages = warning;

-- Handing TTL indexes on is for the coordinator's worker (a superuser) only, and only to a
-- Citus worker node: nobody else may call it, and a node that is not one refuses it.
SELECT has_function_privilege('public', 'jsonb_ttl_internal._ttl_citus_receive(jsonb)', 'EXECUTE') AS public_may_hand_on;
SELECT jsonb_ttl_internal._ttl_citus_receive('{"nodes": [], "indexes": []}');

-- ttl_expire_now(tbl) on the coordinator runs _ttl_expire_local on every worker node as the
-- caller: it checks, as ttl_expire_now does, that the caller owns the table.
CREATE ROLE regress_tenant;
CREATE ROLE regress_other;
GRANT CREATE ON SCHEMA public TO regress_tenant;
SET ROLE regress_tenant;
CREATE TABLE public.tenant_events (doc jsonb);
INSERT INTO tenant_events VALUES ('{"ts": "2000-01-01T00:00:00Z"}'), ('{"ts": "2999-01-01T00:00:00Z"}');
SET ROLE regress_other;
SELECT jsonb_ttl_internal._ttl_expire_local('public.tenant_events'::regclass, 10);
-- … and that the TTL index has reached this node.
SET ROLE regress_tenant;
SELECT jsonb_ttl_internal._ttl_expire_local('public.tenant_events'::regclass, 10);
SELECT index_name FROM ttl_index_create('tenant_events', 'ts', interval '1 day');
SELECT jsonb_ttl_internal._ttl_expire_local('public.tenant_events'::regclass, 10);
SELECT count(*) AS rows_left FROM tenant_events;
RESET ROLE;

DROP TABLE tenant_events;
REVOKE CREATE ON SCHEMA public FROM regress_tenant;
DROP ROLE regress_tenant;
DROP ROLE regress_other;
