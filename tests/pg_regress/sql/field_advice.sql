-- Field TTLs get the advice TTL indexes get: ttl_field_create reads the table's first 1,000
-- documents (as the table's owner) and says, with the fix in the HINT, when its field TTL would
-- remove nothing or the wrong thing. For a one-time code that never expires, that is a security
-- failure, not a slow purge. None of them stops the creation; each is a NOTICE (a WARNING where
-- every field would go at once).
\set SHOW_CONTEXT never
CREATE TABLE login (id int PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO login
SELECT i, jsonb_build_object('email', 'user' || i || '@example.com',
          'otp', jsonb_build_object('code', lpad(i::text, 6, '0'), 'at', 1764633600 + i))
FROM generate_series(1, 20) i;

-- a path no document has (the documents hold otp.at, not otp.issuedAt)
SELECT ttl_field_create('login', 'otp.issuedAt', interval '5 minutes');
SELECT ttl_field_drop('login', 'otp.issuedAt');

-- a JSONPath
SELECT ttl_field_create('login', '$.otp.at', interval '5 minutes');
SELECT ttl_field_drop('login', '$.otp.at');

-- the right path: no advice
SELECT ttl_field_create('login', 'otp.at', interval '5 minutes');
SELECT ttl_field_drop('login', 'otp.at');

-- dates in epoch milliseconds, read as seconds: they would expire in the year 57000
UPDATE login SET doc = jsonb_set(doc, '{otp,at}', to_jsonb((doc #>> '{otp,at}')::bigint * 1000));
SELECT ttl_field_create('login', 'otp.at', interval '5 minutes');
SELECT ttl_field_drop('login', 'otp.at');
SELECT ttl_field_create('login', 'otp.at', interval '5 minutes', numeric_unit => 'ms');
SELECT ttl_field_drop('login', 'otp.at');

-- local wall times with no offset (a naive datetime): a field TTL reads them as UTC
UPDATE login SET doc = jsonb_set(doc, '{otp,at}', to_jsonb('2026-12-01T19:05:00'::text));
SELECT ttl_field_create('login', 'otp.at', interval '5 minutes');
SELECT ttl_field_drop('login', 'otp.at');

-- expire_after as TTL indexes take it: a number of seconds, or as typed, with a HINT on a typo
SELECT ttl_field_create('login', 'otp.at', 300);
SELECT ttl_field_alter('login', 'otp.at', 600);
SELECT ttl_field_alter('login', 'otp.at', '15 minutes');
SELECT expire_after FROM ttl_indexes WHERE path = 'otp.at';
SELECT ttl_field_alter('login', 'otp.at', '10 minuts');
SELECT ttl_field_create('login', 'otp.code', '10 minuts');
SELECT ttl_field_drop('login', 'otp.at');
DROP TABLE login;
