-- The purge: ttl_purge(), a procedure pg_cron calls, and ttl_expire_now(), a function that does
-- the same in the caller's transaction. Both run as their caller and purge only the tables whose
-- owner the caller is (or whose owner's privileges the caller has, unless the caller is a
-- superuser: a superuser's call purges only its own tables, so that it never runs a tenant's
-- triggers, policies or filter as a superuser). Every DELETE is then one the caller could have
-- written by hand: one role never deletes another's rows it could not delete itself.
--
-- A batch: one statement, through the part's index, its rows locked FOR UPDATE SKIP LOCKED (rows
-- another transaction holds are left for a later batch, never waited for), and expiry checked
-- again on the row version deleted (the DELETE's own WHERE):
--
--   DELETE FROM tbl WHERE ctid = ANY (ARRAY(SELECT ctid FROM tbl WHERE <key> < $1 AND <predicate>
--                                          ORDER BY <key> LIMIT $2 FOR UPDATE SKIP LOCKED))
--                     AND <key> < $1 AND <the rest of the predicate: the filter, a per-row TTL's>

-- One batch of a part of a table's TTL index, in the caller's transaction, under the definition
-- committed when it starts (its catalog row is read FOR SHARE: an alter, pause or drop under way
-- is waited for, at most lock_timeout). Every lock it waits for, it waits at most lock_timeout
-- (55P03 then). Rows in set_aside are left. Deferred constraints are checked at the DELETE, not at
-- the COMMIT, so that a row they refuse fails the batch where the purge can catch it. Returns the
-- rows deleted, or NULL when the TTL index is paused or gone.
CREATE FUNCTION jsonb_ttl_internal._ttl_delete_batch(tbl regclass, part text, max_rows bigint, lock_timeout text,
                                                     set_aside tid[] DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
    p record;
    deleted bigint;
BEGIN
    IF lock_timeout IS NOT NULL THEN
        PERFORM pg_catalog.set_config('lock_timeout', lock_timeout, true);  -- until this function returns
    END IF;
    SELECT * INTO t FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl FOR SHARE;
    IF NOT FOUND OR t.paused_at IS NOT NULL OR NOT jsonb_ttl_internal._ttl_may_purge(tbl::pg_catalog.oid) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO p FROM jsonb_ttl_internal._ttl_parts(tbl) x WHERE x.part OPERATOR(pg_catalog.=) _ttl_delete_batch.part;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SET CONSTRAINTS ALL IMMEDIATE;
    EXECUTE pg_catalog.format(
        'WITH gone AS (DELETE FROM %1$s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY('
        'SELECT ctid FROM %1$s WHERE %2$s OPERATOR(pg_catalog.<) $1 AND %3$s AND ctid OPERATOR(pg_catalog.<>) ALL ($3) '
        'ORDER BY %2$s LIMIT $2 FOR UPDATE SKIP LOCKED)) '
        'AND %2$s OPERATOR(pg_catalog.<) $1 AND %4$s RETURNING 1) SELECT pg_catalog.count(*) FROM gone',
        tbl, p.key_sql, p.predicate_sql, p.recheck_sql)
    INTO deleted
    USING jsonb_ttl_internal._ttl_cutoff(pg_catalog.now(), p.expire_after), max_rows, coalesce(set_aside, '{}');
    RETURN deleted;
END
$$;

-- A batch of one row failed: that row (the first expired one not set aside yet, in the order
-- batches take them) is set aside, so that it no longer keeps the rows after it from going.
-- Returns whether there was one to set aside.
CREATE FUNCTION jsonb_ttl_internal._ttl_set_aside(tbl regclass, part text, lock_timeout text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
    aside tid[];
    row_id tid;
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', lock_timeout, true);  -- until this function returns
    SELECT * INTO p FROM jsonb_ttl_internal._ttl_parts(tbl) x WHERE x.part OPERATOR(pg_catalog.=) _ttl_set_aside.part;
    PERFORM FROM jsonb_ttl_internal.ttl_state s
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_set_aside.part FOR UPDATE;
    IF p IS NULL OR NOT FOUND THEN
        RETURN false;
    END IF;
    aside := jsonb_ttl_internal._ttl_aside(tbl, part);
    EXECUTE pg_catalog.format(
        'SELECT ctid FROM %1$s WHERE %2$s OPERATOR(pg_catalog.<) $1 AND %3$s AND ctid OPERATOR(pg_catalog.<>) ALL ($2) '
        'ORDER BY %2$s LIMIT 1 FOR UPDATE SKIP LOCKED', tbl, p.key_sql, p.predicate_sql)
    INTO row_id
    USING jsonb_ttl_internal._ttl_cutoff(pg_catalog.now(), p.expire_after), aside;
    IF row_id IS NULL THEN
        RETURN false;
    END IF;
    UPDATE jsonb_ttl_internal.ttl_state s SET set_aside = aside OPERATOR(pg_catalog.||) row_id,
        set_aside_file = pg_catalog.pg_relation_filenode(tbl)
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_set_aside.part;
    RETURN true;
END
$$;

-- The rows set aside of a part (its statistics' set_aside), for the next batch.
CREATE FUNCTION jsonb_ttl_internal._ttl_aside(tbl regclass, part text)
RETURNS tid[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT s.set_aside FROM jsonb_ttl_internal.ttl_state s
                     WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_aside.part
                       AND s.set_aside_file OPERATOR(pg_catalog.=) pg_catalog.pg_relation_filenode(tbl)), '{}')
$$;

-- The end of a visit of a part: its statistics, and what is left expired (the lag).
CREATE FUNCTION jsonb_ttl_internal._ttl_visit_end(tbl regclass, part text, deleted bigint, limit_hit boolean,
                                                  error text, started timestamptz, skipped text, lock_timeout text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    left_over record;
    left_rows bigint;
    left_oldest timestamptz;
    p record;
    aside tid[];
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', lock_timeout, true);  -- until this function returns
    IF NOT EXISTS (SELECT FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl) THEN
        RETURN;
    END IF;
    BEGIN
        left_over := jsonb_ttl_internal._ttl_count_expired(tbl, part, pg_catalog.now(), 1000000);
        left_rows := left_over.rows;
        left_oldest := left_over.oldest;
        -- the rows set aside that are still there and expired
        SELECT * INTO p FROM jsonb_ttl_internal._ttl_parts(tbl) x WHERE x.part OPERATOR(pg_catalog.=) _ttl_visit_end.part;
        EXECUTE pg_catalog.format(
            'SELECT ARRAY(SELECT ctid FROM %1$s WHERE ctid OPERATOR(pg_catalog.=) ANY ($1) AND %2$s OPERATOR(pg_catalog.<) $2 AND %3$s)',
            tbl, p.key_sql, p.predicate_sql)
        INTO aside
        USING jsonb_ttl_internal._ttl_aside(tbl, part), jsonb_ttl_internal._ttl_cutoff(pg_catalog.now(), p.expire_after);
    EXCEPTION WHEN OTHERS THEN
        NULL;   -- (a lock not had: not known)
    END;
    UPDATE jsonb_ttl_internal.ttl_state s
    SET runs = s.runs OPERATOR(pg_catalog.+) 1,
        rows_deleted = s.rows_deleted OPERATOR(pg_catalog.+) deleted,
        last_run_at = pg_catalog.clock_timestamp(),
        last_rows_deleted = deleted,
        limit_reached = s.limit_reached OPERATOR(pg_catalog.+) CASE WHEN limit_hit THEN 1 ELSE 0 END,
        errors = s.errors OPERATOR(pg_catalog.+) CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END,
        last_error = coalesce(error, s.last_error),
        last_error_at = CASE WHEN error IS NOT NULL THEN pg_catalog.clock_timestamp() ELSE s.last_error_at END,
        last_success_at = CASE WHEN error IS NULL THEN pg_catalog.clock_timestamp() ELSE s.last_success_at END,
        last_run_ms = pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) started) OPERATOR(pg_catalog.*) 1000,
        backlog = left_rows,
        oldest_expired = left_oldest,
        skipped = _ttl_visit_end.skipped,
        set_aside = coalesce(aside, s.set_aside),
        set_aside_file = CASE WHEN aside IS NOT NULL THEN pg_catalog.pg_relation_filenode(tbl) ELSE s.set_aside_file END,
        -- drained: the next backlog is counted again by the brake
        backlog_counted = s.backlog_counted AND coalesce(left_rows, 1) OPERATOR(pg_catalog.>) 0
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.part OPERATOR(pg_catalog.=) _ttl_visit_end.part;
    -- a table drained of every part: a resumed brake holds again
    UPDATE jsonb_ttl_internal.ttl_index x SET brake_released = false
    WHERE x.table_oid OPERATOR(pg_catalog.=) tbl AND x.brake_released
      AND NOT EXISTS (SELECT FROM jsonb_ttl_internal.ttl_state s
                      WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND coalesce(s.backlog, 1) OPERATOR(pg_catalog.>) 0);
END
$$;

-- ttl_purge(): what the Rust edition's worker does in a pass, for the TTL indexes of the tables
-- the caller purges (see the top of this file). pg_cron calls it:
--   SELECT cron.schedule_in_database('jsonb_ttl', '30 seconds', 'CALL jsonb_ttl.ttl_purge()', 'mydb');
-- Each batch is its own transaction (a COMMIT after each), sized to take about batch_time
-- (doubled while batches are quicker than half of it, halved when one takes more than twice
-- it); within max_table_removes rows a table and max_total_removes a run, and no batch starts
-- after max_run_time. A table whose batch fails (a lock not had within lock_timeout, a
-- trigger's error) is left until the next run, its error in ttl_stats. Call it outside a
-- transaction block (CALL in autocommit mode, as pg_cron does).
-- No SET clause (a procedure with one cannot COMMIT): its statements are written down to their
-- operators and functions, and it sets search_path for each of its transactions.
CREATE PROCEDURE jsonb_ttl.ttl_purge(max_table_removes bigint DEFAULT 100000,
                                     max_total_removes bigint DEFAULT 1000000,
                                     batch_size integer DEFAULT 10000,
                                     batch_time interval DEFAULT '25 milliseconds',
                                     max_run_time interval DEFAULT '50 seconds',
                                     lock_timeout interval DEFAULT '100 milliseconds',
                                     max_table_fraction double precision DEFAULT NULL,
                                     brake_min_rows bigint DEFAULT NULL,
                                     max_removes_per_second integer DEFAULT 0)
LANGUAGE plpgsql
AS $$
DECLARE
    run_started timestamptz := pg_catalog.clock_timestamp();
    deadline timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) max_run_time;
    target_ms double precision := pg_catalog.date_part('epoch', batch_time) OPERATOR(pg_catalog.*) 1000;
    lock_wait text := (pg_catalog.date_part('epoch', lock_timeout) OPERATOR(pg_catalog.*) 1000)::bigint::text OPERATOR(pg_catalog.||) 'ms';
    fraction double precision;
    min_rows double precision;
    tables regclass[];
    parts text[];
    tbl regclass;
    part text;
    n bigint := LEAST(batch_size, 1000);
    cap bigint;
    want bigint;
    got bigint;
    table_deleted bigint;
    part_deleted bigint;
    failed text;
    last_failure text;
    set_asides integer;
    outside boolean;
    rate integer;
    table_started timestamptz;
    pause double precision;
    total bigint := 0;
    limit_hit boolean;
    error text;
    skipped text;
    started timestamptz;
    batch_started timestamptz;
    ms double precision;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF max_removes_per_second IS NULL OR max_removes_per_second OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'max_removes_per_second must be 0 (none) or more'
            USING ERRCODE = '22023', HINT = 'It caps every table of the run; a TTL index''s own max_removes_per_second only lowers it.';
    END IF;
    IF max_table_removes OPERATOR(pg_catalog.<=) 0 OR max_total_removes OPERATOR(pg_catalog.<=) 0
       OR batch_size OPERATOR(pg_catalog.<=) 0 THEN
        RAISE EXCEPTION 'max_table_removes, max_total_removes and batch_size must be more than 0'
            USING ERRCODE = '22023', HINT = 'Leave them out for the defaults: 100000, 1000000 and 10000.';
    END IF;
    fraction := coalesce(max_table_fraction, jsonb_ttl_internal._ttl_setting('max_table_fraction', '0.5')::double precision);
    min_rows := coalesce(brake_min_rows, jsonb_ttl_internal._ttl_setting('brake_min_rows', '10000')::double precision);
    tables := jsonb_ttl_internal._ttl_run_tables();
    COMMIT;
    <<each_table>>
    FOREACH tbl IN ARRAY tables LOOP
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        parts := jsonb_ttl_internal._ttl_run_parts(tbl);
        table_deleted := 0;
        -- the window as the visit of the table begins: a visit begun inside it finishes
        outside := NOT jsonb_ttl_internal._ttl_now_in_window(tbl);
        rate := jsonb_ttl_internal._ttl_rate(tbl, max_removes_per_second);
        table_started := pg_catalog.clock_timestamp();
        FOREACH part IN ARRAY parts LOOP
            started := pg_catalog.clock_timestamp();
            limit_hit := false;
            error := NULL;
            skipped := NULL;
            got := 0;
            part_deleted := 0;
            set_asides := 0;
            last_failure := NULL;
            BEGIN
                IF jsonb_ttl_internal._ttl_paused(tbl) THEN
                    skipped := 'paused';
                ELSIF outside THEN
                    skipped := jsonb_ttl_internal._ttl_outside_window(tbl);
                ELSIF jsonb_ttl_internal._ttl_brake(tbl, part, fraction, min_rows, lock_wait) THEN
                    skipped := 'paused by brake';
                END IF;
            EXCEPTION
                WHEN lock_not_available THEN
                    error := 'a lock was not had within lock_timeout (' OPERATOR(pg_catalog.||) lock_wait OPERATOR(pg_catalog.||) '): ' OPERATOR(pg_catalog.||) SQLERRM;
                WHEN OTHERS THEN
                    error := SQLERRM;
            END;
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            cap := jsonb_ttl_internal._ttl_batch_cap(tbl, batch_size);
            IF rate OPERATOR(pg_catalog.>) 0 THEN
                cap := LEAST(cap, GREATEST(rate OPERATOR(pg_catalog./) 10, 1));  -- a tenth of a second's rows a batch
            END IF;
            n := LEAST(n, cap);
            -- the batches
            WHILE error IS NULL AND skipped IS NULL LOOP
                IF total OPERATOR(pg_catalog.>=) max_total_removes OR table_deleted OPERATOR(pg_catalog.>=) max_table_removes
                   OR pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>=) deadline THEN
                    limit_hit := true;
                    EXIT;
                END IF;
                want := LEAST(n, max_total_removes OPERATOR(pg_catalog.-) total, max_table_removes OPERATOR(pg_catalog.-) table_deleted);
                batch_started := pg_catalog.clock_timestamp();
                failed := NULL;
                BEGIN
                    got := jsonb_ttl_internal._ttl_delete_batch(tbl, part, want, lock_wait,
                                                                jsonb_ttl_internal._ttl_aside(tbl, part));
                EXCEPTION
                    WHEN lock_not_available THEN
                        error := 'a lock was not had within lock_timeout (' OPERATOR(pg_catalog.||) lock_wait OPERATOR(pg_catalog.||) '): ' OPERATOR(pg_catalog.||) SQLERRM;
                    WHEN OTHERS THEN
                        failed := SQLERRM;
                END;
                COMMIT;
                PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
                EXIT WHEN error IS NOT NULL;
                IF failed IS NOT NULL THEN
                    -- a row the DELETE fails on (a trigger raises, a key restricts): smaller
                    -- batches until it is alone, then it is set aside and the rest go on
                    last_failure := failed;
                    IF want OPERATOR(pg_catalog.>) 1 THEN
                        n := GREATEST(want OPERATOR(pg_catalog./) 8, 1);
                        CONTINUE;
                    END IF;
                    set_asides := set_asides OPERATOR(pg_catalog.+) 1;
                    IF set_asides OPERATOR(pg_catalog.>) 100 THEN
                        error := 'more than 100 rows set aside in one visit, the last: ' OPERATOR(pg_catalog.||) failed;
                        EXIT;
                    END IF;
                    BEGIN
                        IF NOT jsonb_ttl_internal._ttl_set_aside(tbl, part, lock_wait) THEN
                            error := failed;
                        END IF;
                    EXCEPTION WHEN OTHERS THEN
                        error := failed;
                    END;
                    COMMIT;
                    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
                    EXIT WHEN error IS NOT NULL;
                    CONTINUE;
                END IF;
                IF got IS NULL THEN
                    skipped := 'paused';   -- paused (or dropped) since the run began
                    EXIT;
                END IF;
                total := total OPERATOR(pg_catalog.+) got;
                table_deleted := table_deleted OPERATOR(pg_catalog.+) got;
                part_deleted := part_deleted OPERATOR(pg_catalog.+) got;
                EXIT WHEN got OPERATOR(pg_catalog.<) want;   -- drained (or the rest is held by others)
                -- max_removes_per_second: no faster than that over the table's visit, waiting
                -- between batches (nothing locked then)
                IF rate OPERATOR(pg_catalog.>) 0 THEN
                    pause := table_deleted::double precision OPERATOR(pg_catalog./) rate
                             OPERATOR(pg_catalog.-) pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) table_started);
                    IF pause OPERATOR(pg_catalog.>) 0 THEN
                        IF pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => pause) OPERATOR(pg_catalog.>=) deadline THEN
                            limit_hit := true;
                            EXIT;
                        END IF;
                        PERFORM pg_catalog.pg_sleep(pause);
                    END IF;
                END IF;
                -- a batch of about batch_time
                ms := pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) batch_started) OPERATOR(pg_catalog.*) 1000;
                IF ms OPERATOR(pg_catalog.<) (target_ms OPERATOR(pg_catalog./) 2) THEN
                    n := LEAST(n OPERATOR(pg_catalog.*) 2, cap);
                ELSIF ms OPERATOR(pg_catalog.>) (target_ms OPERATOR(pg_catalog.*) 2) THEN
                    n := GREATEST(n OPERATOR(pg_catalog./) 2, 10);
                END IF;
            END LOOP;
            IF set_asides OPERATOR(pg_catalog.>) 0 AND error IS NULL THEN
                error := pg_catalog.format('%s row(s) set aside: %s', set_asides, last_failure);
                RAISE WARNING 'jsonb_ttl: % row(s) of % set aside, the rest purged: %', set_asides, tbl, last_failure
                    USING HINT = 'ttl_stats.rows_undeletable counts them; once their cause is mended, ttl_index_resume() has them tried again.';
            ELSIF error IS NOT NULL THEN
                RAISE WARNING 'jsonb_ttl: % was not purged: %', tbl, error;
            END IF;
            BEGIN
                PERFORM jsonb_ttl_internal._ttl_visit_end(tbl, part, part_deleted, limit_hit, error, started, skipped, lock_wait);
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'jsonb_ttl: the statistics of % were not kept: %', tbl, SQLERRM;
            END;
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            EXIT each_table WHEN total OPERATOR(pg_catalog.>=) max_total_removes
                              OR pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>=) deadline;
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON PROCEDURE jsonb_ttl.ttl_purge(bigint, bigint, integer, interval, interval, interval, double precision, bigint, integer) IS
  'Deletes expired rows of the TTL indexes of the tables the caller owns, in batches of about batch_time, each committed; what pg_cron calls.';

-- ttl_expire_now(): the same purge in the caller's transaction (no internal commits), not
-- braked (its caller asked); a named table that is paused is refused, with no table named the
-- paused ones are left (said in a NOTICE). Returns the rows removed.
CREATE FUNCTION jsonb_ttl.ttl_expire_now(tbl regclass DEFAULT '-'::pg_catalog.regclass, max_rows bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables regclass[];
    t regclass;
    part text;
    got bigint;
    total bigint := 0;
    want bigint;
BEGIN
    IF tbl IS NULL THEN
        PERFORM jsonb_ttl_internal._ttl_error('22004', 'tbl must not be NULL',
            'Name a table, or leave tbl out for every table you own (to_regclass() gives NULL for one that does not exist).');
    END IF;
    IF max_rows IS NOT NULL AND max_rows OPERATOR(pg_catalog.<) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'max_rows must be 0 or more', 'Leave it out for no limit.');
    END IF;
    IF tbl::pg_catalog.oid OPERATOR(pg_catalog.=) 0 THEN
        tables := jsonb_ttl_internal._ttl_run_tables();
    ELSE
        PERFORM jsonb_ttl_internal._ttl_lock_definition(tbl);
        IF NOT jsonb_ttl_internal._ttl_may_purge(tbl::pg_catalog.oid) THEN
            PERFORM jsonb_ttl_internal._ttl_error('42501', pg_catalog.format('a superuser purges only the tables it owns, not %s', tbl),
                'Purge it as its owner (SET ROLE), so that its triggers and policies never run as a superuser.');
        END IF;
        IF jsonb_ttl_internal._ttl_paused(tbl) THEN
            PERFORM jsonb_ttl_internal._ttl_error('55000', pg_catalog.format('the TTL index of %s is paused', tbl),
                pg_catalog.format('Nothing goes while it is paused. To purge it: SELECT jsonb_ttl.ttl_index_resume(%L); then SELECT jsonb_ttl.ttl_expire_now(%L).', tbl::text, tbl::text));
        END IF;
        tables := ARRAY[tbl];
    END IF;
    FOREACH t IN ARRAY tables LOOP
        IF jsonb_ttl_internal._ttl_paused(t) THEN
            RAISE NOTICE 'jsonb_ttl: % skipped: it is paused', t;
            CONTINUE;
        END IF;
        -- (a table named is purged at any time: the window is the schedule's, not the caller's)
        IF tbl::pg_catalog.oid OPERATOR(pg_catalog.=) 0 AND NOT jsonb_ttl_internal._ttl_now_in_window(t) THEN
            RAISE NOTICE 'jsonb_ttl: % skipped: it is outside its delete window', t;
            CONTINUE;
        END IF;
        FOREACH part IN ARRAY jsonb_ttl_internal._ttl_run_parts(t) LOOP
            LOOP
                want := LEAST(10000, coalesce(max_rows OPERATOR(pg_catalog.-) total, 10000));
                EXIT WHEN want OPERATOR(pg_catalog.<=) 0;
                got := coalesce(jsonb_ttl_internal._ttl_delete_batch(t, part, want, NULL), 0);
                total := total OPERATOR(pg_catalog.+) got;
                EXIT WHEN got OPERATOR(pg_catalog.<) want;
            END LOOP;
        END LOOP;
    END LOOP;
    RETURN total;
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_expire_now(regclass, bigint) IS
  'Removes expired rows now, in this transaction: of one table, or of every TTL table the caller owns.';
