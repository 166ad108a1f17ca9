-- ttl_timestamp is IMMUTABLE, so it can key an expression index, and a range condition on it
-- is an index scan.
CREATE TABLE docs (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO docs (doc)
SELECT jsonb_build_object('ts', to_char(timestamptz '2999-01-01' + g * interval '1 minute',
                                        'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM generate_series(1, 5000) g;                           -- far future
INSERT INTO docs (doc)
SELECT jsonb_build_object('ts', 1550165973 + g) FROM generate_series(1, 20) g;  -- 2019
INSERT INTO docs (doc) VALUES ('{"ts": "not a date"}'), ('{}');

CREATE INDEX docs_ts ON docs (ttl_timestamp(doc -> 'ts'));
ANALYZE docs;

EXPLAIN (COSTS OFF)
SELECT id FROM docs WHERE ttl_timestamp(doc -> 'ts') < now();
SELECT count(*) FROM docs WHERE ttl_timestamp(doc -> 'ts') < now();

-- rows without a date are NULL in the index and never match a range
SELECT count(*) AS dateless FROM docs WHERE ttl_timestamp(doc -> 'ts') IS NULL;
DROP TABLE docs;
