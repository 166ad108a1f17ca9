-- Hiding expired rows before they are deleted (Cosmos DB): ttl_index_create(…,
-- hide_expired => true). Readers stop seeing a row the moment it expires, however far behind
-- the worker is. A row security policy does it, so it reaches only roles row security applies
-- to: the owner, superusers and BYPASSRLS roles still see every row. A visibility convenience,
-- not access control.
\set SHOW_CONTEXT never
CREATE ROLE hide_owner;
CREATE ROLE hide_reader;
CREATE ROLE hide_bypass BYPASSRLS;
GRANT CREATE ON SCHEMA public TO hide_owner;
SET ROLE hide_owner;
CREATE TABLE offers (id int, doc jsonb);
GRANT SELECT, INSERT, UPDATE, DELETE ON offers TO hide_reader, hide_bypass;
INSERT INTO offers VALUES
  (1, jsonb_build_object('until', now() - interval '1 minute')),   -- expired
  (2, jsonb_build_object('until', now() + interval '1 hour')),     -- not yet
  (3, '{"until": "not a date"}');                                  -- never expires
SELECT hide_expired FROM ttl_index_create('offers', 'until', 0, hide_expired => true);
-- row security is on, with a restrictive policy that hides expired rows and a permissive one
-- that keeps every other access as it was (row security alone would deny everything)
SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'offers'::regclass;
SELECT policyname, permissive, roles, cmd, qual, with_check FROM pg_policies
WHERE tablename = 'offers' ORDER BY policyname;

-- who sees what
SELECT id FROM offers ORDER BY id;                           -- the owner: everything
RESET ROLE;
SELECT id FROM offers ORDER BY id;                           -- a superuser: everything
SET ROLE hide_reader;
SELECT id FROM offers ORDER BY id;                           -- an ordinary role: not the expired
UPDATE offers SET doc = doc || '{"seen": true}' WHERE id = 1; -- nor can it touch it
INSERT INTO offers VALUES (4, '{"until": "2019-01-01"}');    -- writes are as before
SELECT count(*) FROM offers;
SET ROLE hide_bypass;
SELECT id FROM offers ORDER BY id;                           -- BYPASSRLS: everything
SET ROLE hide_owner;

-- the policy follows expire_after: with a day's grace the expired offer is back
SELECT expire_after FROM ttl_index_alter('offers', interval '1 day');
SET ROLE hide_reader;
SELECT id FROM offers ORDER BY id;
SET ROLE hide_owner;
SELECT expire_after FROM ttl_index_alter('offers', 0);

-- the purge removes what readers no longer see (the worker deletes as the owner)
SELECT ttl_expire_now('offers');
SELECT id FROM offers ORDER BY id;

-- FORCE ROW LEVEL SECURITY would hide expired rows from the purge itself: refused
ALTER TABLE offers FORCE ROW LEVEL SECURITY;
SELECT relforcerowsecurity FROM pg_class WHERE oid = 'offers'::regclass;

-- off again: the policies go, and row security, which was enabled for it
SELECT hide_expired FROM ttl_index_alter('offers', hide_expired => false);
SELECT relrowsecurity FROM pg_class WHERE oid = 'offers'::regclass;
SELECT count(*) AS policies FROM pg_policies WHERE tablename = 'offers';

-- a table with row security of its own keeps its policies and gets only the restrictive one;
-- turning it off leaves the owner's row security as it was
CREATE TABLE notes (id int, author name, doc jsonb);
GRANT SELECT ON notes TO hide_reader;
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON notes USING (author = current_user);
INSERT INTO notes VALUES (1, 'hide_reader', '{"at": "2019-01-01"}'),
                         (2, 'hide_reader', '{"at": "2999-01-01"}'),
                         (3, 'someone',     '{"at": "2999-01-01"}');
SELECT FROM ttl_index_create('notes', 'at', 0, hide_expired => true);
SELECT policyname, permissive FROM pg_policies WHERE tablename = 'notes' ORDER BY 1;
SET ROLE hide_reader;
SELECT id FROM notes ORDER BY id;
SET ROLE hide_owner;
SELECT ttl_index_drop('notes');
SELECT relrowsecurity, (SELECT string_agg(policyname, ',') FROM pg_policies WHERE tablename = 'notes')
FROM pg_class WHERE oid = 'notes'::regclass;

-- refused: a table with FORCE, and policies of the same names
ALTER TABLE notes FORCE ROW LEVEL SECURITY;
SELECT ttl_index_create('notes', 'at', 0, hide_expired => true);
ALTER TABLE notes NO FORCE ROW LEVEL SECURITY;
CREATE POLICY jsonb_ttl_hide_expired ON notes USING (true);
SELECT ttl_index_create('notes', 'at', 0, hide_expired => true);
SELECT count(*) AS ttl_indexes FROM ttl_indexes WHERE table_name = 'notes'::regclass;

-- DROP INDEX takes the policies along, as ttl_index_drop does
SELECT hide_expired FROM ttl_index_alter('offers', hide_expired => true);
DROP INDEX offers_ttl_idx;
SELECT relrowsecurity, (SELECT count(*) FROM pg_policies WHERE tablename = 'offers') AS policies
FROM pg_class WHERE oid = 'offers'::regclass;

-- row security off but policies present: enabling it would put them in force, so refused
CREATE TABLE drafts (id int, doc jsonb);
CREATE POLICY dormant ON drafts AS RESTRICTIVE USING (id > 100);
SELECT ttl_index_create('drafts', 'at', 0, hide_expired => true);
-- a policy of the owner's added after hide_expired: turning it off leaves access as it is
DROP POLICY dormant ON drafts;
SELECT FROM ttl_index_create('drafts', 'at', 0, hide_expired => true);
CREATE POLICY own ON drafts USING (id < 10);
SELECT hide_expired FROM ttl_index_alter('drafts', hide_expired => false);
SELECT relrowsecurity, (SELECT string_agg(policyname, ',' ORDER BY policyname) FROM pg_policies WHERE tablename = 'drafts')
FROM pg_class WHERE oid = 'drafts'::regclass;

DROP TABLE offers, notes, drafts;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM hide_owner;
DROP ROLE hide_owner, hide_reader, hide_bypass;
