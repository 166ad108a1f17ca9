-- What common writers put in a document or a text column, and the instant ttl_timestamp reads.
-- Every row must read the same instant, 2026-11-23 10:36:13.123456 UTC (to the precision the
-- writer keeps); "writes" is the text each one produces for it.
SET TimeZone = 'UTC';
CREATE TABLE writers (writer text, writes text);
INSERT INTO writers VALUES
  ('PostgreSQL to_jsonb(timestamptz)',         to_jsonb(timestamptz '2026-11-23 10:36:13.123456+00') #>> '{}'),
  ('PostgreSQL timestamptz::text (UTC)',       (timestamptz '2026-11-23 10:36:13.123456+00')::text),
  ('PostgreSQL json_build_object(now()::text)', json_build_object('at', (timestamptz '2026-11-23 10:36:13.123456+00')::text) ->> 'at'),
  ('Python str(aware datetime)',               '2026-11-23 10:36:13.123456+00:00'),
  ('Python aware isoformat()',                 '2026-11-23T10:36:13.123456+00:00'),
  ('Python naive isoformat() (read as UTC)',   '2026-11-23T10:36:13.123456'),
  ('JavaScript toISOString()',                 '2026-11-23T10:36:13.123Z'),
  ('Java Instant.toString()',                  '2026-11-23T10:36:13.123456789Z'),
  ('Java OffsetDateTime.toString()',           '2026-11-23T11:36:13.123456+01:00'),
  ('Go time.RFC3339Nano',                      '2026-11-23T10:36:13.123456Z'),
  ('PostgreSQL timestamptz::text (-08)',       '2026-11-23 02:36:13.123456-08'),
  ('PostgreSQL timestamptz::text (+05:30)',    '2026-11-23 16:06:13.123456+05:30');
SELECT writer, writes,
       ttl_timestamp(to_jsonb(writes)) AS read_as,
       date_trunc('millisecond', ttl_timestamp(to_jsonb(writes))) = timestamptz '2026-11-23 10:36:13.123+00' AS same_instant
FROM writers ORDER BY writer;

-- a text column is read with the same grammar (ttl_text_timestamp)
SELECT writer, jsonb_ttl_internal.ttl_text_timestamp(writes) = ttl_timestamp(to_jsonb(writes)) AS same
FROM writers ORDER BY writer;

-- what is not a date stays NULL, never an error
SELECT s AS text, jsonb_ttl_internal.ttl_text_timestamp(s) AS read_as
FROM unnest(ARRAY['garbage', '2026-11-23 10:36:13+1', '2026-02-30', '1550165973', '']) s;
DROP TABLE writers;
