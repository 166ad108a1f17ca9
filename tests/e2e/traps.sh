#!/usr/bin/env bash
# Scripts that cannot be hijacked: every operator and function call of the install and update
# scripts (and of the SQL and plpgsql bodies and views they create) is bound to what the
# extension means, whatever an untrusted role plants where it may create objects.
#   1. The list comes from the installed scripts themselves ($sharedir/extension/jsonb_ttl--*.sql):
#      every operator symbol they use (also inside OPERATOR(…), and those SQL writes as words:
#      IN, CASE, BETWEEN, LIKE…) and every name called like a function; plus the comparisons and
#      the operators the extension's generated SQL deals in (->, ->>, ||, +, -…).
#   2. For each pg_catalog operator of those symbols, and each pg_catalog function of those names
#      (up to 4 arguments, also as called without its defaulted ones), and each function of the
#      extension of those names, mallory plants in `public` (and in the extension's schema when it
#      is another one she may create in) the exact copy and every better match: an argument
#      replaced by a type with an implicit cast to it (for operators, both arguments). Each one
#      records (what, current_user) in public.sprung and the server log, then does the real job.
#   3. With the traps planted first, each scenario creates the extension (fresh; from each older
#      version along its update path; in a schema `ext` mallory may create in; and, as the
#      control that the test's own statements trip nothing, in a schema only the superuser may
#      create in), planting again once the extension's own types exist, then a superuser
#      and a table owner (mallory, `public` first on her search_path) run the whole API, DDL that
#      fires the event triggers, the worker runs passes, and a superuser reads every view.
#   4. No trap may have run. The test's own statements are fully qualified and exactly typed, so
#      only the extension's code is under test.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-traps 28850 "jsonb_ttl.frequency = 200"
T0=$(date +%s)

WORK=$CLUSTER_DIR/traps  # goes with the cluster
mkdir -p "$WORK"

# psql as ROLE against DB, with extra session options (search_path…); errors are the caller's
# (this test's own `as`, in place of lib.sh's).
as() {
  local role=$1 db=$2 opts=$3
  shift 3
  PGOPTIONS="-c client_min_messages=warning $opts" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U "$role" -d "$db" -X -q -At "$@"
}
# The test's own reads and setup: nothing but pg_catalog on the path.
PINNED="-c search_path=pg_catalog,pg_temp"
qs() { local db=$1; shift; as postgres "$db" "$PINNED" -v ON_ERROR_STOP=1 "$@"; }

SHARE=$("$PG_CONFIG" --sharedir)/extension
DEFAULT_VERSION=$(qs postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'jsonb_ttl'")
mapfile -t OLD_VERSIONS < <(qs postgres -c "SELECT version FROM pg_available_extension_versions WHERE name = 'jsonb_ttl' AND version <> '$DEFAULT_VERSION' ORDER BY string_to_array(version, '.')::int[]")
echo "-- default version $DEFAULT_VERSION; older: ${OLD_VERSIONS[*]:-none}"

echo "-- 1. what the scripts call"
python3 - "$SHARE"/jsonb_ttl--*.sql >"$WORK/names" <<'PY'
import re, sys
OPCH = set('+-*/<>=~!@#%^&|`?')
funcs, ops = set(), set()
for path in sys.argv[1:]:
    s = open(path).read().replace('@extschema@', '')
    toks = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith('--', i):
            j = s.find('\n', i); i = n if j < 0 else j
        elif s.startswith('/*', i):
            j = s.find('*/', i + 2); i = n if j < 0 else j + 2
        elif c == "'":                      # a literal: skipped ('' escapes)
            j = i + 1
            while j < n:
                if s.startswith("''", j): j += 2; continue
                if s[j] == "'": break
                j += 1
            i = j + 1; toks.append(('lit', ''))
        elif c == '"':                      # a quoted identifier
            j = s.find('"', i + 1); toks.append(('id', s[i + 1:j])); i = j + 1
        elif c == '$':                      # $$ / $tag$ delimiters (bodies are scanned) and $1
            m = re.match(r'\$([A-Za-z_][A-Za-z0-9_]*)?\$|\$[0-9]+', s[i:])
            i += m.end() if m else 1
        elif c.isalpha() or c == '_':
            m = re.match(r'[A-Za-z_][A-Za-z0-9_$]*', s[i:]); toks.append(('id', m.group(0).lower())); i += m.end()
        elif c in OPCH:
            j = i
            while j < n and s[j] in OPCH and not s.startswith('--', j) and not s.startswith('/*', j): j += 1
            op = s[i:j]
            # PostgreSQL's lexer: a multi-character operator ends in + or - only if it holds ~ ! @ # % ^ & | ` ?
            while len(op) > 1 and op[-1] in '+-' and not any(ch in op for ch in '~!@#%^&|`?'):
                op = op[:-1]
            toks.append(('op', op)); i += len(op)
        elif c.isspace():
            i += 1
        else:
            toks.append(('p', c)); i += 1
    for k, (kind, text) in enumerate(toks):
        if kind == 'op':
            ops.add(text)
        elif kind == 'id':
            if k + 1 < len(toks) and toks[k + 1] == ('p', '('):
                funcs.add(text)
            if text in ('in', 'any', 'some', 'all', 'case', 'distinct', 'nullif', 'greatest', 'least'): ops.add('=')
            if text in ('greatest', 'least'): ops.update(['<', '>'])
            if text == 'between': ops.update(['>=', '<='])
            if text == 'like': ops.update(['~~', '!~~'])
            if text == 'ilike': ops.update(['~~*', '!~~*'])
            if text == 'similar': ops.add('~')
# comparisons are also applied implicitly (IN, CASE, ANY, sorting); and what the statements the
# extension generates at run time deal in (jsonb paths, text, dates), should one go unqualified
ops.update(['=', '<>', '<', '<=', '>', '>=', '->', '->>', '#>', '#>>', '@>', '<@', '?', '||', '~', '~~', '+', '-'])
print(' '.join(sorted(f for f in funcs if re.fullmatch(r'[a-z_][a-z0-9_$]*', f))))
print(' '.join(sorted(ops)))
PY
FUNCS=$(sed -n 1p "$WORK/names")
OPS=$(sed -n 2p "$WORK/names")
echo "   operators (those of the scripts, comparisons, and what generated SQL uses): $OPS"
echo "   names called: $(echo "$FUNCS" | wc -w) (those that are functions are trapped)"
# the argument types better matches are made of: those the scripts deal in, and their kin
TYPES='oid,regclass,regproc,regprocedure,regtype,regnamespace,regrole,regoper,name,text,varchar,bpchar,"char",int2,int4,int8,numeric,float4,float8,bool,interval,timestamptz,timestamp,date,time,jsonb,json,text[],name[],oid[],tid'

# The generator: run in a database holding one version of the extension, it writes the plan (each
# trap's CREATE statements, with @T@ for the schema it is planted in and @S@ for the extension's).
cat >"$WORK/gen.sql" <<'SQL'
SET search_path = pg_catalog, pg_temp;
CREATE TEMP TABLE trap_plan (kind text, what text, sig text, stmts text[]);
DO $gen$
DECLARE
  ext_ns oid := (SELECT e.extnamespace FROM pg_extension e WHERE e.extname = 'jsonb_ttl');
  types oid[] := ARRAY(SELECT to_regtype(x)::oid FROM unnest(string_to_array(current_setting('traps.types'), ',')) x
                       WHERE to_regtype(x) IS NOT NULL);
  opnames text[] := string_to_array(current_setting('traps.ops'), ' ');
  fnames text[] := string_to_array(current_setting('traps.funcs'), ' ');
  o record; f record;
  l oid; r oid; s oid; k int; m int;
  what text; fn text; vol text; res text; body text; orig text; sig text; args text[]; calls text[]; outs text[];
BEGIN
  -- how a trap names a type: the extension's own types through @S@
  CREATE TEMP TABLE tn AS
    SELECT t.oid, CASE WHEN t.typnamespace = ext_ns THEN '@S@.' || quote_ident(t.typname)
                       ELSE format_type(t.oid, NULL) END AS name, t.typtype = 'p' AS pseudo
    FROM pg_type t;
  CREATE INDEX ON tn (oid);
  -- operators: each argument the original type or one with an implicit cast to it
  FOR o IN SELECT op.*, p.provolatile FROM pg_operator op JOIN pg_proc p ON p.oid = op.oprcode
           WHERE op.oprnamespace = 'pg_catalog'::regnamespace AND op.oprname = ANY (opnames)
             AND NOT EXISTS (SELECT FROM tn WHERE tn.oid IN (op.oprleft, op.oprright, op.oprresult) AND tn.pseudo)
  LOOP
    vol := CASE o.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END;
    FOREACH l IN ARRAY CASE WHEN o.oprleft = 0 THEN ARRAY[0::oid] ELSE o.oprleft || ARRAY(
        SELECT c.castsource FROM pg_cast c WHERE c.casttarget = o.oprleft AND c.castcontext = 'i'
          AND c.castsource = ANY (types) AND c.castsource <> o.oprleft) END LOOP
      FOREACH r IN ARRAY o.oprright || ARRAY(
          SELECT c.castsource FROM pg_cast c WHERE c.casttarget = o.oprright AND c.castcontext = 'i'
            AND c.castsource = ANY (types) AND c.castsource <> o.oprright) LOOP
        IF l = 0 THEN
          what := format('operator @T@.%s(%s)', o.oprname, (SELECT name FROM tn WHERE oid = r));
          body := format('SELECT public.note(%L); SELECT OPERATOR(pg_catalog.%s) $1::%s',
                         what, o.oprname, (SELECT name FROM tn WHERE oid = o.oprright));
        ELSE
          what := format('operator @T@.%s(%s, %s)', o.oprname, (SELECT name FROM tn WHERE oid = l), (SELECT name FROM tn WHERE oid = r));
          body := format('SELECT public.note(%L); SELECT $1::%s OPERATOR(pg_catalog.%s) $2::%s', what,
                         (SELECT name FROM tn WHERE oid = o.oprleft), o.oprname, (SELECT name FROM tn WHERE oid = o.oprright));
        END IF;
        fn := 'jsonb_ttl_trap_' || left(md5(what), 16);
        INSERT INTO trap_plan VALUES ('operator', what, NULL, ARRAY[
          format('CREATE FUNCTION @T@.%I(%s) RETURNS %s LANGUAGE sql %s AS %L', fn,
                 concat_ws(', ', (SELECT name FROM tn WHERE oid = l), (SELECT name FROM tn WHERE oid = r)),
                 (SELECT name FROM tn WHERE oid = o.oprresult), vol, body),
          format('CREATE OPERATOR @T@.%s (%s RIGHTARG = %s, FUNCTION = @T@.%I)', o.oprname,
                 CASE WHEN l = 0 THEN '' ELSE format('LEFTARG = %s,', (SELECT name FROM tn WHERE oid = l)) END,
                 (SELECT name FROM tn WHERE oid = r), fn)]);
      END LOOP;
    END LOOP;
  END LOOP;
  -- functions: the exact copy, and each variant with one argument of a type that has an
  -- implicit cast to the original's
  FOR f IN SELECT p.*, CASE WHEN p.pronamespace = ext_ns THEN '@S@' ELSE quote_ident(n.nspname) END AS orig_schema,
                  p.pronamespace = 'pg_catalog'::regnamespace AS builtin
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.proname = ANY (fnames) AND p.prokind = 'f' AND p.provariadic = 0
             AND ((p.pronamespace = 'pg_catalog'::regnamespace AND p.pronargs <= 4)
                  OR EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                             AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'))
             AND NOT EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) a JOIN tn ON tn.oid = a WHERE tn.pseudo)
             AND (p.proargmodes IS NULL OR NOT p.proargmodes && ARRAY['b', 'v']::"char"[])
             AND (NOT (SELECT pseudo FROM tn WHERE oid = p.prorettype) OR p.prorettype = 'void'::regtype
                  OR (p.prorettype = 'record'::regtype AND p.proallargtypes IS NOT NULL))
  LOOP
    vol := CASE f.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END;
    outs := ARRAY(SELECT format('OUT %I %s', f.proargnames[i], (SELECT name FROM tn WHERE oid = f.proallargtypes[i]))
                  FROM generate_subscripts(f.proallargtypes, 1) i WHERE f.proargmodes[i] = 'o' ORDER BY i);
    IF f.proargmodes IS NOT NULL AND 't' = ANY (f.proargmodes) THEN
      res := 'RETURNS ' || regexp_replace(pg_get_function_result(f.oid),
                                          '\m' || ext_ns::regnamespace::text || '\.', '@S@.', 'g');
    ELSIF f.prorettype = 'record'::regtype THEN
      res := CASE WHEN f.proretset THEN 'RETURNS SETOF record' ELSE '' END;
    ELSE
      res := 'RETURNS ' || CASE WHEN f.proretset THEN 'SETOF ' ELSE '' END || (SELECT name FROM tn WHERE oid = f.prorettype);
    END IF;
    -- built-in functions also as called without their defaulted arguments; the extension calls its
    -- own with all of theirs
    FOR m IN CASE WHEN f.builtin THEN f.pronargs - f.pronargdefaults ELSE f.pronargs END .. f.pronargs LOOP
      FOR k IN 0 .. m LOOP  -- 0: the exact copy; else argument k replaced
        FOREACH s IN ARRAY CASE WHEN k = 0 THEN ARRAY[0::oid] ELSE ARRAY(SELECT c.castsource FROM pg_cast c
            WHERE c.casttarget = f.proargtypes[k - 1] AND c.castcontext = 'i' AND c.castsource = ANY (types)
              AND c.castsource <> f.proargtypes[k - 1]) END LOOP
          args := ARRAY(SELECT (SELECT name FROM tn WHERE oid = CASE WHEN i = k - 1 THEN s ELSE f.proargtypes[i] END)
                        FROM generate_series(0, m - 1) i ORDER BY i);
          calls := ARRAY(SELECT format('$%s::%s', i + 1, (SELECT name FROM tn WHERE oid = f.proargtypes[i]))
                         FROM generate_series(0, m - 1) i ORDER BY i);
          orig := format('%s.%I(%s)', f.orig_schema, f.proname, array_to_string(calls, ', '));
          sig := quote_ident(f.proname) || '(' || array_to_string(args, ', ') || ')';
          what := 'function @T@.' || sig;
          body := format('SELECT public.note(%L); SELECT %s', what,
                         CASE WHEN f.proretset OR f.prorettype = 'record'::regtype THEN '* FROM ' || orig ELSE orig END);
          INSERT INTO trap_plan VALUES (CASE WHEN f.builtin THEN 'function' ELSE 'extfunction' END, what, sig, ARRAY[
            format('CREATE FUNCTION @T@.%I(%s) %s LANGUAGE sql %s AS %L', f.proname,
                   array_to_string(ARRAY(SELECT format('%I %s', coalesce(nullif(f.proargnames[i + 1], ''), 'a' || (i + 1)), args[i + 1])
                                         FROM generate_series(0, m - 1) i ORDER BY i) || outs, ', '),
                   res, vol, body)]);
        END LOOP;
      END LOOP;
    END LOOP;
  END LOOP;
END
$gen$;
-- the extension's own signatures in its schema: no trap may take one (its script would fail)
CREATE TEMP TABLE ext_sigs AS
SELECT quote_ident(p.proname) || '(' || array_to_string(ARRAY(SELECT tn.name FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, i)
                                                              JOIN tn ON tn.oid = a.t ORDER BY a.i), ', ') || ')' AS sig
FROM pg_proc p JOIN pg_extension e ON e.extname = 'jsonb_ttl' AND p.pronamespace = e.extnamespace;
SQL

# Plan once, in a scratch database per version (each version's own functions and types).
i=0
for v in "${OLD_VERSIONS[@]}" "$DEFAULT_VERSION"; do
  i=$((i + 1))
  qs postgres -c "CREATE DATABASE traps_probe_$i"
  qs "traps_probe_$i" -c "SET search_path = public" -c "CREATE EXTENSION jsonb_ttl VERSION '$v'"
  qs "traps_probe_$i" -c "SELECT set_config('traps.funcs', '$FUNCS', false), set_config('traps.ops', '$OPS', false), set_config('traps.types', '$TYPES', false)" \
    -f "$WORK/gen.sql" \
    -c "\\copy (SELECT kind, what, sig, stmts FROM trap_plan) TO '$WORK/plan_$i.tsv'" \
    -c "\\copy ext_sigs TO '$WORK/sigs_$i.tsv'" >/dev/null
  qs postgres -c "DROP DATABASE traps_probe_$i WITH (FORCE)"
done
sort -u "$WORK"/plan_*.tsv >"$WORK/plan.tsv"
sort -u "$WORK"/sigs_*.tsv >"$WORK/sigs.tsv"
echo "   plan: $(grep -c $'^operator\t' "$WORK/plan.tsv") operators, $(grep -c $'^function\t' "$WORK/plan.tsv") built-in and $(grep -c $'^extfunction\t' "$WORK/plan.tsv") extension function signatures per schema"

qs postgres <<'SQL'
CREATE ROLE mallory LOGIN;
CREATE ROLE reader LOGIN;
-- her own setting, which the worker's batches on her tables run under: her traps first
ALTER ROLE mallory SET search_path = public, pg_catalog;
SQL

# plant DB EXT_SCHEMA WHICH TARGETS…: mallory plants the plan's traps (WHICH: all, or ext: only
# those of the extension's functions, again once they exist) in each target schema; prints the counts.
plant() {
  local db=$1 ext=$2 which=$3
  shift 3
  as mallory "$db" "$PINNED -c check_function_bodies=off" -v ON_ERROR_STOP=1 <<SQL
CREATE TEMP TABLE trap_plan (kind text, what text, sig text, stmts text[]);
CREATE TEMP TABLE ext_sigs (sig text);
\\copy trap_plan FROM '$WORK/plan.tsv'
\\copy ext_sigs FROM '$WORK/sigs.tsv'
\\o /dev/null
SELECT set_config('traps.targets', '$*', false), set_config('traps.ext', '$ext', false), set_config('traps.which', '$which', false);
\\o
CREATE TEMP TABLE trap_counts (operators int, functions int, ext int, skipped int);
DO \$plant\$
DECLARE
  t text; p record; st text; n_op int := 0; n_fn int := 0; n_ext int := 0; n_skip int := 0;
  s text := current_setting('traps.ext');
BEGIN
  FOREACH t IN ARRAY string_to_array(current_setting('traps.targets'), ' ') LOOP
    FOR p IN SELECT DISTINCT ON (what) * FROM trap_plan
             WHERE current_setting('traps.which') = 'all' OR kind = 'extfunction' ORDER BY what, kind LOOP
      -- the extension's own signatures in its own schema are its script's to create
      CONTINUE WHEN p.kind = 'extfunction' AND t = s AND p.sig IN (SELECT sig FROM ext_sigs);
      BEGIN
        FOREACH st IN ARRAY p.stmts LOOP
          EXECUTE replace(replace(st, '@T@', quote_ident(t)), '@S@', quote_ident(s));
        END LOOP;
        IF p.kind = 'operator' THEN n_op := n_op + 1; ELSIF p.kind = 'function' THEN n_fn := n_fn + 1; ELSE n_ext := n_ext + 1; END IF;
      EXCEPTION WHEN others THEN n_skip := n_skip + 1;
      END;
    END LOOP;
  END LOOP;
  INSERT INTO trap_counts VALUES (n_op, n_fn, n_ext, n_skip);
END
\$plant\$;
SELECT format('planted %s operators and %s functions (%s built-in, %s of the extension''s names; %s not plantable here or already there)',
              operators, functions + ext, functions, ext, skipped) FROM trap_counts;
SQL
}

# phase DB TEXT: marks when a step starts, to say which step a trap ran in.
phase() { qs "$1" -c "INSERT INTO public.phases (phase) VALUES (\$phase\$$2\$phase\$)"; }

# api ROLE DB SQL: a statement of the test, as ROLE (mallory: public first on her search_path;
# the superuser: its default one), its output in $WORK/out. An error is a failure, printed.
API_ERRORS=0
api() {
  local role=$1 db=$2 sql=$3 opts=""
  [ "$role" = postgres ] || opts="-c search_path=$(echo "${SEARCH_FIRST:-public},public" | sed "s/^public,public/public/"),pg_catalog"
  if ! as "$role" "$db" "$opts" -v ON_ERROR_STOP=1 -c "$sql" >"$WORK/out" 2>"$WORK/err"; then
    API_ERRORS=$((API_ERRORS + 1))
    fail "[$db as $role] $sql: $(grep -m1 -E 'ERROR|FATAL' "$WORK/err" || head -1 "$WORK/err")"
  fi
}

# exercise DB ROLE X P: ROLE, owning tables P_* in public, runs the whole API (schema X).
exercise() {
  local db=$1 role=$2 x=$3 p=$4 idx
  local r="pg_catalog.regclass" t="pg_catalog.text" iv="pg_catalog.interval" b="pg_catalog.bool"
  phase "$db" "API as $role"
  as "$role" "$db" "$PINNED" -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE TABLE public.${p}_plain (id int, doc jsonb);
CREATE TABLE public.${p}_filter (id int, kind text, doc jsonb);
CREATE TABLE public.${p}_touch (id int, doc jsonb);
CREATE TABLE public.${p}_build (id int, doc jsonb);
CREATE TABLE public.${p}_hide (id int, doc jsonb);
CREATE TABLE public.${p}_rowttl (id int, doc jsonb);
CREATE TABLE public.${p}_ts (id int, created_at timestamptz);
CREATE TABLE public.${p}_tz (id int, at timestamp);
CREATE TABLE public.${p}_num (id int, doc jsonb);
CREATE TABLE public.${p}_gone (id int, doc jsonb);
CREATE TABLE public.${p}_parts (id int, created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE public.${p}_parts_old PARTITION OF public.${p}_parts FOR VALUES FROM ('2019-01-01') TO ('2019-02-01');
CREATE TABLE public.${p}_parts_new PARTITION OF public.${p}_parts FOR VALUES FROM ('2019-02-01') TO ('3000-01-01');
CREATE TABLE public.${p}_parts_default PARTITION OF public.${p}_parts DEFAULT;
GRANT SELECT ON public.${p}_hide TO reader;
INSERT INTO public.${p}_gone SELECT g, '{"at": "2019-01-01"}' FROM generate_series(1, 20) g;
SQL
  fill() {  # expired rows (and live ones) in each table still there
    as "$role" "$db" "$PINNED" >/dev/null 2>"$WORK/err" <<SQL
INSERT INTO public.${p}_plain SELECT g, jsonb_build_object('at', CASE WHEN g % 2 = 0 THEN '2019-01-01' ELSE '2999-01-01' END) FROM generate_series(1, 20) g;
INSERT INTO public.${p}_filter SELECT g, CASE WHEN g % 3 = 0 THEN 'x' ELSE 'y' END, '{"at": "2019-01-01"}' FROM generate_series(1, 20) g;
INSERT INTO public.${p}_touch SELECT g, '{"at": "2019-01-01"}' FROM generate_series(1, 20) g;
INSERT INTO public.${p}_build SELECT g, '{"at": "2019-01-01"}' FROM generate_series(1, 20) g;
INSERT INTO public.${p}_hide SELECT g, jsonb_build_object('at', CASE WHEN g % 2 = 0 THEN '2019-01-01' ELSE '2999-01-01' END) FROM generate_series(1, 20) g;
INSERT INTO public.${p}_rowttl SELECT g, jsonb_build_object('at', '2019-01-01', 'ttl', CASE WHEN g % 2 = 0 THEN 5 ELSE -1 END) FROM generate_series(1, 20) g;
INSERT INTO public.${p}_ts SELECT g, CASE WHEN g % 2 = 0 THEN timestamptz '2019-01-01' ELSE now() END FROM generate_series(1, 20) g;
INSERT INTO public.${p}_tz SELECT g, CASE WHEN g % 2 = 0 THEN timestamp '2019-01-01' ELSE localtimestamp END FROM generate_series(1, 20) g;
INSERT INTO public.${p}_num SELECT g, jsonb_build_object('at', 1546300800 + g) FROM generate_series(1, 20) g;
INSERT INTO public.${p}_parts SELECT g, CASE WHEN g % 2 = 0 THEN timestamptz '2019-01-10' ELSE now() END FROM generate_series(1, 20) g;
SQL
    if grep -q ERROR "$WORK/err"; then fail "[$db as $role] filling the tables: $(grep -m1 ERROR "$WORK/err")"; fi
  }
  fill
  local create="$x.ttl_index_create"
  api "$role" "$db" "SELECT index_name FROM $create('public.${p}_plain'::$r, 'at'::$t, '0'::$iv)"; idx_plain=$(cat "$WORK/out")
  api "$role" "$db" "SELECT FROM $create('public.${p}_filter'::$r, 'at'::$t, '0'::$iv, filter => \$\$kind <> 'x'\$\$::$t)"
  api "$role" "$db" "SELECT FROM $create('public.${p}_touch'::$r, 'at'::$t, '1 day'::$iv, touch => true::$b)"
  # build => false: the statements it returns are run by the table's owner, then adopted
  api "$role" "$db" "SELECT pg_catalog.unnest(build_sql) FROM $create('public.${p}_build'::$r, 'at'::$t, '0'::$iv, build => false::$b)"
  cp "$WORK/out" "$WORK/build_sql"
  while IFS= read -r stmt; do if [ -n "$stmt" ]; then api "$role" "$db" "$stmt"; fi; done <"$WORK/build_sql"
  api "$role" "$db" "SELECT FROM $create('public.${p}_build'::$r, 'at'::$t, '0'::$iv)"
  api "$role" "$db" "SELECT index_name FROM $create('public.${p}_hide'::$r, 'at'::$t, '0'::$iv, hide_expired => true::$b)"; idx_hide=$(cat "$WORK/out")
  api "$role" "$db" "SELECT index_name FROM $create('public.${p}_rowttl'::$r, 'at'::$t, '1 day'::$iv, row_ttl_path => 'ttl'::$t)"; idx_rowttl=$(cat "$WORK/out")
  api "$role" "$db" "SELECT FROM $create('public.${p}_parts'::$r, 'created_at'::$t, '30 days'::$iv, drop_partitions => 'drop'::$t)"
  api "$role" "$db" "SELECT FROM $create('public.${p}_ts'::$r, 'created_at'::$t, '1 day'::$iv)"
  api "$role" "$db" "SELECT FROM $create('public.${p}_tz'::$r, 'at'::$t, '1 day'::$iv, time_zone => 'Europe/Paris'::$t)"
  api "$role" "$db" "SELECT FROM $create('public.${p}_num'::$r, 'at'::$t, '60'::pg_catalog.numeric, numeric_unit => 's'::$t)"
  api "$role" "$db" "SELECT FROM $create('public.${p}_gone'::$r, 'at'::$t, '0'::$iv)"
  # hide_expired: an ordinary reader goes through its policy
  api reader "$db" "SELECT count(*) FROM public.${p}_hide"
  local alter="$x.ttl_index_alter"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_plain'::$r, expire_after => '1 second'::$iv)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_num'::$r, '30'::pg_catalog.numeric)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_tz'::$r, time_zone => 'UTC'::$t)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_plain'::$r, touch => true::$b)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_plain'::$r, touch => false::$b)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_plain'::$r, hide_expired => true::$b)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_plain'::$r, hide_expired => false::$b)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_parts'::$r, drop_partitions => 'detach'::$t)"
  api "$role" "$db" "SELECT FROM $alter('public.${p}_parts'::$r, drop_partitions => 'drop'::$t)"
  # the touch trigger on writes
  api "$role" "$db" "UPDATE public.${p}_touch SET id = id"
  api "$role" "$db" "INSERT INTO public.${p}_touch (id, doc) VALUES (0, '{}'::pg_catalog.jsonb)"
  api "$role" "$db" "SELECT $x.ttl_expire_now('public.${p}_gone'::$r, '5'::pg_catalog.int8)"
  api "$role" "$db" "SELECT $x.ttl_expire_now()"
  api "$role" "$db" "SELECT * FROM $x.ttl_expire_preview('public.${p}_ts'::$r)"
  api "$role" "$db" "SELECT * FROM $x.ttl_expire_preview('public.${p}_plain'::$r, '2999-06-01'::pg_catalog.timestamptz)"
  api "$role" "$db" "SELECT $x.ttl_index_resume('public.${p}_plain'::$r)"
  api "$role" "$db" "SELECT * FROM $x.ttl_statistics()"
  if [ "$role" = postgres ]; then api "$role" "$db" "SELECT $x.ttl_stats_reset()"; fi
  local j="'{\"at\": \"2019-01-01T00:00:00Z\", \"n\": 1546300800, \"ttl\": 5}'::pg_catalog.jsonb"
  api "$role" "$db" "SELECT $x.ttl_timestamp($j), $x.ttl_timestamp($j, 's'::$t), $x.ttl_is_datestring('2019-01-01'::$t)"
  # the pure functions of later versions, when there
  local call fn ns
  for call in "ttl_timestamp($j, 's'::$t, 'UTC'::$t)" "ttl_unix_timestamp('1546300800'::pg_catalog.numeric, 's'::$t)" \
              "ttl_text_timestamp('2019-01-01'::$t)" "ttl_text_timestamp('2019-01-01'::$t, 'UTC'::$t)" \
              "ttl_row_seconds($j)" "ttl_row_seconds('5'::pg_catalog.numeric)" \
              "ttl_expires_at(pg_catalog.now(), '5'::pg_catalog.float8)"; do
    fn=${call%%(*}
    # where the extension keeps it: its schema, or jsonb_ttl_internal (the index helpers, 0.4.0)
    ns=$(qs "$db" -c "SELECT p.pronamespace::regnamespace FROM pg_proc p
                        JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                        JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'jsonb_ttl'
                      WHERE p.proname = '$fn' LIMIT 1")
    [ -n "$ns" ] || continue
    api "$role" "$db" "SELECT $ns.$call"
  done
  # DDL the event triggers act on
  phase "$db" "DDL as $role"
  api "$role" "$db" "ALTER INDEX public.\"$idx_plain\" RENAME TO ${p}_plain_ttl_renamed"
  api "$role" "$db" "ALTER TABLE public.${p}_touch RENAME COLUMN doc TO document"
  api "$role" "$db" "ALTER TABLE public.${p}_filter RENAME COLUMN kind TO sort"
  api "$role" "$db" "ALTER TABLE public.${p}_rowttl RENAME COLUMN doc TO document"
  api "$role" "$db" "DROP INDEX public.\"$idx_rowttl\""
  api "$role" "$db" "DROP INDEX public.\"$idx_hide\""
  api "$role" "$db" "DROP TABLE public.${p}_gone"
  api "$role" "$db" "SELECT $x.ttl_index_drop('public.${p}_build'::$r)"
  fill
}

# scenario NAME EXT_SCHEMA VERSION: a database with the traps planted first, then the extension
# (VERSION, then each update to the default one), the API, the worker and the views.
# at_version DB X VERSION: the superuser calls the API and reads the views of the version
# installed now, with the traps planted for it: an older version's SQL stays in use until its
# update, and its bodies must bind nothing either.
at_version() {
  local db=$1 x=$2 v=${3//./_} r="pg_catalog.regclass"
  phase "$db" "API at $3 as postgres"
  qs "$db" -c "CREATE TABLE public.v$v (id int, doc jsonb)" -c "CREATE TABLE public.n$v (id int, doc jsonb)" >/dev/null
  api postgres "$db" "SELECT index_name FROM $x.ttl_index_create('public.v$v'::$r, 'at'::pg_catalog.text, '1 hour'::pg_catalog.interval)"
  api postgres "$db" "SELECT index_name FROM $x.ttl_index_create('public.n$v'::$r, 'at'::pg_catalog.text, 3600::pg_catalog.numeric)"
  api postgres "$db" "SELECT index_name FROM $x.ttl_index_alter('public.v$v'::$r, 60::pg_catalog.numeric)"
  api postgres "$db" "SELECT * FROM $x.ttl_indexes"
  api postgres "$db" "SELECT * FROM $x.ttl_stats"
  api postgres "$db" "SELECT $x.ttl_expire_now('public.v$v'::$r)"
  api postgres "$db" "SELECT $x.ttl_index_drop('public.v$v'::$r)"
  qs "$db" -c "DROP TABLE public.n$v" >/dev/null
}

scenario() {
  local db=$1 x=$2 from=$3 targets=public step
  echo "-- scenario $db: CREATE EXTENSION jsonb_ttl VERSION '$from' SCHEMA $x${4:+, then $4}"
  API_ERRORS=0
  qs postgres -c "CREATE DATABASE $db"
  qs "$db" >/dev/null <<SQL
GRANT CREATE ON SCHEMA public TO mallory;
CREATE TABLE public.sprung (what text, who name, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON public.sprung TO PUBLIC;
CREATE TABLE public.phases (phase text, at timestamptz DEFAULT clock_timestamp());
-- the recorder: the server log too, for a trap that runs in a transaction that then rolls back
CREATE FUNCTION public.note(what text) RETURNS boolean LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
  RAISE LOG 'jsonb_ttl trap sprung in %: % ran as %', current_database(), what, current_user;
  BEGIN
    INSERT INTO public.sprung (what, who) VALUES (what, current_user);
  EXCEPTION WHEN others THEN NULL;
  END;
  RETURN true;
END \$\$;
SQL
  if [ "$x" = private ]; then
    qs "$db" -c "CREATE SCHEMA $x" -c "GRANT USAGE ON SCHEMA $x TO mallory"
  elif [ "$x" != public ]; then
    qs "$db" -c "CREATE SCHEMA $x" -c "GRANT CREATE, USAGE ON SCHEMA $x TO mallory"
    targets="public $x"
  fi
  echo "   mallory, before the extension exists: $(plant "$db" "$x" all $targets)"
  phase "$db" "CREATE EXTENSION VERSION '$from'"
  if ! out=$(qs "$db" -c "SET search_path = $x" -c "CREATE EXTENSION jsonb_ttl VERSION '$from'" 2>&1); then
    fail "[$db] CREATE EXTENSION jsonb_ttl VERSION '$from': $out"; return
  fi
  x=$(qs "$db" -c "SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'jsonb_ttl'")
  echo "   once it does: $(plant "$db" "$x" ext $targets)"
  at_version "$db" "$x" "$from"
  for step in ${4:-}; do
    phase "$db" "ALTER EXTENSION UPDATE TO '$step'"
    if ! out=$(qs "$db" -c "ALTER EXTENSION jsonb_ttl UPDATE TO '$step'" 2>&1); then
      fail "[$db] ALTER EXTENSION jsonb_ttl UPDATE TO '$step': $out"; return
    fi
    echo "   after the update to $step: $(plant "$db" "$x" ext $targets)"
    at_version "$db" "$x" "$step"
  done
  # schemas of the extension's that mallory may create in: trapped too
  local more
  more=$(qs "$db" -c "SELECT string_agg(DISTINCT n.nspname, ' ') FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
                      JOIN pg_namespace n ON n.oid = p.pronamespace
                      WHERE d.refclassid = 'pg_extension'::regclass AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                        AND n.nspname NOT IN ('public', '$x') AND has_schema_privilege('mallory', n.oid, 'CREATE')")
  [ -n "$more" ] && echo "   in the extension's schemas mallory may create in ($more): $(plant "$db" "$x" all $more)"
  qs "$db" -c "GRANT USAGE ON SCHEMA $x TO reader"

  SEARCH_FIRST=$x exercise "$db" postgres "$x" su
  SEARCH_FIRST=$x exercise "$db" mallory "$x" ml
  phase "$db" "the worker's passes"
  sleep 1.5
  phase "$db" "ttl_expire_now() by the superuser"
  api postgres "$db" "SELECT $x.ttl_expire_now()"
  phase "$db" "superuser reads the views"
  local v
  for v in $(qs "$db" -c "SELECT c.oid::regclass FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
                          WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
                            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jsonb_ttl')
                            AND d.deptype = 'e' AND c.relkind IN ('v', 'm') ORDER BY 1"); do
    api postgres "$db" "SELECT * FROM $v"
  done
  [ "$API_ERRORS" = 0 ] && pass "[$db] the whole API ran without an error, as the superuser and as mallory"
  local sprung logged
  sprung=$(qs "$db" -c "SELECT count(*) FROM public.sprung")
  logged=$(grep -c "jsonb_ttl trap sprung in $db:" "$CLUSTER_DIR/server.log" || true)
  expect_eq "[$db] no trap ran (public.sprung)" 0 "$sprung"
  expect_eq "[$db] no trap ran (server log, rolled back ones too)" 0 "$logged"
  if [ "$sprung" != 0 ]; then
    qs "$db" -F ' | ' -c "SELECT s.what, s.who, (SELECT p.phase FROM public.phases p WHERE p.at <= s.at ORDER BY p.at DESC LIMIT 1),
                                 count(*)
                          FROM public.sprung s GROUP BY 1, 2, 3 ORDER BY min(s.at)" | sed 's/^/       ran: /'
  fi
  if [ "$logged" != "$sprung" ]; then  # some ran in a transaction that rolled back
    grep "jsonb_ttl trap sprung in $db:" "$CLUSTER_DIR/server.log" | sed -E 's/.*trap sprung in [^:]*: //' | sort | uniq -c |
      sed 's/^/       logged: /'
  fi
}

echo "-- 2. scenarios"
scenario fresh public "$DEFAULT_VERSION"
for v in "${OLD_VERSIONS[@]}"; do
  path=$(qs postgres -c "SELECT path FROM pg_extension_update_paths('jsonb_ttl') WHERE source = '$v' AND target = '$DEFAULT_VERSION'")
  if [ -z "$path" ]; then fail "no update path from $v to $DEFAULT_VERSION"; continue; fi
  steps=$(echo "$path" | sed 's/--/\n/g' | tail -n +2 | paste -sd' ')
  scenario "from_$(echo "$v" | tr . _)" public "$v" "$steps"
done
if grep -Eq '^\s*schema\s*=' "$SHARE/jsonb_ttl.control"; then
  echo "-- the control file fixes the extension's schema: no scenario in another one"
else
  scenario in_ext ext "$DEFAULT_VERSION"
  # The control: the extension in a schema only the superuser may create in, the traps still in
  # public, first on mallory's search_path. Whatever runs here, the test's own statements ran.
  scenario in_private private "$DEFAULT_VERSION"
fi

echo "   took $(($(date +%s) - T0)) s"
finish
