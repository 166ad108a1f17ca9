-- The reference time never depends on the session's TimeZone: a string without an offset
-- is UTC. (This is why `(doc ->> 'ts')::timestamptz` cannot key an index.)
CREATE TEMP TABLE tz_inputs (input jsonb);
INSERT INTO tz_inputs VALUES ('"2019-05-27"'), ('"2019-05-27T21:20:00"'),
  ('"2019-05-27T21:20:00.123+01:30"'), ('1550165973'), ('{"$date": 1550165973000}');

-- epoch seconds are independent of how a timestamptz is displayed
SET TimeZone = 'America/New_York';
CREATE TEMP TABLE in_new_york AS
  SELECT input, extract(epoch FROM ttl_timestamp(input)) AS epoch FROM tz_inputs;
SET TimeZone = 'Asia/Kolkata';
CREATE TEMP TABLE in_kolkata AS
  SELECT input, extract(epoch FROM ttl_timestamp(input)) AS epoch FROM tz_inputs;

SELECT n.input, n.epoch AS new_york, k.epoch AS kolkata, n.epoch = k.epoch AS same
FROM in_new_york n JOIN in_kolkata k USING (input) ORDER BY n.epoch;

-- whereas the cast reads an offset-less string in the session's zone
SET TimeZone = 'America/New_York';
SELECT extract(epoch FROM '2019-05-27T21:20:00'::timestamptz) AS cast_new_york;
SET TimeZone = 'Asia/Kolkata';
SELECT extract(epoch FROM '2019-05-27T21:20:00'::timestamptz) AS cast_kolkata;
RESET TimeZone;
