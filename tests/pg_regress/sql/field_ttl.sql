-- Field TTLs: a date inside a document whose expiry removes part of the document (doc #- '{otp}')
-- instead of the row. One-time codes, reset tokens, temporary flags: the document stays, the
-- field goes. A table may have its TTL index and several field TTLs; each shows in ttl_indexes
-- (removes says what goes) and in ttl_stats (part 'field <path>').
\set SHOW_CONTEXT never

CREATE TABLE accounts (id int PRIMARY KEY, doc jsonb NOT NULL);

-- a one-time code expires 10 minutes after it was issued: the object that holds the date goes
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '10 minutes');
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '10 minutes');  -- there already
SELECT table_name, path, expire_after, removes, index_name FROM ttl_indexes;

-- 10 accounts: 6 codes issued in March (expired), 2 just now, 2 accounts without a code
INSERT INTO accounts
SELECT i, jsonb_build_object('email', 'user' || i || '@example.com', 'plan', 'free',
          'otp', jsonb_build_object('code', lpad(i::text, 6, '0'),
                                    'issuedAt', CASE WHEN i <= 6 THEN '2026-03-01T12:00:00Z'
                                                     ELSE now()::text END))
FROM generate_series(1, 8) i;
INSERT INTO accounts VALUES (9, '{"email": "user9@example.com", "plan": "pro"}'),
                            (10, '{"email": "user10@example.com", "plan": "pro"}');
CREATE TABLE before AS SELECT * FROM accounts;

-- the worker's batches (one run here at a time, as the worker runs them): 4, then the other 2
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'otp.issuedAt', 4) AS changed;
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'otp.issuedAt', 100) AS changed;
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'otp.issuedAt', 100) AS changed;

-- the expired codes are gone, every row is still here, and the rest of each document is as it was
SELECT count(*) AS accounts, count(*) FILTER (WHERE doc ? 'otp') AS with_code FROM accounts;
SELECT a.id, a.doc ? 'otp' AS has_code, a.doc = b.doc AS unchanged, a.doc = b.doc - 'otp' AS only_otp_removed
FROM accounts a JOIN before b USING (id) ORDER BY a.id;

-- expire_after changes under the worker's batches: a batch runs under the committed definition
UPDATE accounts SET doc = jsonb_set(doc, '{otp,issuedAt}', to_jsonb((now() - interval '20 minutes')::text))
WHERE id = 7;
SELECT ttl_field_alter('accounts', 'otp.issuedAt', interval '1 hour');
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'otp.issuedAt', 100) AS changed;  -- 20 minutes old: kept
SELECT ttl_field_alter('accounts', 'otp.issuedAt', interval '15 minutes');
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'otp.issuedAt', 100) AS changed;  -- now expired
SELECT id, doc ? 'otp' AS has_code FROM accounts WHERE id IN (7, 8) ORDER BY id;

-- several field TTLs beside the table's TTL index: the account goes a year after its last login;
-- a reset token after 15 minutes; a temporary lock (a top-level date) at its own time
SELECT index_name FROM ttl_index_create('accounts', 'lastLogin', interval '1 year', touch => true);
SELECT ttl_field_create('accounts', 'resetToken.createdAt', interval '15 minutes');
SELECT ttl_field_create('accounts', 'lockedUntil', interval '0');          -- removes lockedUntil itself
SELECT ttl_field_create('accounts', 'promo.until', interval '0', remove => 'promo');
SELECT path, expire_after, removes FROM ttl_indexes ORDER BY removes NULLS FIRST, path;
INSERT INTO accounts VALUES
  (20, '{"email": "x@example.com",
         "resetToken": {"token": "abc", "createdAt": "2026-03-01T00:00:00Z"},
         "lockedUntil": "2026-03-02T00:00:00Z", "promo": {"code": "SPRING", "until": "2026-04-01"}}');
CREATE TABLE login AS SELECT doc->'lastLogin' AS at FROM accounts WHERE id = 20;  -- (set by touch)
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'resetToken.createdAt', 100) AS changed,
       jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'lockedUntil', 100) AS unlocked,
       jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'promo.until', 100) AS promos_ended;
-- the field TTLs' updates are the worker's, not the application's: touch keeps lastLogin as it was
SELECT doc - 'lastLogin' AS doc, doc->'lastLogin' = (SELECT at FROM login) AS last_login_kept
FROM accounts WHERE id = 20;

-- a trigger tells the field TTL's update apart, as it does the TTL index's deletes
CREATE TABLE audit (id int, op text, expiring text);
CREATE FUNCTION audit_it() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit VALUES (NEW.id, TG_OP, current_setting('jsonb_ttl.expiring', true));
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_it AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION audit_it();
UPDATE accounts SET doc = doc || '{"resetToken": {"createdAt": "2026-03-01T00:00:00Z"}}' WHERE id = 20;
SELECT jsonb_ttl_internal._ttl_worker_field_batch('accounts'::regclass, 'resetToken.createdAt', 100) AS changed;
SELECT * FROM audit ORDER BY expiring NULLS FIRST;
DROP TRIGGER audit_it ON accounts;

-- what is refused, each with its SQLSTATE and HINT
\set VERBOSITY verbose
SELECT ttl_field_create('accounts', 'id', interval '1 day');                    -- not inside jsonb
SELECT ttl_field_create('accounts', 'id.at', interval '1 day');                 -- nothing follows an int
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '1 day');          -- another definition
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '-1 day');         -- negative
SELECT ttl_field_create('accounts', 'code.at', interval '1 day', remove => 'otp'); -- remove does not hold the date
SELECT ttl_field_create('accounts', 'lastLogin', interval '1 day');             -- the TTL index's own date
SELECT ttl_field_create('accounts', 'session.lastLogin', interval '1 day', remove => 'session')
WHERE false;                                                                    -- (fine: another key)
SELECT ttl_field_create('accounts', 'otp.issuedAt', NULL);
-- and the other way round: no TTL index (nor per-row TTL field) on a date a field TTL removes
SELECT ttl_index_alter('accounts', path => 'promo.lastLogin');
SELECT ttl_index_alter('accounts', row_ttl_path => 'resetToken.keepFor');
SELECT ttl_field_create('accounts', 'x.at', interval '1 day', numeric_unit => 'hours');
SELECT ttl_field_alter('accounts', 'nothing.here', interval '1 day');
SELECT ttl_field_drop('accounts', 'nothing.here');
CREATE VIEW accounts_view AS SELECT * FROM accounts;
SELECT ttl_field_create('accounts_view', 'otp.issuedAt', interval '1 day');
CREATE ROLE field_stranger;
SET ROLE field_stranger;
SELECT ttl_field_create('accounts', 'z.at', interval '1 day');
SELECT ttl_field_drop('accounts', 'otp.issuedAt');
RESET ROLE;
DROP ROLE field_stranger;
\set VERBOSITY default

-- on a big table, build the index first without blocking writes: ttl_field_create adopts it
CREATE TABLE big (id int, doc jsonb);
CREATE INDEX CONCURRENTLY big_token_at ON big ((ttl_timestamp(doc -> 'token' -> 'at')))
  WHERE ttl_timestamp(doc -> 'token' -> 'at') IS NOT NULL;
SELECT ttl_field_create('big', 'token.at', interval '1 hour');
SELECT index_name FROM ttl_indexes WHERE table_name = 'big'::regclass;
DROP TABLE big;

-- a hostile owner's search_path reaches no name of the field TTL's statement: its #- operator
-- and its ttl_timestamp are pg_catalog's and the extension's (the batch runs as the owner,
-- with the owner's settings, as the worker runs it)
CREATE ROLE field_owner;
CREATE TABLE owned (id int, doc jsonb);
ALTER TABLE owned OWNER TO field_owner;
SELECT ttl_field_create('owned', 'otp.at', interval '1 minute');
INSERT INTO owned VALUES (1, '{"otp": {"at": "2020-01-01T00:00:00Z"}, "keep": 1}');
CREATE SCHEMA evil;
GRANT USAGE ON SCHEMA evil TO field_owner;
CREATE FUNCTION evil.remove_nothing(jsonb, text[]) RETURNS jsonb LANGUAGE sql AS $$ SELECT $1 $$;
CREATE OPERATOR evil.#- (leftarg = jsonb, rightarg = text[], function = evil.remove_nothing);
CREATE FUNCTION evil.ttl_timestamp(jsonb) RETURNS timestamptz LANGUAGE sql AS $$ SELECT now() + interval '1 year' $$;
ALTER ROLE field_owner SET search_path = evil, pg_catalog, public;
SELECT jsonb_ttl_internal._ttl_worker_field_batch('owned'::regclass, 'otp.at', 10) AS changed;
SELECT doc FROM owned;
ALTER ROLE field_owner RESET search_path;
DROP SCHEMA evil CASCADE;
DROP TABLE owned;
DROP ROLE field_owner;

-- hostile names: every name is quoted, every key a literal
CREATE SCHEMA "we""ird";
CREATE TABLE "we""ird"."ta ble" (id int, "d o c" jsonb);
SELECT ttl_field_create('"we""ird"."ta ble"', '"d o c"."o''tp"."at"', interval '1 minute');
INSERT INTO "we""ird"."ta ble" VALUES (1, '{"o''tp": {"at": "2020-01-01T00:00:00Z", "x": 1}, "keep": true}');
SELECT jsonb_ttl_internal._ttl_worker_field_batch('"we""ird"."ta ble"'::regclass, '"d o c"."o''tp"."at"', 10) AS changed;
SELECT "d o c" FROM "we""ird"."ta ble";

-- a partitioned table: each partition's documents, through its partition of the index
CREATE TABLE events (id int, at date, doc jsonb) PARTITION BY RANGE (at);
CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
SELECT ttl_field_create('events', 'doc.ip.seenAt', interval '30 days');   -- forget IP addresses
\set VERBOSITY verbose
SELECT ttl_field_create('events_2026', 'doc.ip.seenAt', interval '1 day');  -- the partitioned table's covers it
\set VERBOSITY default
INSERT INTO events VALUES (1, '2026-05-01', '{"kind": "login", "ip": {"addr": "192.0.2.1", "seenAt": "2026-05-01T00:00:00Z"}}'),
                          (2, '2027-05-01', '{"kind": "login", "ip": {"addr": "192.0.2.2", "seenAt": "2026-05-02T00:00:00Z"}}');
SELECT jsonb_ttl_internal._ttl_worker_field_batch('events_2026'::regclass, 'doc.ip.seenAt', 10) AS changed_2026,
       jsonb_ttl_internal._ttl_worker_field_batch('events_2027'::regclass, 'doc.ip.seenAt', 10) AS changed_2027;
SELECT id, doc FROM events ORDER BY id;

-- ttl_field_expire_now: what the worker would do, now, in this transaction, as the owner
INSERT INTO accounts VALUES (30, '{"email": "y@example.com", "resetToken": {"createdAt": "2026-03-01T00:00:00Z"}}'),
                            (31, jsonb_build_object('resetToken', jsonb_build_object('createdAt', now())));
SELECT ttl_field_expire_now('accounts', 'resetToken.createdAt') AS changed;
SELECT id, doc ? 'resetToken' AS has_token FROM accounts WHERE id IN (30, 31) ORDER BY id;
SELECT ttl_field_expire_now('accounts', 'nothing.here');
SELECT ttl_field_expire_now('accounts', 'resetToken.createdAt', -1);

-- a table attached as a partition since brings a field TTL and a TTL index together: the field
-- TTL that would remove the per-row TTL field rows expire by is left alone (nothing removed)
CREATE TABLE stays (id int, created date, doc jsonb) PARTITION BY RANGE (created);
SELECT index_name FROM ttl_index_create('stays', 'doc.checkIn', interval '30 days', row_ttl_path => 'doc.meta.keepFor');
CREATE TABLE stays_2026 (id int, created date, doc jsonb);
SELECT ttl_field_create('stays_2026', 'doc.meta.at', interval '1 minute', remove => 'doc.meta');
INSERT INTO stays_2026 VALUES (1, '2026-06-01', '{"checkIn": "2026-06-01", "meta": {"at": "2020-01-01T00:00:00Z", "keepFor": 99999999}}');
ALTER TABLE stays ATTACH PARTITION stays_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
SELECT ttl_field_create('stays', 'doc.meta.at', interval '1 minute', remove => 'doc.meta');  -- refused on the tree
SELECT ttl_field_expire_now('stays_2026', 'doc.meta.at') AS changed;
SELECT doc ? 'meta' AS keeps_its_ttl FROM stays;
DROP TABLE stays;

-- ttl_stats has a row for each field TTL and table (only the background worker counts)
SELECT table_name, part FROM ttl_stats WHERE part LIKE 'field %' ORDER BY table_name::text, part;

-- a field TTL goes with its column, said at the drop (kept, its column name would pass to
-- the next column renamed on the table)
CREATE TABLE legacy (id int, extra jsonb);
SELECT ttl_field_create('legacy', 'extra.token.at', interval '1 hour');
ALTER TABLE legacy DROP COLUMN extra;
SELECT count(*) AS field_ttls_left FROM ttl_indexes WHERE table_name = 'legacy'::regclass;
DROP TABLE legacy;

-- ttl_field_drop drops the field TTL and its index; DROP TABLE drops the table's field TTLs
SELECT ttl_field_drop('accounts', 'otp.issuedAt');
SELECT count(*) AS index_left FROM pg_indexes WHERE indexname = 'accounts_ttl_field_idx';
SELECT path FROM ttl_indexes WHERE table_name = 'accounts'::regclass ORDER BY path;
DROP TABLE events;
SELECT count(*) AS field_ttls_of_events FROM jsonb_ttl_internal.ttl_field WHERE table_oid::oid NOT IN (SELECT oid FROM pg_class);

DROP VIEW accounts_view;
DROP TABLE accounts, before, audit, login, "we""ird"."ta ble";
DROP FUNCTION audit_it();
DROP SCHEMA "we""ird";
