-- Every object of the extension, with who may use it and the settings it runs with. A function
-- that runs SQL must pin its search_path (a SET clause in "settings"), and nothing internal is
-- executable by PUBLIC unless the documented wrappers must call it as the caller (then it
-- checks the caller's rights itself). Review any change to this file.
CREATE ROLE acl_nobody;   -- a role with no grants of its own: what PUBLIC may do
SELECT p.oid::regprocedure AS function,
       has_function_privilege('acl_nobody', p.oid, 'EXECUTE') AS public_execute,
       p.prosecdef AS security_definer,
       p.provolatile AS volatility,
       coalesce(array_to_string(p.proconfig, ', '), '') AS settings
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jsonb_ttl')
ORDER BY p.oid::regprocedure::text;

-- The functions without a SET search_path: only the parsers and helpers that key indexes, and
-- the touch trigger, which run no SQL and resolve no names (a SET clause would cost a GUC nest
-- level per row on every insert).
SELECT p.oid::regprocedure AS unpinned
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jsonb_ttl')
  AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
ORDER BY p.oid::regprocedure::text;

-- Tables and views: readable by everyone, writable by no one but the extension's owner.
SELECT c.oid::regclass AS relation, c.relkind,
       has_table_privilege('acl_nobody', c.oid, 'SELECT') AS public_select,
       has_table_privilege('acl_nobody', c.oid, 'INSERT') OR has_table_privilege('acl_nobody', c.oid, 'UPDATE')
         OR has_table_privilege('acl_nobody', c.oid, 'DELETE') AS public_write
FROM pg_depend d
JOIN pg_class c ON c.oid = d.objid
WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jsonb_ttl')
ORDER BY c.oid::regclass::text;
DROP ROLE acl_nobody;
