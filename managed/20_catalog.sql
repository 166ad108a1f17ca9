-- The catalog: one row per TTL index (a table's definition) and one per part of it for the
-- purge's state and statistics (a TTL index with a per-row TTL has two parts, as in the Rust
-- edition: 'expire_after', the rows that fall back to expire_after, and 'row_ttl').
--
-- No SECURITY DEFINER anywhere: every function runs as its caller, and row security on these
-- tables is what keeps one role from writing another's definitions. A role may write the rows
-- of a table it has the privileges of the owner of (what CREATE INDEX asks), and anyone may
-- delete the rows of a table that is gone (no event trigger cleans up after DROP TABLE: event
-- triggers need a superuser, which a managed service does not give). Everyone may read the
-- definitions, as pg_indexes; the state (with its error texts) only the owner's roles and
-- pg_read_all_stats.

-- Whether the current role has the privileges of the owner of a table (true when the table is
-- gone, so that its rows may be cleaned up by anyone).
CREATE FUNCTION jsonb_ttl_internal._ttl_may_write(tbl oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT pg_catalog.pg_has_role(CURRENT_USER, c.relowner, 'USAGE')
                     FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), true)
$$;

CREATE TABLE jsonb_ttl_internal.ttl_index (
    table_oid      regclass    PRIMARY KEY,
    column_attnum  smallint    NOT NULL,   -- the column the path starts in, by number: renames follow
    column_kind    text        NOT NULL CHECK (column_kind OPERATOR(pg_catalog.=) ANY (ARRAY['jsonb', 'json', 'text', 'timestamptz', 'timestamp', 'date', 'number'])),
    json_path      text[]      NOT NULL,   -- keys inside a json or jsonb column, {} for a plain column
    path           text        NOT NULL,   -- the path as given to ttl_index_create
    expire_after   interval    NOT NULL CHECK (expire_after OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
    numeric_unit   text        NOT NULL DEFAULT 's' CHECK (numeric_unit OPERATOR(pg_catalog.=) ANY (ARRAY['s', 'ms'])),
    time_zone      text,                   -- zone of local times; NULL: UTC
    filter         text,                   -- only rows this holds for expire; NULL: all
    row_ttl_path   text,                   -- per-row TTL: the field of seconds, as given; NULL: none
    row_ttl_attnum smallint,
    row_ttl_kind   text,
    row_ttl_json_path text[],
    index_oid      oid         NOT NULL,   -- the TTL index (followed by OID; 0: none yet)
    index_shape    text,                   -- what it is: found by it after a restore (_ttl_index_of)
    index_name     name,                   -- its name, which only confirms its OID after pg_upgrade
    row_ttl_index_oid oid,                 -- the index of the rows with a TTL of their own
    row_ttl_index_shape text,
    row_ttl_index_name name,
    batch_size     integer     CHECK (batch_size OPERATOR(pg_catalog.>) 0),
    max_removes_per_second integer CHECK (max_removes_per_second OPERATOR(pg_catalog.>) 0),
    delete_window_start time,              -- ttl_purge() deletes only from start to end, in time_zone
    delete_window_end time,                -- (UTC without one); NULL: at any time
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    paused_at      timestamptz,            -- NULL: not paused
    paused_by      text        CHECK (paused_by OPERATOR(pg_catalog.=) ANY (ARRAY['brake', 'operator'])),
    paused_reason  text,
    brake_released boolean     NOT NULL DEFAULT false  -- ttl_index_resume(): off until the table drains
);
COMMENT ON TABLE jsonb_ttl_internal.ttl_index IS 'jsonb_ttl: one TTL index per table. Change it through ttl_index_create / ttl_index_alter / ttl_index_drop.';
ALTER TABLE jsonb_ttl_internal.ttl_index ENABLE ROW LEVEL SECURITY;
CREATE POLICY ttl_index_read ON jsonb_ttl_internal.ttl_index FOR SELECT USING (true);
CREATE POLICY ttl_index_insert ON jsonb_ttl_internal.ttl_index FOR INSERT
    WITH CHECK (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
CREATE POLICY ttl_index_update ON jsonb_ttl_internal.ttl_index FOR UPDATE
    USING (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid))
    WITH CHECK (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
CREATE POLICY ttl_index_delete ON jsonb_ttl_internal.ttl_index FOR DELETE
    USING (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
GRANT SELECT, INSERT, UPDATE, DELETE ON jsonb_ttl_internal.ttl_index TO PUBLIC;

-- The purge's state and statistics, one row per part of a TTL index.
CREATE TABLE jsonb_ttl_internal.ttl_state (
    table_oid         regclass    NOT NULL REFERENCES jsonb_ttl_internal.ttl_index ON DELETE CASCADE,
    part              text        NOT NULL CHECK (part OPERATOR(pg_catalog.=) ANY (ARRAY['expire_after', 'row_ttl'])),
    runs              bigint      NOT NULL DEFAULT 0,
    rows_deleted      bigint      NOT NULL DEFAULT 0,
    last_run_at       timestamptz,
    last_rows_deleted bigint,
    limit_reached     bigint      NOT NULL DEFAULT 0,
    errors            bigint      NOT NULL DEFAULT 0,
    last_error        text,
    last_error_at     timestamptz,
    last_success_at   timestamptz,
    last_run_ms       double precision,
    backlog           bigint,                -- expired rows left at the end of the last visit
    oldest_expired    timestamptz,           -- the oldest expired point in time left then
    backlog_counted   boolean     NOT NULL DEFAULT false,  -- the brake counted this backlog already
    skipped           text,
    set_aside         tid[]       NOT NULL DEFAULT '{}',  -- expired rows a DELETE fails on (a trigger raises, a key restricts)
    set_aside_file    oid,        -- the table's file those tids are in (pg_relation_filenode): a restore,
                                  -- VACUUM FULL, CLUSTER or TRUNCATE gives it another, and the list lapses
    PRIMARY KEY (table_oid, part)
);
COMMENT ON TABLE jsonb_ttl_internal.ttl_state IS 'jsonb_ttl: what ttl_purge() did, per part of each TTL index. Read it through ttl_stats.';
ALTER TABLE jsonb_ttl_internal.ttl_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY ttl_state_read ON jsonb_ttl_internal.ttl_state FOR SELECT
    USING (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid)
           OR pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));
CREATE POLICY ttl_state_insert ON jsonb_ttl_internal.ttl_state FOR INSERT
    WITH CHECK (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
CREATE POLICY ttl_state_update ON jsonb_ttl_internal.ttl_state FOR UPDATE
    USING (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid))
    WITH CHECK (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
CREATE POLICY ttl_state_delete ON jsonb_ttl_internal.ttl_state FOR DELETE
    USING (jsonb_ttl_internal._ttl_may_write(table_oid::pg_catalog.oid));
GRANT SELECT, INSERT, UPDATE, DELETE ON jsonb_ttl_internal.ttl_state TO PUBLIC;

-- pg_dump keeps the definitions when this edition is an extension (pg_tle); as a plain script
-- they are ordinary tables, which pg_dump dumps anyway.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension e
               WHERE e.extname OPERATOR(pg_catalog.=) 'jsonb_ttl'::pg_catalog.name) THEN
        PERFORM pg_catalog.pg_extension_config_dump('jsonb_ttl_internal.ttl_index', '');
    END IF;
END
$$;

-- What ttl_index_create and ttl_index_alter return: the Rust edition's type, column for column
-- (the options this edition does not have are always their defaults).
CREATE TYPE jsonb_ttl.ttl_index_info AS (
    index_name       name,
    table_name       regclass,
    column_name      name,
    path             text,
    expire_after     interval,
    numeric_unit     text,
    is_newly_created boolean,
    time_zone        text,
    filter           text,
    touch            boolean,
    build_sql        text[],
    hide_expired     boolean,
    row_ttl_path     text,
    drop_partitions  text,
    paused           boolean,
    delete_window    text,
    batch_size       integer,
    max_removes_per_second integer,
    replication_origin boolean,
    logical_message  boolean,
    rows_expired     bigint,
    archive_to       regclass
);

-- A column's name now (renames follow), or NULL when it is gone.
CREATE FUNCTION jsonb_ttl_internal._ttl_column(tbl oid, attnum smallint)
RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a.attname FROM pg_catalog.pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) _ttl_column.tbl AND a.attnum OPERATOR(pg_catalog.=) _ttl_column.attnum
      AND NOT a.attisdropped
$$;

-- A delete window as ttl_indexes shows it: 'HH:MM-HH:MM'.
CREATE FUNCTION jsonb_ttl_internal._ttl_window_text(window_start time, window_end time)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.substr(window_start::pg_catalog.text, 1, 5) OPERATOR(pg_catalog.||) '-'
       OPERATOR(pg_catalog.||) pg_catalog.substr(window_end::pg_catalog.text, 1, 5);

-- Whether the time of day now, in the zone (UTC when NULL), is inside the window (always when
-- there is none); a window whose start is after its end spans midnight. As the Rust edition's.
CREATE FUNCTION jsonb_ttl_internal._ttl_in_window(window_start time, window_end time, zone text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN (SELECT CASE WHEN window_start IS NULL OR window_end IS NULL THEN true
                    WHEN window_start OPERATOR(pg_catalog.<) window_end
                    THEN n.local OPERATOR(pg_catalog.>=) window_start AND n.local OPERATOR(pg_catalog.<) window_end
                    ELSE n.local OPERATOR(pg_catalog.>=) window_start OR n.local OPERATOR(pg_catalog.<) window_end
               END
        FROM (SELECT pg_catalog.timezone(coalesce(zone, 'UTC'::pg_catalog.text), pg_catalog.now())::pg_catalog.time AS local) n);

-- An index's shape: its access method, uniqueness, columns, operator classes, collations and
-- options, and its key and predicate as the catalog keeps them (pg_index's node trees, which
-- name columns by number: a rename leaves them), with the functions and operators they call by
-- name, less what a restore changes (the places in the text, and the other OIDs of 5 digits or
-- more: types and collations made after initdb). A restore (pg_dump) gives every index a new
-- OID, and the catalog's rows come back with the dumped database's OIDs: the shape finds the
-- TTL index again, by what it is rather than by its name. Read from the catalog alone:
-- pg_get_indexdef() and pg_get_expr() would wait for a lock on the table.
CREATE FUNCTION jsonb_ttl_internal._ttl_index_shape(idx oid)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    x record;
    node text;
    m text[];
BEGIN
    SELECT i.indkey::pg_catalog.text AS key, i.indexprs::pg_catalog.text AS exprs, i.indpred::pg_catalog.text AS pred,
           i.indisunique, i.indoption::pg_catalog.text AS options, a.amname,
           (SELECT pg_catalog.string_agg(n.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) o.opcname, ',' ORDER BY k.ord)
            FROM pg_catalog.unnest(i.indclass::pg_catalog.oid[]) WITH ORDINALITY k(id, ord)
            JOIN pg_catalog.pg_opclass o ON o.oid OPERATOR(pg_catalog.=) k.id
            JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.opcnamespace) AS opclasses,
           (SELECT pg_catalog.string_agg(coalesce(cl.collname::pg_catalog.text, '-'), ',' ORDER BY k.ord)
            FROM pg_catalog.unnest(i.indcollation::pg_catalog.oid[]) WITH ORDINALITY k(id, ord)
            LEFT JOIN pg_catalog.pg_collation cl ON cl.oid OPERATOR(pg_catalog.=) k.id) AS collations
    INTO x
    FROM pg_catalog.pg_index i
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid
    JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam
    WHERE i.indexrelid OPERATOR(pg_catalog.=) idx;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    node := pg_catalog.regexp_replace(coalesce(x.exprs, '') OPERATOR(pg_catalog.||) ' WHERE ' OPERATOR(pg_catalog.||) coalesce(x.pred, ''),
                                      ' :location -?[0-9]+', '', 'g');
    FOR m IN SELECT DISTINCT r FROM pg_catalog.regexp_matches(node, ':(funcid|opfuncid|opno) ([0-9]+)', 'g') r LOOP
        node := pg_catalog.replace(node, ':' OPERATOR(pg_catalog.||) m[1] OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) m[2] OPERATOR(pg_catalog.||) ' ',
                                   ':' OPERATOR(pg_catalog.||) m[1] OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||)
                                   CASE m[1] WHEN 'opno' THEN m[2]::pg_catalog.oid::pg_catalog.regoperator::pg_catalog.text
                                             ELSE m[2]::pg_catalog.oid::pg_catalog.regprocedure::pg_catalog.text END
                                   OPERATOR(pg_catalog.||) ' ');
    END LOOP;
    RETURN pg_catalog.format('%s unique=%s key=%s opclass=%s collation=%s options=%s ', x.amname, x.indisunique, x.key,
                             x.opclasses, x.collations, x.options)
           OPERATOR(pg_catalog.||) pg_catalog.regexp_replace(node, '\m[0-9]{5,}\M', 'oid', 'g');
END
$$;

-- The index of a part ('expire_after' or 'row_ttl') of a TTL index, the one way every caller
-- finds it: among the table's indexes, the one with the shape recorded (the OID recorded first,
-- when several have it; after a restore the OID recorded is another index's, or none); else the
-- OID recorded while it is an index of the table under the name recorded (pg_upgrade keeps OIDs
-- and names, and a new major writes other node trees; a restore into another major gives the
-- recorded OID to any index, which the name alone tells apart). NULL: none (dropped by hand).
CREATE FUNCTION jsonb_ttl_internal._ttl_index_of(t jsonb_ttl_internal.ttl_index, part text)
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        -- the common case, one shape read: the OID recorded, its index of the shape recorded
        (SELECT x.indexrelid FROM pg_catalog.pg_index x
         WHERE x.indexrelid OPERATOR(pg_catalog.=) r.oid AND x.indrelid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
           AND jsonb_ttl_internal._ttl_index_shape(x.indexrelid) OPERATOR(pg_catalog.=) r.shape),
        (SELECT s.id
         FROM (SELECT x.indexrelid AS id, c.relname, jsonb_ttl_internal._ttl_index_shape(x.indexrelid) AS shape
               FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) x.indexrelid
               WHERE x.indrelid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
               OFFSET 0) s  -- (each index's shape read once)
         WHERE s.shape OPERATOR(pg_catalog.=) r.shape
            OR (s.id OPERATOR(pg_catalog.=) r.oid AND s.relname OPERATOR(pg_catalog.=) r.name)
         ORDER BY s.shape IS NOT DISTINCT FROM r.shape DESC, s.id IS NOT DISTINCT FROM r.oid DESC,
                  s.relname IS NOT DISTINCT FROM r.name DESC, s.id
         LIMIT 1))
    FROM (SELECT CASE part WHEN 'row_ttl' THEN t.row_ttl_index_oid ELSE t.index_oid END AS oid,
                 CASE part WHEN 'row_ttl' THEN t.row_ttl_index_shape ELSE t.index_shape END AS shape,
                 CASE part WHEN 'row_ttl' THEN t.row_ttl_index_name ELSE t.index_name END AS name) r
$$;

-- Every TTL index of the database, as the Rust edition's view shows it.
-- security_invoker: row security of the catalog applies to the reader, not to the view's owner
CREATE VIEW jsonb_ttl.ttl_indexes WITH (security_invoker = true) AS
SELECT t.table_oid                          AS table_name,
       jsonb_ttl_internal._ttl_column(c.oid, t.column_attnum) AS column_name,
       t.path,
       t.json_path,
       t.expire_after,
       t.numeric_unit,
       i.relname                            AS index_name,
       i.relpages::pg_catalog.int8 OPERATOR(pg_catalog.*)
         pg_catalog.current_setting('block_size')::pg_catalog.int8 AS index_size,
       t.created_at,
       t.time_zone,
       t.paused_at,
       t.filter,
       false                                AS touch,
       false                                AS hide_expired,
       t.row_ttl_path,
       NULL::pg_catalog.text                AS drop_partitions,
       t.paused_by,
       t.paused_reason,
       jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end) AS delete_window,
       t.batch_size,
       t.max_removes_per_second,
       false                                AS replication_origin,
       false                                AS logical_message,
       NULL::pg_catalog.regclass            AS archive_to,
       NULL::pg_catalog.text                AS removes
FROM jsonb_ttl_internal.ttl_index t
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
LEFT JOIN pg_catalog.pg_class i
       ON i.oid OPERATOR(pg_catalog.=) jsonb_ttl_internal._ttl_index_of(t, 'expire_after');
GRANT SELECT ON jsonb_ttl.ttl_indexes TO PUBLIC;

-- What ttl_purge() did, one row per part of each TTL index, as the Rust edition's view.
CREATE VIEW jsonb_ttl.ttl_stats WITH (security_invoker = true) AS
SELECT s.table_oid                          AS table_name,
       s.runs,
       s.rows_deleted,
       s.last_run_at,
       s.last_rows_deleted,
       s.limit_reached,
       s.errors,
       s.last_error,
       s.oldest_expired,
       s.table_oid                          AS ttl_table,
       CASE WHEN t.paused_at IS NOT NULL THEN 'paused by ' OPERATOR(pg_catalog.||) t.paused_by
            ELSE s.skipped END              AS skipped,
       CASE WHEN s.set_aside_file OPERATOR(pg_catalog.=) pg_catalog.pg_relation_filenode(s.table_oid)
            THEN pg_catalog.cardinality(s.set_aside) ELSE 0 END::pg_catalog.int8 AS rows_undeletable,
       s.last_success_at,
       s.last_run_ms,
       s.backlog,
       NULL::pg_catalog.int8                AS rows_never_expire,
       t.paused_at IS NOT NULL              AS paused,
       t.paused_by,
       CASE WHEN t.row_ttl_path IS NOT NULL THEN s.part END AS part
FROM jsonb_ttl_internal.ttl_state s
JOIN jsonb_ttl_internal.ttl_index t ON t.table_oid OPERATOR(pg_catalog.=) s.table_oid
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid;
GRANT SELECT ON jsonb_ttl.ttl_stats TO PUBLIC;

-- Server totals as the Rust edition's ttl_statistics(): over the TTL indexes the caller may see.
CREATE FUNCTION jsonb_ttl.ttl_statistics(OUT runs bigint, OUT rows_deleted bigint, OUT limit_reached bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(pg_catalog.max(s.runs), 0)::pg_catalog.int8, coalesce(pg_catalog.sum(s.rows_deleted), 0)::pg_catalog.int8,
           coalesce(pg_catalog.sum(s.limit_reached), 0)::pg_catalog.int8
    FROM jsonb_ttl_internal.ttl_state s
$$;
