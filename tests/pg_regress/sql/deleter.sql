-- The deleter removes expired rows only: a row is expired when now() > reference + expire_after.
-- ttl_expire_now(tbl, max_rows) runs it in this session, as the caller, inside the caller's
-- transaction, in statements through the TTL index.
\set SHOW_CONTEXT never
CREATE TABLE events (label text, doc jsonb);
SELECT index_name FROM ttl_index_create('events', 'at', interval '1 hour');
INSERT INTO events VALUES
  ('just expired',      jsonb_build_object('at', now() - interval '1 hour 1 second')),
  ('long expired',      jsonb_build_object('at', '2019-02-14T17:39:33Z')),
  ('expired, epoch',    jsonb_build_object('at', extract(epoch FROM now() - interval '2 hours'))),
  ('not yet expired',   jsonb_build_object('at', now() - interval '59 minutes')),
  ('future',            jsonb_build_object('at', now() + interval '1 day')),
  ('no date',           '{"other": 1}'),
  ('invalid date',      '{"at": "2019-02-30"}'),
  ('negative number',   '{"at": -5}'),
  ('null',              '{"at": null}');

-- inside a transaction: the deletes are part of it and roll back with it
BEGIN;
SELECT ttl_expire_now('events') AS removed;
SELECT label FROM events ORDER BY label;
ROLLBACK;
SELECT count(*) AS after_rollback FROM events;

-- max_rows caps one call; the oldest rows go first
SELECT ttl_expire_now('events', 1) AS removed;
SELECT label FROM events WHERE label LIKE '%expired%' ORDER BY label;
SELECT ttl_expire_now('events', 0) AS removed;
SELECT ttl_expire_now() AS removed;
SELECT label FROM events ORDER BY label;

-- a batch is one DELETE through the TTL index, picking rows with FOR UPDATE SKIP LOCKED: the
-- lock re-checks expiry on the newest version of each row and holds the row as it was seen, so
-- the DELETE tests nothing again. Planned as the worker plans it (a statement that starts with
-- the comment below gets no sequential scan, bitmap scan or sort): a forward scan of the TTL
-- index, oldest first, with no ORDER BY to compute every row's reference time once more
INSERT INTO events SELECT 'bulk', jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 2500) g;
ANALYZE events;
/* jsonb_ttl batch */ EXPLAIN (COSTS OFF)
DELETE FROM ONLY public.events WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM ONLY public.events
  WHERE public.ttl_timestamp((doc -> 'at'::text)) < now() - interval '1 hour'
  LIMIT 1000 FOR UPDATE SKIP LOCKED));

-- the worker's batches take ranges of the TTL index's keys instead, each from where the one
-- before ended to the key after its rows (read from the index first): the three comparisons of
-- the key are the index scan's conditions, so no row is filtered, and no document parsed, again
/* jsonb_ttl batch */ EXPLAIN (COSTS OFF)
DELETE FROM ONLY public.events
WHERE public.ttl_timestamp((doc -> 'at'::text)) >= '2019-02-14 17:39:33+00'
  AND public.ttl_timestamp((doc -> 'at'::text)) < '2019-02-14 18:00:00+00'
  AND public.ttl_timestamp((doc -> 'at'::text)) < now() - interval '1 hour';
-- the worker prepares its batches once, with the generic plan (CURSOR_OPT_GENERIC_PLAN): no
-- batch is planned again, whatever its range, and the plan is the same index scan
SET plan_cache_mode = force_generic_plan;
/* jsonb_ttl batch */ PREPARE range_batch (interval, timestamptz, timestamptz) AS
DELETE FROM ONLY public.events
WHERE public.ttl_timestamp((doc -> 'at'::text)) >= $2
  AND public.ttl_timestamp((doc -> 'at'::text)) < $3
  AND public.ttl_timestamp((doc -> 'at'::text)) < now() - $1;
EXPLAIN (COSTS OFF) EXECUTE range_batch('1 hour', '-infinity', 'infinity');
DEALLOCATE range_batch;
RESET plan_cache_mode;

-- one call runs statements of 1000 rows (the worker's first batch; jsonb_ttl.batch_size if
-- smaller) first, then twice as many each time (up to 1M): within one transaction each
-- statement walks past the index entries of every row the
-- earlier ones removed, so fixed-size statements would cost n²/batch_size for n rows. After a
-- statement that comes back short, one more confirms nothing is left (the 0 below; see the
-- trigger case further down for why)
CREATE TABLE statement_sizes (at serial, n bigint);
CREATE FUNCTION record_statement() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO statement_sizes (n) SELECT count(*) FROM gone; RETURN NULL; END $$;
CREATE TRIGGER record_statement AFTER DELETE ON events REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION record_statement();
SHOW jsonb_ttl.batch_size;
SELECT ttl_expire_now('events') AS removed;
SELECT n AS rows_per_statement FROM statement_sizes ORDER BY at;
TRUNCATE statement_sizes;
INSERT INTO events SELECT 'bulk', jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 10000) g;
SELECT ttl_expire_now('events', 6500) AS removed;
SELECT n AS rows_per_statement FROM statement_sizes ORDER BY at;
SELECT count(*) AS bulk_left FROM events WHERE label = 'bulk';
SELECT ttl_expire_now('events') AS removed;
DROP TRIGGER record_statement ON events;
DROP TABLE statement_sizes;
DROP FUNCTION record_statement();

-- a DELETE trigger sees the caller of ttl_expire_now
CREATE TABLE deleted_by (label text, who name);
CREATE FUNCTION record_deleter() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO deleted_by VALUES (OLD.label, current_user); RETURN OLD; END $$;
CREATE TRIGGER record_deleter BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION record_deleter();
INSERT INTO events VALUES ('triggered', '{"at": "2019-01-01"}');
SELECT ttl_expire_now('events') AS removed;
SELECT label, who = current_user AS by_caller FROM deleted_by;

-- a trigger that skips the delete (returns NULL) leaves the row; it is not counted, and the
-- expired rows behind it in the index still go, in the same call: a batch that comes back
-- short is followed by one that also counts the rows it picked, which tells a drained table
-- from rows kept at the head of the index
CREATE OR REPLACE FUNCTION record_deleter() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN IF OLD.label = 'kept by trigger' THEN RETURN NULL; END IF; RETURN OLD; END $$;
INSERT INTO events VALUES ('kept by trigger', '{"at": "2018-01-01"}');
INSERT INTO events SELECT 'bulk', jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 2500) g;
SELECT ttl_expire_now('events') AS removed;
SELECT label, count(*) FROM events GROUP BY label ORDER BY label;
-- a table with a DELETE rule (here an audit copy, DO ALSO) is purged like any other
CREATE TABLE audited (doc jsonb);
CREATE TABLE audit (doc jsonb);
CREATE RULE keep_copy AS ON DELETE TO audited DO ALSO INSERT INTO audit VALUES (OLD.doc);
SELECT FROM ttl_index_create('audited', 'at', 0);
INSERT INTO audited SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 1500) g;
SELECT ttl_expire_now('audited') AS removed;
SELECT (SELECT count(*) FROM audited) AS left, (SELECT count(*) FROM audit) AS copied;
DROP TABLE audited, audit;

DROP TABLE events, deleted_by;
DROP FUNCTION record_deleter();
