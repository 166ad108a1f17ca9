-- Every function and view of the extension's own schema, and every column of its views, says
-- what it is: \df+, \dv+ and \d+ show these comments. The internals (jsonb_ttl_internal) are
-- not a user's to read.
\pset format unaligned
-- What \dt, \dv and \df show of the extension in its own schema: the documented surface only.
-- The catalog table (ttl_index) and the index expressions' helpers live among the internals.
SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' ELSE c.relkind::text END AS kind,
       c.relname AS name
FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e' AND c.relnamespace = x.extnamespace
UNION
SELECT 'function', p.proname
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND p.pronamespace = x.extnamespace
ORDER BY 1, 2;

SELECT 'function ' || p.oid::regprocedure AS without_comment
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND p.pronamespace = x.extnamespace
  AND obj_description(p.oid, 'pg_proc') IS NULL
UNION ALL
SELECT 'relation ' || c.oid::regclass
FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e' AND c.relnamespace = x.extnamespace
  AND obj_description(c.oid, 'pg_class') IS NULL
UNION ALL
SELECT 'column ' || c.oid::regclass || '.' || a.attname
FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e' AND c.relnamespace = x.extnamespace
  AND c.relkind = 'v' AND col_description(c.oid, a.attnum) IS NULL
ORDER BY 1;

-- Every member of the extension, in its own schema or among the internals (functions, tables,
-- views, types, event triggers, the schema itself), says what it is for: none without a
-- comment. (docs/security.md lists the internals executable by PUBLIC; acl.out shows them.)
-- (A table's or view's row type and an array type are implied by what they belong to; since
-- PostgreSQL 17 they are members of the extension too.)
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS member_without_comment
FROM pg_depend d JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.deptype = 'e'
  AND obj_description(d.objid, (SELECT c.relname FROM pg_class c WHERE c.oid = d.classid)) IS NULL
  AND NOT EXISTS (SELECT FROM pg_type t LEFT JOIN pg_class r ON r.oid = t.typrelid
                  WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                    AND (t.typcategory = 'A' OR r.relkind IN ('r', 'v', 'p')))
ORDER BY 1;

-- The internals' comments, as a reference
SELECT p.oid::regprocedure AS internal_function, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND p.pronamespace <> x.extnamespace
ORDER BY p.oid::regprocedure::text;

-- The comments, as a reference
SELECT p.oid::regprocedure AS function, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'jsonb_ttl'
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND p.pronamespace = x.extnamespace
ORDER BY p.oid::regprocedure::text;
SELECT c.relname AS view, a.attname AS column, col_description(c.oid, a.attnum) AS comment
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
WHERE c.relname IN ('ttl_indexes', 'ttl_stats') ORDER BY c.relname, a.attnum;
