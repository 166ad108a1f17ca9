-- Dropping whole partitions (pg_partman / TimescaleDB retention): on a table range-partitioned
-- by exactly the TTL index's reference time, ttl_index_create(…, drop_partitions => 'drop')
-- lets the worker drop a partition once its upper bound plus expire_after has passed, instead
-- of deleting its rows one by one ('detach' detaches it instead, to archive it). Row deletes
-- go on for the other partitions; the default partition is never dropped. The worker does it
-- (tests/e2e/partitions.sh); ttl_expire_now() deletes rows only.
\set SHOW_CONTEXT never
CREATE TABLE events (id bigint, created_at timestamptz NOT NULL, doc jsonb)
  PARTITION BY RANGE (created_at);
CREATE TABLE events_2019 PARTITION OF events FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CREATE TABLE events_2999 PARTITION OF events FOR VALUES FROM ('2999-01-01') TO ('3000-01-01');
CREATE TABLE events_rest PARTITION OF events DEFAULT;
SELECT index_name, drop_partitions
FROM ttl_index_create('events', 'created_at', interval '30 days', drop_partitions => 'drop');
SELECT table_name, drop_partitions FROM ttl_indexes;
-- the same spec again is no change; off, detach and back with ttl_index_alter
SELECT is_newly_created FROM ttl_index_create('events', 'created_at', interval '30 days',
                                              drop_partitions => 'drop');
SELECT drop_partitions FROM ttl_index_alter('events', drop_partitions => 'detach');
SELECT drop_partitions FROM ttl_index_alter('events', drop_partitions => 'off');
SELECT drop_partitions FROM ttl_index_alter('events', drop_partitions => 'drop');
-- rows of the partitions not yet expired are deleted one by one, as ever
INSERT INTO events VALUES (1, now() - interval '40 days', '{}'), (2, now(), '{}');
SELECT ttl_expire_now('events');

-- partitioned by a document's reference time: the key must be the TTL index's expression
CREATE TABLE logs (doc jsonb NOT NULL) PARTITION BY RANGE (ttl_timestamp(doc -> 'at'));
CREATE TABLE logs_old PARTITION OF logs FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
SELECT drop_partitions FROM ttl_index_create('logs', 'at', 0, drop_partitions => 'detach');

-- refused: not partitioned, partitioned otherwise, or with a filter / a per-row TTL field
CREATE TABLE plain (created_at timestamptz);
SELECT ttl_index_create('plain', 'created_at', 0, drop_partitions => 'drop');
CREATE TABLE by_list (region text, created_at timestamptz) PARTITION BY LIST (region);
SELECT ttl_index_create('by_list', 'created_at', 0, drop_partitions => 'drop');
CREATE TABLE by_other (created_at timestamptz, updated_at timestamptz) PARTITION BY RANGE (updated_at);
SELECT ttl_index_create('by_other', 'created_at', 0, drop_partitions => 'drop');
CREATE TABLE by_two (a timestamptz, b int) PARTITION BY RANGE (a, b);
SELECT ttl_index_create('by_two', 'a', 0, drop_partitions => 'drop');
SELECT ttl_index_drop('events');
SELECT ttl_index_create('events', 'created_at', 0, drop_partitions => 'drop',
                        filter => $$doc ? 'temporary'$$);
SELECT ttl_index_create('events', 'doc.at', 0, drop_partitions => 'drop');
SELECT ttl_index_create('events', 'created_at', 0, drop_partitions => 'sometimes');
SELECT count(*) AS ttl_indexes FROM ttl_indexes WHERE table_name = 'events'::regclass;

DROP TABLE events, logs, plain, by_list, by_other, by_two;
