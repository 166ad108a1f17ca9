-- Helpers for make bench: documents of ~200 bytes with an ISO-8601 creationDate.
CREATE EXTENSION IF NOT EXISTS jsonb_ttl;

CREATE FUNCTION bench_doc(g bigint, at timestamptz) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'creationDate', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'user', 'user-' || (g % 1000),
    'session', md5(g::text),
    'payload', repeat('x', 60),
    'n', g)
$$;

-- A fresh table of n documents, the first `expired` of them created two days ago (expired
-- under a 1-hour TTL), the rest in the future; with its TTL index (1 hour).
CREATE PROCEDURE bench_table(name text, n bigint, expired bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', name);
  EXECUTE format('CREATE TABLE %I (id bigserial PRIMARY KEY, doc jsonb NOT NULL)', name);
  EXECUTE format($q$INSERT INTO %I (doc)
                    SELECT bench_doc(g, CASE WHEN g <= $2 THEN now() - interval '2 days' + g * interval '1 ms'
                                             ELSE now() + g * interval '1 ms' END)
                    FROM generate_series(1, $1) g$q$, name) USING n, expired;
  PERFORM ttl_index_create(name, 'creationDate', interval '1 hour');
  EXECUTE format('ANALYZE %I', name);
END $$;

-- What a user writes by hand: batches through the same expression index, a commit each.
CREATE PROCEDURE purge_by_hand(tbl regclass, batch int)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    EXECUTE format($q$DELETE FROM %s WHERE id IN (
                        SELECT id FROM %s WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '1 hour'
                        ORDER BY ttl_timestamp(doc -> 'creationDate') LIMIT $1)$q$, tbl, tbl) USING batch;
    GET DIAGNOSTICS n = ROW_COUNT;
    COMMIT;
    EXIT WHEN n < batch;
  END LOOP;
END $$;
