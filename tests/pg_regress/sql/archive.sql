-- archive_to: expired rows move into another table instead of being lost. Each batch deletes
-- them and inserts them into the archive in one statement, so one transaction: a row is in the
-- table or in the archive, never in neither. The archive has the table's columns (by name);
-- columns of its own take their defaults.
\set SHOW_CONTEXT never

CREATE TABLE sessions (id bigint PRIMARY KEY, doc jsonb NOT NULL);
CREATE SCHEMA cold;
CREATE TABLE cold.sessions_archive (
    id          bigint,
    doc         jsonb,
    archived_at timestamptz NOT NULL DEFAULT now()
);
SELECT index_name, archive_to FROM ttl_index_create('sessions', 'lastSeen', interval '30 minutes',
                                                    archive_to => 'cold.sessions_archive');
SELECT table_name, archive_to FROM ttl_indexes;

-- 100 sessions: 60 idle since March (expired), 40 seen just now (not)
INSERT INTO sessions
SELECT i, jsonb_build_object('lastSeen', CASE WHEN i <= 60 THEN '2026-03-01T12:00:00Z'
                                              ELSE now()::text END, 'user', 'u' || i)
FROM generate_series(1, 100) i;

-- ttl_expire_now() moves the 60 expired rows: the same rows, the same documents
SELECT ttl_expire_now('sessions') AS moved;
SELECT (SELECT count(*) FROM sessions) AS kept, (SELECT count(*) FROM cold.sessions_archive) AS archived;
SELECT min(id), max(id), count(DISTINCT doc->>'user') AS users,
       count(archived_at) AS stamped  -- its own column: its default
FROM cold.sessions_archive;

-- the worker's batches do the same (one plain batch, then one by key range, run here)
INSERT INTO sessions
SELECT 200 + i, jsonb_build_object('lastSeen', '2026-03-02T08:00:00Z', 'user', 'w' || i)
FROM generate_series(1, 5) i;
SELECT jsonb_ttl_internal._ttl_worker_batch('sessions'::regclass, 3) AS moved;
SELECT jsonb_ttl_internal._ttl_worker_range_batch('sessions'::regclass, 100, '-infinity') AS moved;
SELECT count(*) FILTER (WHERE id > 200) AS archived_by_batches, count(*) AS archived
FROM cold.sessions_archive;
SELECT count(*) AS kept FROM sessions;

-- an archive that fails the statement fails the delete too: nothing leaves the table
CREATE FUNCTION refuse_archive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the archive is closed';
END
$$;
CREATE TRIGGER closed BEFORE INSERT ON cold.sessions_archive FOR EACH ROW EXECUTE FUNCTION refuse_archive();
INSERT INTO sessions VALUES (300, '{"lastSeen": "2026-03-03T08:00:00Z"}');
SELECT ttl_expire_now('sessions') AS moved;
SELECT count(*) AS still_here FROM sessions WHERE id = 300;
DROP TRIGGER closed ON cold.sessions_archive;
SELECT ttl_expire_now('sessions') AS moved;

-- the archive may be partitioned (by region, by month…); rows are routed to their partition
CREATE TABLE cold.by_region (id bigint, doc jsonb, archived_at timestamptz DEFAULT now())
    PARTITION BY LIST ((doc->>'region'));
CREATE TABLE cold.eu PARTITION OF cold.by_region FOR VALUES IN ('eu');
CREATE TABLE cold.elsewhere PARTITION OF cold.by_region DEFAULT;
SELECT archive_to FROM ttl_index_alter('sessions', archive_to => 'cold.by_region');
INSERT INTO sessions VALUES (400, '{"lastSeen": "2026-03-04T08:00:00Z", "region": "eu"}'),
                            (401, '{"lastSeen": "2026-03-04T08:00:00Z", "region": "us"}');
SELECT ttl_expire_now('sessions') AS moved;
SELECT tableoid::regclass AS partition, id FROM cold.by_region ORDER BY id;

-- '-' (no table) stops archiving: expired rows are deleted again
SELECT archive_to FROM ttl_index_alter('sessions', archive_to => '-');
INSERT INTO sessions VALUES (500, '{"lastSeen": "2026-03-05T08:00:00Z"}');
SELECT ttl_expire_now('sessions') AS deleted;
SELECT count(*) AS archived_500 FROM cold.sessions_archive WHERE id = 500;

-- what is refused, and why
CREATE TABLE cold.narrow (id bigint);
SELECT ttl_index_alter('sessions', archive_to => 'cold.narrow');
CREATE TABLE cold.mistyped (id bigint, doc int);
SELECT ttl_index_alter('sessions', archive_to => 'cold.mistyped');
CREATE TABLE cold.computed (id bigint, doc jsonb GENERATED ALWAYS AS ('{}') STORED);
SELECT ttl_index_alter('sessions', archive_to => 'cold.computed');
-- a column of the archive's own that no archived row can fill (NOT NULL, no default): every row
-- would fail alone, so it is the archive's fault, refused when named
CREATE TABLE cold.strict (id bigint, doc jsonb, reviewed_by text NOT NULL);
SELECT ttl_index_alter('sessions', archive_to => 'cold.strict');
CREATE VIEW cold.a_view AS SELECT * FROM cold.sessions_archive;
SELECT ttl_index_alter('sessions', archive_to => 'cold.a_view');
DROP VIEW cold.a_view;
SELECT ttl_index_alter('sessions', archive_to => 'sessions');
SELECT ttl_index_alter('sessions', archive_to => 'cold.nowhere');
-- an unlogged archive is refused: a crash would empty it, and the archived rows with it
CREATE UNLOGGED TABLE cold.scratch (id bigint, doc jsonb);
SELECT ttl_index_alter('sessions', archive_to => 'cold.scratch');
-- archives that lead back to the table are refused: rows would go round for ever
CREATE TABLE cold.second (id bigint, doc jsonb);
SELECT archive_to FROM ttl_index_create('cold.second', 'lastSeen', interval '1 day', archive_to => 'sessions');
SELECT ttl_index_alter('sessions', archive_to => 'cold.second');
SELECT ttl_index_drop('cold.second');
-- also through a partition: an archive that is a partition of a table archiving back
CREATE TABLE cold.tree (id bigint, doc jsonb) PARTITION BY LIST (id);
CREATE TABLE cold.leaf PARTITION OF cold.tree DEFAULT;
SELECT archive_to FROM ttl_index_create('cold.tree', 'lastSeen', interval '1 day', archive_to => 'sessions');
SELECT ttl_index_alter('sessions', archive_to => 'cold.leaf');
DROP TABLE cold.tree;
-- creating the same TTL index again with another archive, or none, is refused
SELECT (ttl_index_alter('sessions', archive_to => 'cold.sessions_archive')).archive_to;
SELECT ttl_index_create('sessions', 'lastSeen', interval '30 minutes', archive_to => 'cold.by_region');
SELECT ttl_index_create('sessions', 'lastSeen', interval '30 minutes', archive_to => '-');
SELECT is_newly_created FROM ttl_index_create('sessions', 'lastSeen', interval '30 minutes',
                                              archive_to => 'cold.sessions_archive');

-- the table's owner inserts into the archive: an owner who may not is refused
CREATE ROLE archive_owner;
ALTER TABLE sessions OWNER TO archive_owner;
SELECT ttl_index_alter('sessions', archive_to => 'cold.sessions_archive');
GRANT USAGE ON SCHEMA cold TO archive_owner;
GRANT INSERT ON cold.sessions_archive TO archive_owner;
SELECT archive_to FROM ttl_index_alter('sessions', archive_to => 'cold.sessions_archive');
-- INSERT revoked later: the batch fails whole, the rows stay
REVOKE INSERT ON cold.sessions_archive FROM archive_owner;
INSERT INTO sessions VALUES (600, '{"lastSeen": "2026-03-06T08:00:00Z"}');
SELECT ttl_expire_now('sessions') AS moved;
SELECT count(*) AS still_here FROM sessions WHERE id = 600;

-- the owner's search_path reaches no name of the batch's statement (its count is pg_catalog's):
-- one batch of the worker's, run here as the worker runs it, as the owner with their settings
GRANT INSERT ON cold.sessions_archive TO archive_owner;
CREATE SCHEMA evil;
GRANT USAGE ON SCHEMA evil TO archive_owner;
CREATE AGGREGATE evil.count(*) (sfunc = int8inc, stype = int8, initcond = '1000');
ALTER ROLE archive_owner SET search_path = evil, pg_catalog, public;
SELECT jsonb_ttl_internal._ttl_worker_batch('sessions'::regclass, 10) AS moved;
SELECT count(*) AS archived_600 FROM cold.sessions_archive WHERE id = 600;
ALTER ROLE archive_owner RESET search_path;
DROP SCHEMA evil CASCADE;

-- an archive with a deferred check: ttl_expire_now makes it immediate for its statements (a
-- check cannot be deferred inside them, which run as the table's owner)
GRANT INSERT ON cold.sessions_archive TO archive_owner;
CREATE TABLE cold.known (id bigint PRIMARY KEY);
INSERT INTO cold.known VALUES (700);
ALTER TABLE cold.sessions_archive ADD CONSTRAINT known_id FOREIGN KEY (id) REFERENCES cold.known
    DEFERRABLE INITIALLY DEFERRED NOT VALID;
INSERT INTO sessions VALUES (700, '{"lastSeen": "2026-03-07T08:00:00Z"}');
BEGIN;
SELECT ttl_expire_now('sessions') AS moved;
COMMIT;

-- the archive dropped: archive_to shows '-' (its OID may be reused), and nothing is deleted
-- until ttl_index_alter names another archive or none
DROP TABLE cold.sessions_archive;
SELECT archive_to FROM ttl_indexes WHERE table_name = 'sessions'::regclass;
INSERT INTO sessions VALUES (800, '{"lastSeen": "2026-03-08T08:00:00Z"}');
SELECT ttl_expire_now('sessions') AS moved;
SELECT count(*) AS still_here FROM sessions WHERE id = 800;
SELECT (ttl_index_alter('sessions', archive_to => '-')).archive_to;
SELECT ttl_expire_now('sessions') AS deleted;

-- partitions are dropped whole only without an archive (a dropped partition's rows would be lost)
CREATE TABLE logs (id bigint, doc jsonb, at timestamptz) PARTITION BY RANGE (at);
CREATE TABLE logs_2026_03 PARTITION OF logs FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
CREATE TABLE logs_archive (id bigint, doc jsonb, at timestamptz);
SELECT ttl_index_create('logs', 'at', interval '1 day', drop_partitions => 'drop',
                        archive_to => 'logs_archive');
SELECT drop_partitions, archive_to FROM ttl_index_create('logs', 'at', interval '1 day',
                        drop_partitions => 'detach', archive_to => 'logs_archive');
SELECT ttl_index_alter('logs', drop_partitions => 'drop');
-- together with archive_to => '-', which goes first
SELECT drop_partitions, archive_to FROM ttl_index_alter('logs', drop_partitions => 'drop', archive_to => '-');

-- names are quoted wherever they reach SQL: hostile table, schema and column names work as any
CREATE SCHEMA "Cold ""Storage""";
CREATE TABLE "we;ird" ("id""" bigint, "select" jsonb, "a b" text);
CREATE TABLE "Cold ""Storage"""."arch;ive" ("select" jsonb, "id""" bigint, "a b" text, kept_at timestamptz DEFAULT now());
SELECT archive_to FROM ttl_index_create('"we;ird"', 'select.at', 0, archive_to => '"Cold ""Storage"""."arch;ive"');
INSERT INTO "we;ird" VALUES (1, '{"at": "2026-03-01T00:00:00Z"}', 'x; DROP TABLE sessions; --');
SELECT ttl_expire_now('"we;ird"') AS moved;
SELECT "id""", "a b" FROM "Cold ""Storage"""."arch;ive";

-- only the table's owner sets its archive
CREATE ROLE archive_stranger;
SET ROLE archive_stranger;
SELECT ttl_index_alter('logs', archive_to => '-');
RESET ROLE;

DROP TABLE sessions, logs, logs_archive, "we;ird";
DROP SCHEMA "Cold ""Storage""" CASCADE;
DROP ROLE archive_stranger;
DROP SCHEMA cold CASCADE;
DROP FUNCTION refuse_archive();
DROP ROLE archive_owner;
