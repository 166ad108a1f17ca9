-- A TTL index on a partitioned table covers every partition, current and future. Rows are
-- removed from each leaf partition (ctid is unique only within one), and ttl_stats has one row
-- per leaf.
\set SHOW_CONTEXT never
CREATE TABLE measurements (id bigint, region text, doc jsonb) PARTITION BY LIST (region);
CREATE TABLE measurements_eu PARTITION OF measurements FOR VALUES IN ('eu');
CREATE TABLE measurements_us PARTITION OF measurements FOR VALUES IN ('us')
  PARTITION BY RANGE (id);
CREATE TABLE measurements_us_1 PARTITION OF measurements_us FOR VALUES FROM (0) TO (1000);
SELECT index_name, table_name, column_name, path
FROM ttl_index_create('measurements', 'takenAt', interval '1 day');

-- a partition added later gets the index too
CREATE TABLE measurements_us_2 PARTITION OF measurements_us FOR VALUES FROM (1000) TO (2000);
SELECT c.relname AS partition, i.indexrelid::regclass AS index
FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
JOIN pg_index i ON i.indrelid = c.oid
WHERE c.relname LIKE 'measurements%' AND i.indpred IS NOT NULL ORDER BY 1;

INSERT INTO measurements VALUES
  (1,    'eu', '{"takenAt": "2019-01-01"}'), (2,    'eu', '{"takenAt": "2999-01-01"}'),
  (3,    'us', '{"takenAt": "2019-01-01"}'), (4,    'us', '{"takenAt": "2999-01-01"}'),
  (1003, 'us', '{"takenAt": "2019-01-01"}'), (1004, 'us', '{"takenAt": "2999-01-01"}');

-- the same ctid in several partitions: only expired rows go, from each leaf
SELECT tableoid::regclass, ctid, id FROM measurements ORDER BY id;
SELECT ttl_expire_now('measurements') AS removed;
SELECT tableoid::regclass, id FROM measurements ORDER BY id;

-- one ttl_stats row per leaf partition, ttl_table naming the table the TTL index is on
SELECT table_name, ttl_table, runs, oldest_expired FROM ttl_stats ORDER BY table_name::text;
SELECT table_name, index_name FROM ttl_indexes;

-- a foreign partition (here behind a wrapper with no handler, so any read of it fails) gets no
-- index and is never deleted from: ttl_expire_now passes it by, ttl_stats says it is skipped
CREATE FOREIGN DATA WRAPPER ttl_no_handler;
CREATE SERVER ttl_nowhere FOREIGN DATA WRAPPER ttl_no_handler;
CREATE FOREIGN TABLE measurements_far PARTITION OF measurements FOR VALUES IN ('far') SERVER ttl_nowhere;
INSERT INTO measurements_eu VALUES (5, 'eu', '{"takenAt": "2019-01-01"}');
SELECT ttl_expire_now('measurements') AS removed;
SELECT table_name, runs, skipped FROM ttl_stats WHERE table_name::text LIKE 'measurements_%' ORDER BY table_name::text;

-- dropping the partitioned table removes the TTL index entry
DROP TABLE measurements;
DROP SERVER ttl_nowhere;
DROP FOREIGN DATA WRAPPER ttl_no_handler;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
