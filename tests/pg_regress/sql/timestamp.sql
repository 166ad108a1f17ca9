-- ttl_timestamp(jsonb) reads the point in time a JSON value holds.
-- Every result below is shown in UTC; anything that is not a point in time gives NULL,
-- never an error, so the function can key an index.
SET TimeZone = 'UTC';

SELECT input, ttl_timestamp(input::jsonb) AS reference_time
FROM (VALUES
  -- JSON numbers: Unix time in seconds, fractions kept to the microsecond
  ('1550165973'),
  ('1550165973.123456'),
  ('0'),
  ('-1'),                                  -- negative: never expires
  ('1e30'),                                -- beyond PostgreSQL's range
  -- ISO-8601 strings: no offset means UTC
  ('"2019-05-27"'),
  ('"2019-05-27T21:20:00"'),
  ('"2019-05-27T21:20:00Z"'),
  ('"2019-05-27T21:20:00.123Z"'),
  ('"2019-05-27T21:20:00.123+01:30"'),
  ('"2019-05-27T21:20:00.123-02:00"'),
  ('"2019-05-27 21:20"'),
  ('"2019-05-27T21:20:00.1234567Z"'),      -- rounded to the microsecond
  -- impossible or malformed dates
  ('"2019-02-30"'),
  ('"2019-05-27T24:00:00"'),
  ('"2019-05-27T23:59:60"'),
  ('" 2019-05-27"'),
  ('"1550165973"'),                        -- a number in a string is not a date
  ('"yesterday"'),
  -- arrays: the earliest element that parses (MongoDB)
  ('["2019-05-27", 1550165973, "junk"]'),
  ('["junk", true]'),
  -- MongoDB Extended JSON dates
  ('{"$date": "2019-02-14T17:39:33.000Z"}'),
  ('{"$date": 1550165973000}'),
  ('{"$date": {"$numberLong": "1550165973000"}}'),
  ('{"$date": 1550165973000, "other": 1}'),
  -- everything else
  ('true'),
  ('null'),
  ('{"a": 1}')
) AS cases(input);

-- JSON numbers in milliseconds
SELECT ttl_timestamp('1550165973123', 'ms'),
       ttl_timestamp('[1550165973123, "2030-01-01"]', 'ms');

-- a unit other than 's' or 'ms' is an error
SELECT ttl_timestamp('1550165973', 'us');

-- STRICT: NULL in, NULL out
SELECT ttl_timestamp(NULL::jsonb) IS NULL AS null_in_null_out;

-- ttl_is_datestring tells whether a string is a date ttl_timestamp accepts (ArangoDB's IS_DATESTRING)
SELECT input, ttl_is_datestring(input)
FROM (VALUES ('2019-05-27'), ('2019-05-27T21:20:00.123+01:30'), ('2019-02-29'),
             ('2020-02-29'), ('2019-05-27T21:20:00 Z'), ('')) AS cases(input);

-- all three are IMMUTABLE, STRICT and PARALLEL SAFE
SELECT p.oid::regprocedure, provolatile, proisstrict, proparallel
FROM pg_proc p WHERE proname IN ('ttl_timestamp', 'ttl_is_datestring') ORDER BY p.oid::regprocedure::text;
