-- The extension's internals live in a schema of its own, which it creates (so a role that
-- squatted the name makes CREATE EXTENSION fail instead of binding anything) and in which no
-- other role may create: nothing a tenant plants there can be a better match for a call of
-- ours. USAGE is PUBLIC, because the documented wrappers call the internals as their caller.
CREATE SCHEMA jsonb_ttl_internal;
COMMENT ON SCHEMA jsonb_ttl_internal IS 'jsonb_ttl: internals; nothing here is called directly.';
GRANT USAGE ON SCHEMA jsonb_ttl_internal TO PUBLIC;

-- The catalog of TTL indexes: one row per table, keyed by regclass so that ALTER TABLE RENAME
-- and SET SCHEMA keep it, and an extension configuration table so that pg_dump dumps it. Among
-- the internals (since 0.4.0), out of the user's schema: read it through the view ttl_indexes.
CREATE TABLE jsonb_ttl_internal.ttl_index (
    table_oid    regclass    PRIMARY KEY,
    column_name  name        NOT NULL,
    json_path    text[]      NOT NULL,   -- keys inside a jsonb column, {} for a plain column
    path         text        NOT NULL,   -- the path as given to ttl_index_create
    expire_after interval    NOT NULL CHECK (expire_after OPERATOR(pg_catalog.>=) '0'::pg_catalog.interval),
    numeric_unit text        NOT NULL DEFAULT 's' CHECK (numeric_unit OPERATOR(pg_catalog.=) ANY (ARRAY['s'::pg_catalog.text, 'ms'::pg_catalog.text])),
    index_name   name        NOT NULL,   -- in the table's schema
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    time_zone    text,                   -- the zone a timestamp or date column is read in; NULL: UTC
    paused_at    timestamptz,            -- paused by the safety brake since then; NULL: not paused
    paused_reason text,
    brake_released boolean NOT NULL DEFAULT false, -- ttl_index_resume(): off until the table drains
    filter       text,                   -- only rows this holds for expire (pg_get_expr form); NULL: all
    filter_sql   text,                   -- the same, qualified down to its operators: what statements carry
    touch        boolean NOT NULL DEFAULT false, -- a trigger keeps the reference at the last write
    hide_expired boolean NOT NULL DEFAULT false, -- a row security policy hides expired rows
    hide_enabled_row_security boolean NOT NULL DEFAULT false, -- ... and row security was enabled for it
    row_ttl_path text,                   -- per-row TTL: the field of seconds, as given; NULL: none
    row_ttl_column name,
    row_ttl_json_path text[],
    row_ttl_index_name name,             -- the index over the rows with a TTL of their own
    drop_partitions text CHECK (drop_partitions OPERATOR(pg_catalog.=) ANY (ARRAY['drop'::pg_catalog.text, 'detach'::pg_catalog.text])), -- expired partitions go whole
    paused_by    text CHECK (paused_by OPERATOR(pg_catalog.=) ANY (ARRAY['brake'::pg_catalog.text, 'operator'::pg_catalog.text])), -- who paused it; NULL: not paused
    delete_window_start time,            -- rows go only from this time of day …
    delete_window_end   time,            -- … to this one, in time_zone (else UTC); NULL: any time
    batch_size   integer CHECK (batch_size OPERATOR(pg_catalog.>) 0),  -- at most jsonb_ttl.batch_size; NULL: the setting
    max_removes_per_second integer CHECK (max_removes_per_second OPERATOR(pg_catalog.>) 0), -- likewise
    replication_origin boolean NOT NULL DEFAULT false, -- the worker's deletes carry the origin jsonb_ttl
    logical_message boolean NOT NULL DEFAULT false,    -- one logical decoding message per batch
    archive_to   regclass                -- expired rows move into this table; NULL: they are deleted
);
COMMENT ON TABLE jsonb_ttl_internal.ttl_index IS 'jsonb_ttl: one TTL index per table. Change it through ttl_index_create / ttl_index_alter / ttl_index_drop.';
SELECT pg_catalog.pg_extension_config_dump('jsonb_ttl_internal.ttl_index', '');
GRANT SELECT ON jsonb_ttl_internal.ttl_index TO PUBLIC;

-- What ttl_index_create and ttl_index_alter return.
CREATE TYPE ttl_index_info AS (
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
    build_sql        text[],      -- build => false: the statements still to run; NULL once built
    hide_expired     boolean,
    row_ttl_path     text,
    drop_partitions  text,
    paused           boolean,
    delete_window    text,
    batch_size       integer,
    max_removes_per_second integer,
    replication_origin boolean,
    logical_message  boolean,
    rows_expired     bigint,      -- at creation: the rows already expired (the first backlog)
    archive_to       regclass     -- the table expired rows move into; NULL: they are deleted
);

-- The indexes of each TTL index, by OID (objects are followed by OID, never by name: a name can
-- be renamed away, squatted or reused by another role). `role` is the catalog column that names
-- the index. Not a configuration table: OIDs do not survive pg_dump, and a restore records its
-- indexes again as it creates them (the ddl_command_end event trigger of sql/api.sql).
CREATE TABLE jsonb_ttl_internal.index_oid (
    index_oid oid  PRIMARY KEY,
    table_oid oid  NOT NULL,
    role      text NOT NULL CHECK (role OPERATOR(pg_catalog.=) ANY (ARRAY['index_name'::pg_catalog.text, 'row_ttl_index_name'::pg_catalog.text])),
    UNIQUE (table_oid, role)
);
COMMENT ON TABLE jsonb_ttl_internal.index_oid IS 'jsonb_ttl: the OID of each index of each TTL index.';
GRANT SELECT ON jsonb_ttl_internal.index_oid TO PUBLIC;   -- as ttl_index: nothing secret

-- Field TTLs (docs/field_ttl.md): a point in time inside a jsonb document whose expiry removes a
-- subtree of the document (remove_path, the date or an object that holds it) instead of the row.
-- Its index is found by what it is (its expression and predicate), index_name first.
CREATE TABLE jsonb_ttl_internal.ttl_field (
    table_oid    regclass NOT NULL,
    field_id     smallint NOT NULL CHECK (field_id OPERATOR(pg_catalog.>=) 1 AND field_id OPERATOR(pg_catalog.<=) 200),
    path         text NOT NULL,                -- the date, as given
    column_name  name NOT NULL,
    json_path    text[] NOT NULL,
    remove       text NOT NULL,                -- what expiry removes, as ttl_indexes shows it
    remove_path  text[] NOT NULL CHECK (pg_catalog.cardinality(remove_path) OPERATOR(pg_catalog.>) 0),
    expire_after interval NOT NULL,
    numeric_unit text NOT NULL DEFAULT 's',
    index_name   name NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (table_oid, field_id),
    UNIQUE (table_oid, column_name, json_path)
);
COMMENT ON TABLE jsonb_ttl_internal.ttl_field IS 'jsonb_ttl: the field TTLs. Change them through ttl_field_create / ttl_field_alter / ttl_field_drop.';
SELECT pg_catalog.pg_extension_config_dump('jsonb_ttl_internal.ttl_field', '');
GRANT SELECT ON jsonb_ttl_internal.ttl_field TO PUBLIC;   -- as ttl_index: nothing secret

-- The tables rows are deleted from for the TTL index of `tbl`: the table itself, or each leaf
-- partition of a partitioned table (ctid is unique only within one). Read from the catalogs
-- without locking any table (pg_partition_tree() would lock every partition, and wait behind a
-- tenant's lock), so that ttl_stats and the worker's catalog read never wait on one.
CREATE FUNCTION jsonb_ttl_internal._ttl_targets(tbl regclass) RETURNS SETOF regclass
LANGUAGE sql STABLE ROWS 1  -- most tables are their own one target (see ttl_stats' planning)
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE tree(relid) AS (
        SELECT tbl::pg_catalog.oid
        UNION ALL
        SELECT i.inhrelid FROM tree t
        JOIN pg_catalog.pg_inherits i ON i.inhparent OPERATOR(pg_catalog.=) t.relid
        JOIN pg_catalog.pg_class p ON p.oid OPERATOR(pg_catalog.=) i.inhrelid
        WHERE p.relispartition
    )
    SELECT t.relid::pg_catalog.regclass FROM tree t
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid
    WHERE c.relkind OPERATOR(pg_catalog.<>) 'p'::pg_catalog."char"
$$;
