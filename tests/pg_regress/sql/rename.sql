-- The catalog is keyed by regclass: ALTER TABLE RENAME and SET SCHEMA keep the TTL index
-- working, and pg_dump writes the table's current name.
\set SHOW_CONTEXT never
CREATE TABLE events (id int, doc jsonb);
SELECT index_name FROM ttl_index_create('events', 'ts', interval '1 hour');
INSERT INTO events VALUES (1, '{"ts": "2019-01-01"}'), (2, '{"ts": "2999-01-01"}');

ALTER TABLE events RENAME TO renamed_events;
SELECT table_name, index_name FROM ttl_indexes;
SELECT ttl_expire_now('renamed_events') AS removed;

CREATE SCHEMA archive;
ALTER TABLE renamed_events SET SCHEMA archive;
SELECT table_name, index_name FROM ttl_indexes;
INSERT INTO archive.renamed_events VALUES (3, '{"ts": "2019-01-01"}');
SELECT ttl_expire_now('archive.renamed_events') AS removed;
SELECT id FROM archive.renamed_events;

-- renaming the column the TTL index reads: the catalog follows it too (other columns do not
-- matter), and the deleter builds its statements on the new name
ALTER TABLE archive.renamed_events RENAME COLUMN id TO event_id;
ALTER TABLE archive.renamed_events RENAME COLUMN doc TO body;
SELECT table_name, column_name, path FROM ttl_indexes;
INSERT INTO archive.renamed_events VALUES (4, '{"ts": "2019-01-01"}');
SELECT ttl_expire_now('archive.renamed_events') AS removed;
SELECT event_id FROM archive.renamed_events;

-- renaming the index is fine too: the catalog follows the new name
ALTER INDEX archive.events_ttl_idx RENAME TO my_ttl_index;
SELECT table_name, index_name, index_size IS NOT NULL AS index_found FROM ttl_indexes;
ALTER TABLE archive.my_ttl_index RENAME TO my_renamed_ttl_index;
SELECT table_name, index_name FROM ttl_indexes;
-- and dropping it by its new name removes the entry
DROP INDEX archive.my_renamed_ttl_index;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
SELECT index_name FROM ttl_index_create('archive.renamed_events', 'ts', interval '1 hour');
DROP SCHEMA archive CASCADE;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
