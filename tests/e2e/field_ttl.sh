#!/usr/bin/env bash
# Field TTLs end to end (docs/field_ttl.md): the background worker removes an expired one-time
# code from 10,000 documents of a table owned by an ordinary role, beside the table's own TTL
# index; afterwards every document is still there, the code is gone from the expired ones only,
# and the rest of each document is unchanged (checksum of doc - 'otp'). The owner's UPDATE
# trigger runs as the owner and sees jsonb_ttl.expiring on; a document whose update its trigger
# refuses is set aside, and the others go on. ttl_stats counts the fields removed.
source "$(dirname "$0")/lib.sh"
DOCS=10000
start_cluster e2e-field 28876 "jsonb_ttl.frequency = 200" "jsonb_ttl.batch_size = 1000" \
  "TimeZone = 'America/Sao_Paulo'"

q postgres -c "CREATE DATABASE fields"
q fields <<SQL
CREATE EXTENSION jsonb_ttl;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
SET ROLE app;
CREATE TABLE accounts (id int PRIMARY KEY, doc jsonb NOT NULL);
-- $DOCS codes issued an hour ago (expired at 10 minutes), 500 just now; 100 accounts created
-- 40 days ago (expired for the row TTL of 30 days), the others today
INSERT INTO accounts
SELECT g, jsonb_build_object('email', 'u' || g || '@example.com', 'plan', CASE WHEN g % 3 = 0 THEN 'pro' ELSE 'free' END,
          'createdAt', CASE WHEN g > $DOCS + 400 THEN now() - interval '40 days' ELSE now() END,
          'prefs', jsonb_build_object('lang', 'pt-BR', 'n', g),
          'otp', jsonb_build_object('code', lpad((g % 1000000)::text, 6, '0'),
                                    'issuedAt', CASE WHEN g <= $DOCS THEN now() - interval '1 hour' ELSE now() END))
FROM generate_series(1, $DOCS + 500) g;
CREATE TABLE kept AS SELECT id, doc - 'otp' AS rest, doc->'otp' AS otp FROM accounts WHERE id <= $DOCS + 400;
CREATE TABLE audit (id int, who name, expiring text);
CREATE FUNCTION audit_update() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    IF NEW.id = 7 AND NOT NEW.doc ? 'otp' THEN
        RAISE EXCEPTION 'account 7 keeps its code';
    END IF;
    IF NEW.id % 1000 = 0 THEN
        INSERT INTO audit VALUES (NEW.id, current_user, current_setting('jsonb_ttl.expiring', true));
    END IF;
    RETURN NEW;
END
\$\$;
CREATE TRIGGER audit_update BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION audit_update();
SELECT FROM ttl_index_create('accounts', 'createdAt', interval '30 days');
SELECT ttl_field_create('accounts', 'otp.issuedAt', interval '10 minutes');
RESET ROLE;
SQL

eventually_eq "the worker removes the expired codes of $DOCS documents (one refused by its trigger; 400 fresh ones stay)" 120 \
  "401" fields "SELECT count(*) FROM accounts WHERE doc ? 'otp'"
expect_eq "every document the row TTL keeps is still there; the 100 expired accounts are gone" "$((DOCS + 400))|0" \
  "$(q fields -c "SELECT count(*) || '|' || count(*) FILTER (WHERE id > $DOCS + 400) FROM accounts")"
expect_eq "the rest of each document is unchanged (count and checksum of doc - 'otp')" "t" \
  "$(q fields -c "SELECT (SELECT count(*) FROM accounts a JOIN kept k USING (id) WHERE a.doc - 'otp' = k.rest) = $DOCS + 400
                    AND (SELECT sum(hashtext((a.doc - 'otp')::text)) FROM accounts a) = (SELECT sum(hashtext(rest::text)) FROM kept)")"
expect_eq "the codes gone are exactly the expired ones but account 7's; the fresh ones are as they were" "1|7|400" \
  "$(q fields -c "SELECT count(*) FILTER (WHERE a.id <= $DOCS AND a.doc ? 'otp') || '|' ||
                         min(a.id) FILTER (WHERE a.id <= $DOCS AND a.doc ? 'otp') || '|' ||
                         count(*) FILTER (WHERE a.id > $DOCS AND a.doc->'otp' = k.otp)
                  FROM accounts a JOIN kept k USING (id)")"
expect_eq "the owner's trigger ran as the owner, with jsonb_ttl.expiring on" "app|on|10" \
  "$(q fields -c "SELECT string_agg(DISTINCT who::text, ',') || '|' || string_agg(DISTINCT expiring, ',') || '|' || count(*) FROM audit")"
eventually_eq "ttl_stats counts the fields removed in the field TTL's part, the rows deleted in the table's" 10 \
  "field otp.issuedAt:$((DOCS - 1))|:100" fields \
  "SELECT string_agg(coalesce(part, '') || ':' || rows_deleted, '|' ORDER BY part NULLS LAST) FROM ttl_stats WHERE table_name = 'accounts'::regclass"
expect_eq "the document set aside: its field TTL's visit says why" "t" \
  "$(q fields -c "SELECT last_error LIKE '%account 7 keeps its code%' FROM ttl_stats WHERE part = 'field otp.issuedAt'")"

# a table attached since as a partition of a table whose TTL index reads a per-row TTL field
# inside what its field TTL removes: the worker leaves that field TTL alone there, and says why
q fields >/dev/null <<'SQL'
CREATE TABLE stays (id int, created date, doc jsonb) PARTITION BY RANGE (created);
SELECT FROM ttl_index_create('stays', 'doc.checkIn', interval '30 days', row_ttl_path => 'doc.meta.keepFor');
CREATE TABLE stays_2026 (id int, created date, doc jsonb);
SELECT ttl_field_create('stays_2026', 'doc.meta.at', interval '1 minute', remove => 'doc.meta');
ALTER TABLE stays ATTACH PARTITION stays_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
-- (after the ATTACH: before it, the field TTL of the table on its own could rightly remove meta)
INSERT INTO stays VALUES (1, '2026-06-01', '{"checkIn": "2026-06-01", "meta": {"at": "2020-01-01T00:00:00Z", "keepFor": 99999999}}');
SQL
eventually_eq "a field TTL that would remove a TTL index's per-row TTL field is left alone; ttl_stats says why" 10 \
  "true|true" fields "SELECT (SELECT doc ? 'meta' FROM stays)::text || '|' || coalesce((SELECT last_error LIKE '%would remove the date a TTL index%' FROM ttl_stats WHERE table_name = 'stays_2026'::regclass AND part = 'field doc.meta.at'), false)::text"

# a longer expire_after takes effect at once; the field TTL dropped, its index goes with it
q fields -c "INSERT INTO accounts VALUES (20001, jsonb_build_object('otp', jsonb_build_object('issuedAt', now() - interval '20 minutes')))" \
  -c "SELECT ttl_field_alter('accounts', 'otp.issuedAt', interval '1 hour')" >/dev/null
sleep 1
expect_eq "a code younger than the new expire_after stays" "t" \
  "$(q fields -c "SELECT doc ? 'otp' FROM accounts WHERE id = 20001")"
q fields -c "SELECT ttl_field_drop('accounts', 'otp.issuedAt')" >/dev/null
expect_eq "ttl_field_drop: no field TTL, no index left" "0|0" \
  "$(q fields -c "SELECT (SELECT count(*) FROM ttl_indexes WHERE removes IS NOT NULL AND table_name = 'accounts'::regclass) || '|' || (SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'accounts_ttl_field_idx%')")"
finish
