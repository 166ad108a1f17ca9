-- Helpers for make bench: documents of ~200 bytes with an ISO-8601 creationDate.
CREATE EXTENSION IF NOT EXISTS jsonb_ttl;

\ir doc.sql

-- The drain clock: every DELETE statement on a bench table (a batch of the worker or of the hand
-- loop, or the naive DELETE) records when its transaction began (the first one's is kept) and
-- when it ended, so a drain is timed from its first batch to its last, by the server's clock,
-- whoever runs it. Unlogged: it adds no WAL to the figures. Both sides pay the same trigger.
CREATE UNLOGGED TABLE bench_clock (tbl text PRIMARY KEY, first_batch timestamptz, last_batch timestamptz);
CREATE FUNCTION bench_clock_tick() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.bench_clock VALUES (TG_TABLE_NAME, now(), clock_timestamp())
    ON CONFLICT (tbl) DO UPDATE SET last_batch = excluded.last_batch;
  RETURN NULL;
END $$;

-- Milliseconds from the first batch's start to the last batch's end on table `name`.
CREATE FUNCTION bench_drain_ms(name text) RETURNS bigint LANGUAGE sql AS $$
  SELECT round(extract(epoch FROM last_batch - first_batch) * 1000) FROM bench_clock WHERE tbl = name
$$;

-- A fresh table of n documents, `expired` of them created two days ago (expired under a 1-hour
-- TTL), the rest in the future; with its TTL index (1 hour). Layout 'contiguous': the expired
-- rows come first in the heap; 'interleaved': expired and live rows alternate (until the
-- expired ones run out), as on a table written continuously.
CREATE PROCEDURE bench_table(name text, n bigint, expired bigint, layout text DEFAULT 'contiguous')
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', name);
  EXECUTE format('CREATE TABLE %I (id bigserial PRIMARY KEY, doc jsonb NOT NULL)', name);
  EXECUTE format($q$INSERT INTO %I (doc)
                    SELECT bench_doc(g, CASE WHEN is_expired THEN now() - interval '2 days' + g * interval '1 ms'
                                             ELSE now() + g * interval '1 ms' END)
                    FROM generate_series(1, $1) g,
                         LATERAL (SELECT CASE $3 WHEN 'interleaved' THEN mod(g, 2) = 0 AND g / 2 <= $2
                                                 ELSE g <= $2 END AS is_expired) e$q$, name)
    USING n, expired, layout;
  PERFORM ttl_index_create(name, 'creationDate', interval '1 hour');
  EXECUTE format('CREATE TRIGGER bench_clock AFTER DELETE ON %I FOR EACH STATEMENT EXECUTE FUNCTION bench_clock_tick()', name);
  DELETE FROM bench_clock WHERE tbl = name;
  EXECUTE format('ANALYZE %I', name);
END $$;

-- The loop a careful DBA writes (the shape issue 12 measured the worker against, the worker's
-- own statement in 0.2.0 before it was tuned): pick oldest first through the same index,
-- FOR UPDATE SKIP LOCKED, delete by ctid, expiry re-checked; a COMMIT per batch.
CREATE PROCEDURE purge_by_hand(tbl regclass, batch int)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    EXECUTE format($q$DELETE FROM %s WHERE ctid = ANY (ARRAY(
                        SELECT ctid FROM %s WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'
                        ORDER BY ttl_timestamp(doc -> 'creationDate') LIMIT $1 FOR UPDATE SKIP LOCKED))
                      AND ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'$q$, tbl, tbl)
      USING batch;
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;

-- archive_to's baseline: the hand loop above, its rows moved into an archive table in the same
-- statement (WITH gone AS (DELETE … RETURNING …) INSERT INTO archive …), a COMMIT per batch.
CREATE PROCEDURE archive_by_hand(tbl regclass, archive regclass, batch int)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    EXECUTE format($q$WITH gone AS (
                        DELETE FROM %s WHERE ctid = ANY (ARRAY(
                          SELECT ctid FROM %s WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'
                          ORDER BY ttl_timestamp(doc -> 'creationDate') LIMIT $1 FOR UPDATE SKIP LOCKED))
                        AND ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'
                        RETURNING id, doc)
                      INSERT INTO %s (id, doc) SELECT id, doc FROM gone$q$, tbl, tbl, archive)
      USING batch;
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;

-- A fresh table of n documents for a field TTL (docs/field_ttl.md): each has a one-time code
-- (otp: {code, at}), `expired` of them issued two days ago (expired under a 1-hour field TTL),
-- interleaved with the others, issued in the future; the field TTL on otp.at (its index), no
-- TTL index. Its bench_clock ticks after each UPDATE statement.
CREATE PROCEDURE bench_field_table(name text, n bigint, expired bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', name);
  EXECUTE format('CREATE TABLE %I (id bigserial PRIMARY KEY, doc jsonb NOT NULL)', name);
  EXECUTE format($q$INSERT INTO %I (doc)
                    SELECT bench_doc(g, now() + g * interval '1 ms')
                           || jsonb_build_object('otp', jsonb_build_object('code', lpad((g %% 1000000)::text, 6, '0'),
                                'at', CASE WHEN mod(g, 2) = 0 AND g / 2 <= $2 THEN now() - interval '2 days' + g * interval '1 ms'
                                           ELSE now() + g * interval '1 ms' END))
                    FROM generate_series(1, $1) g$q$, name)
    USING n, expired;
  PERFORM ttl_field_create(name, 'otp.at', interval '1 hour');
  EXECUTE format('CREATE TRIGGER bench_clock AFTER UPDATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION bench_clock_tick()', name);
  DELETE FROM bench_clock WHERE tbl = name;
  EXECUTE format('ANALYZE %I', name);
END $$;

-- The field TTL's baseline: the hand loop a DBA writes to expire a field, the same UPDATE the
-- worker runs (doc #- '{otp}'), picked oldest first through the same index, FOR UPDATE SKIP
-- LOCKED, expiry re-checked; a COMMIT per batch.
CREATE PROCEDURE field_by_hand(tbl regclass, batch int)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    EXECUTE format($q$UPDATE %s SET doc = doc #- '{otp}' WHERE ctid = ANY (ARRAY(
                        SELECT ctid FROM %s WHERE ttl_timestamp(doc -> 'otp' -> 'at') < now() - interval '1 hour'
                        ORDER BY ttl_timestamp(doc -> 'otp' -> 'at') LIMIT $1 FOR UPDATE SKIP LOCKED))
                      AND ttl_timestamp(doc -> 'otp' -> 'at') < now() - interval '1 hour'$q$, tbl, tbl)
      USING batch;
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;

-- The same loop running the worker's statement exactly as it is now when no row is busy (no
-- ORDER BY: the forward index scan is oldest first; no row lock on the pick: the DELETE tests
-- expiry again), under the worker's planner pins, which that statement needs to stay on the
-- index, and its lock_timeout. (The worker runs a batch that times out on a busy row again
-- with FOR UPDATE SKIP LOCKED; nothing is busy here, and an EXCEPTION block would add a
-- subtransaction to every batch that the worker does not pay.) What is left between the two is
-- the worker's own per-batch work.
CREATE PROCEDURE purge_like_worker(tbl regclass, batch int)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', false), set_config('enable_bitmapscan', 'off', false),
          set_config('enable_sort', 'off', false), set_config('lock_timeout', '100ms', false);
  LOOP
    EXECUTE format($q$DELETE FROM %s WHERE ctid = ANY (ARRAY(
                        SELECT ctid FROM %s WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'
                        LIMIT $1))
                      AND ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'$q$, tbl, tbl)
      USING batch;
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;

-- Dropping whole partitions: a table range-partitioned by day on created_at, with `parts` old
-- partitions of `per_part` rows each (expired under a 1-day TTL: a week and more old) and a
-- current one of `live` rows; its TTL index on created_at (1 day), dropping partitions when
-- `drop_them`. Each leaf has the drain clock (row deletes run per leaf).
CREATE PROCEDURE bench_partitioned(name text, parts int, per_part bigint, live bigint, drop_them boolean)
LANGUAGE plpgsql AS $$
DECLARE
  day timestamptz := date_trunc('day', now()) - interval '7 days';
  leaf text;
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', name);
  EXECUTE format('CREATE TABLE %I (id bigserial, created_at timestamptz NOT NULL, doc jsonb NOT NULL) PARTITION BY RANGE (created_at)', name);
  FOR i IN 1..parts LOOP
    leaf := format('%s_old_%s', name, i);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', leaf, name,
                   day - i * interval '1 day', day - (i - 1) * interval '1 day');
    EXECUTE format('INSERT INTO %I (created_at, doc) SELECT t, bench_doc(g, t) FROM generate_series(1, $1) g,
                    LATERAL (SELECT %L::timestamptz + g * interval ''1 ms'') c(t)', leaf, day - i * interval '1 day')
      USING per_part;
  END LOOP;
  leaf := name || '_current';
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', leaf, name, day, 'infinity');
  EXECUTE format('INSERT INTO %I (created_at, doc) SELECT now() + g * interval ''1 ms'', bench_doc(g, now()) FROM generate_series(1, $1) g', leaf)
    USING live;
  PERFORM ttl_index_create(name, 'created_at', interval '1 day',
                           drop_partitions => CASE WHEN drop_them THEN 'drop' ELSE 'off' END);
  FOR leaf IN SELECT relid::regclass::text FROM pg_partition_tree(name) WHERE isleaf LOOP
    EXECUTE format('CREATE TRIGGER bench_clock AFTER DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION bench_clock_tick()', leaf);
  END LOOP;
  DELETE FROM bench_clock;
  EXECUTE format('ANALYZE %I', name);
END $$;

-- The drop clock: each DROP TABLE records its transaction's start (the first one's is kept) and
-- its end, as the drain clock does for DELETE statements, under the name 'drops'.
CREATE FUNCTION bench_drop_start() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.bench_clock VALUES ('drops', now(), clock_timestamp()) ON CONFLICT (tbl) DO NOTHING;
END $$;
CREATE FUNCTION bench_drop_end() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE public.bench_clock SET last_batch = clock_timestamp() WHERE tbl = 'drops';
END $$;
CREATE EVENT TRIGGER bench_drop_start ON ddl_command_start WHEN TAG IN ('DROP TABLE') EXECUTE FUNCTION bench_drop_start();
CREATE EVENT TRIGGER bench_drop_end ON ddl_command_end WHEN TAG IN ('DROP TABLE') EXECUTE FUNCTION bench_drop_end();

-- Milliseconds from the first batch (or drop) to the last, over every clock.
CREATE FUNCTION bench_span_ms() RETURNS bigint LANGUAGE sql AS $$
  SELECT round(extract(epoch FROM max(last_batch) - min(first_batch)) * 1000) FROM bench_clock
$$;
