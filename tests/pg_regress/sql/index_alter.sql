-- ttl_index_alter(tbl, expire_after) changes when rows expire. The index keys on the reference
-- time, not on reference + expire_after, so this is a catalog update: no index rebuild.
\set SHOW_CONTEXT never
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO events (doc)
SELECT jsonb_build_object('creationDate', now() - g * interval '1 minute') FROM generate_series(1, 100) g;
SELECT index_name FROM ttl_index_create('events', 'creationDate', interval '1 day');
CREATE TEMP TABLE before AS
  SELECT c.oid, c.relfilenode FROM pg_class c WHERE c.relname = 'events_ttl_idx';

SELECT * FROM ttl_index_alter('events', interval '30 minutes');

-- same index, same storage: nothing was rebuilt
SELECT c.oid = b.oid AS same_oid, c.relfilenode = b.relfilenode AS same_relfilenode
FROM pg_class c, before b WHERE c.relname = 'events_ttl_idx';

-- the new expiry takes effect at once: the rows 30 minutes old or older go
SELECT ttl_expire_now('events') AS removed;
SELECT count(*) AS kept FROM events;
-- expire_after in seconds
SELECT * FROM ttl_index_alter('events', 90);

-- alter where there is no TTL index, or with a bad expire_after
CREATE TABLE plain_table (doc jsonb);
SELECT * FROM ttl_index_alter('plain_table', interval '1 day');
SELECT * FROM ttl_index_alter('events', interval '-1 day');
SELECT * FROM ttl_index_alter('events', NULL::interval);
SELECT expire_after FROM ttl_indexes WHERE table_name = 'events'::regclass;
DROP TABLE events, plain_table;
