-- What a run of ttl_purge() visits, and under what limits: the caller's tables (their indexes
-- recorded again where they changed), each table's parts with their state, and whether a part
-- is skipped (paused, outside its delete window), how large its batches may be and how fast it
-- may go. 50_purge.sql runs the batches.

-- Whether the caller purges a table: it owns it, or has its owner's privileges and is no
-- superuser (see the top of 50_purge.sql).
CREATE FUNCTION jsonb_ttl_internal._ttl_may_purge(tbl oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT c.relowner OPERATOR(pg_catalog.=) r.oid
                            OR (NOT r.rolsuper AND pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE'))
                     FROM pg_catalog.pg_class c, pg_catalog.pg_roles r
                     WHERE c.oid OPERATOR(pg_catalog.=) tbl AND r.rolname OPERATOR(pg_catalog.=) CURRENT_USER), false)
$$;

-- The safety brake, once for each backlog (until a run drains it, or an alter changes what
-- expires): when more than max_table_fraction of a table of at least brake_min_rows rows (the
-- planner's estimate) is expired at once, the TTL index is paused (paused_by 'brake') and
-- nothing goes until ttl_index_resume(). Returns whether it held.
CREATE FUNCTION jsonb_ttl_internal._ttl_brake(tbl regclass, part text, max_table_fraction double precision,
                                              brake_min_rows double precision, lock_timeout text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
    counted boolean;
    table_rows double precision;
    lim bigint;
    expired record;
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', lock_timeout, true);  -- until this function returns
    SELECT * INTO t FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl FOR UPDATE;
    SELECT s.backlog_counted INTO counted FROM jsonb_ttl_internal.ttl_state s
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_brake.part;
    IF NOT FOUND OR t.paused_at IS NOT NULL OR t.brake_released OR counted OR max_table_fraction OPERATOR(pg_catalog.>=) 1 THEN
        RETURN false;
    END IF;
    table_rows := jsonb_ttl_internal._ttl_table_rows(tbl);
    IF table_rows OPERATOR(pg_catalog.>=) brake_min_rows THEN
        lim := pg_catalog.floor(max_table_fraction OPERATOR(pg_catalog.*) table_rows)::bigint;
        -- counted through the index, stopping one past the limit
        expired := jsonb_ttl_internal._ttl_count_expired(tbl, part, pg_catalog.now(), lim OPERATOR(pg_catalog.+) 1);
        IF expired.rows OPERATOR(pg_catalog.>) lim THEN
            UPDATE jsonb_ttl_internal.ttl_index x
            SET paused_at = pg_catalog.now(), paused_by = 'brake',
                paused_reason = pg_catalog.format('more than %s of about %s row(s) would expire at once (max_table_fraction %s)',
                                                  lim, table_rows::bigint, max_table_fraction)
            WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
            RAISE WARNING 'jsonb_ttl: the safety brake paused the TTL index of %: more than % of about % row(s) would expire at once',
                          tbl, lim, table_rows::bigint
                USING HINT = pg_catalog.format('ttl_expire_preview(%L) shows what would go; if they may all go: SELECT jsonb_ttl.ttl_index_resume(%L)',
                                               tbl::text, tbl::text);
            RETURN true;
        END IF;
    END IF;
    UPDATE jsonb_ttl_internal.ttl_state s SET backlog_counted = true
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_brake.part;
    RETURN false;
END
$$;

-- The TTL indexes a run of the caller visits, least recently visited first (those with a
-- max_removes_per_second of their own last, whose waits would hold up the others); and the ones of
-- tables that are gone, deleted (no event trigger does it on a managed service). Their indexes'
-- OIDs, shapes and names recorded again where they changed: the shape of the same index
-- (pg_upgrade keeps OIDs and names, a new major writes other node trees), or another index with
-- the shape (a restore, pg_dump's; REINDEX CONCURRENTLY). The rows set aside lapse by
-- themselves when the table's file changes (_ttl_aside).
CREATE FUNCTION jsonb_ttl_internal._ttl_run_tables()
RETURNS regclass[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM jsonb_ttl_internal.ttl_index t
    WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid);
    -- (rows another transaction holds are left for the next run: no wait here)
    WITH found AS MATERIALIZED (  -- (each shape read once)
        SELECT t.table_oid, f.i, f.r, jsonb_ttl_internal._ttl_index_shape(f.i) AS i_shape,
               jsonb_ttl_internal._ttl_index_shape(f.r) AS r_shape
        FROM jsonb_ttl_internal.ttl_index t,
             LATERAL (SELECT jsonb_ttl_internal._ttl_index_of(t, 'expire_after') AS i,
                             jsonb_ttl_internal._ttl_index_of(t, 'row_ttl') AS r OFFSET 0) f
        WHERE jsonb_ttl_internal._ttl_may_purge(t.table_oid::pg_catalog.oid)),
    moved AS (
        SELECT f.* FROM jsonb_ttl_internal.ttl_index t
        JOIN found f ON f.table_oid OPERATOR(pg_catalog.=) t.table_oid
        WHERE f.i IS NOT NULL
          AND (f.i IS DISTINCT FROM t.index_oid OR f.i_shape IS DISTINCT FROM t.index_shape
               OR f.r IS DISTINCT FROM t.row_ttl_index_oid OR f.r_shape IS DISTINCT FROM t.row_ttl_index_shape)
        FOR NO KEY UPDATE OF t SKIP LOCKED)
    UPDATE jsonb_ttl_internal.ttl_index t
    SET index_oid = m.i, index_shape = m.i_shape,
        index_name = (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) m.i),
        row_ttl_index_oid = m.r, row_ttl_index_shape = m.r_shape,
        row_ttl_index_name = (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) m.r)
    FROM moved m WHERE t.table_oid OPERATOR(pg_catalog.=) m.table_oid;
    RETURN ARRAY(
        SELECT t.table_oid FROM jsonb_ttl_internal.ttl_index t
        WHERE jsonb_ttl_internal._ttl_may_purge(t.table_oid::pg_catalog.oid)
        ORDER BY t.max_removes_per_second IS NOT NULL,  -- paced ones last: their waits hold no other table
                 (SELECT pg_catalog.min(s.last_run_at) FROM jsonb_ttl_internal.ttl_state s
                  WHERE s.table_oid OPERATOR(pg_catalog.=) t.table_oid) NULLS FIRST, t.table_oid);
END
$$;

-- The parts of a TTL index the purge visits (paused ones are skipped, and said so in
-- ttl_stats), each with its state: a part without one (the pg_tle form's dump keeps the
-- definitions, not the statistics) gets it.
CREATE FUNCTION jsonb_ttl_internal._ttl_run_parts(tbl regclass)
RETURNS text[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    wanted text[] := ARRAY(SELECT p.part FROM jsonb_ttl_internal.ttl_index t
                           CROSS JOIN (VALUES ('expire_after'::pg_catalog.text), ('row_ttl')) p(part)
                           WHERE t.table_oid OPERATOR(pg_catalog.=) tbl
                             AND (p.part OPERATOR(pg_catalog.=) 'expire_after' OR t.row_ttl_path IS NOT NULL));
BEGIN
    -- (only when one lacks it: an insert could wait for another session's of the same row)
    IF EXISTS (SELECT FROM pg_catalog.unnest(wanted) w(part)
               WHERE NOT EXISTS (SELECT FROM jsonb_ttl_internal.ttl_state s
                                 WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) w.part)) THEN
        INSERT INTO jsonb_ttl_internal.ttl_state AS s (table_oid, part)
        SELECT tbl, w.part FROM pg_catalog.unnest(wanted) w(part)
        ON CONFLICT (table_oid, part) DO NOTHING;
    END IF;
    RETURN ARRAY(SELECT s.part FROM jsonb_ttl_internal.ttl_state s
                 WHERE s.table_oid OPERATOR(pg_catalog.=) tbl ORDER BY s.part);
END
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_paused(tbl regclass)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT t.paused_at IS NOT NULL FROM jsonb_ttl_internal.ttl_index t
                     WHERE t.table_oid OPERATOR(pg_catalog.=) tbl), true)
$$;

-- Whether now is inside the TTL index's delete window (always without one), and what
-- ttl_stats.skipped says outside it.
CREATE FUNCTION jsonb_ttl_internal._ttl_now_in_window(tbl regclass)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT jsonb_ttl_internal._ttl_in_window(t.delete_window_start, t.delete_window_end, t.time_zone)
                     FROM jsonb_ttl_internal.ttl_index t WHERE t.table_oid OPERATOR(pg_catalog.=) tbl), true)
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_outside_window(tbl regclass)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'outside its delete_window ' OPERATOR(pg_catalog.||) jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end)
           OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) coalesce(t.time_zone, 'UTC') OPERATOR(pg_catalog.||) ')'
    FROM jsonb_ttl_internal.ttl_index t WHERE t.table_oid OPERATOR(pg_catalog.=) tbl
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_batch_cap(tbl regclass, batch_size integer)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT LEAST(batch_size, coalesce((SELECT t.batch_size FROM jsonb_ttl_internal.ttl_index t
                                       WHERE t.table_oid OPERATOR(pg_catalog.=) tbl), batch_size))
$$;

-- The rows a second a table's visit may remove: the least of the run's and the TTL index's own
-- max_removes_per_second that are set; 0 for no limit.
CREATE FUNCTION jsonb_ttl_internal._ttl_rate(tbl regclass, max_removes_per_second integer)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(LEAST(NULLIF(max_removes_per_second, 0),
                          (SELECT t.max_removes_per_second FROM jsonb_ttl_internal.ttl_index t
                           WHERE t.table_oid OPERATOR(pg_catalog.=) tbl)), 0)
$$;
