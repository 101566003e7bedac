-- A user's timeline is stored as JSON text, not jsonb. PostgreSQL never looks inside one: it is
-- a LedgerCore.UserTimeline written and read whole by Swift. jsonb made every write parse and
-- re-encode the document and every read print it back (a rebuild's COPY of 26,489 timelines,
-- 116 MB: 2.7 s into jsonb, 1.6 s into text). Support can still query one with `timeline::jsonb`.

DROP VIEW ledger.user_timelines;

DO $$
DECLARE
    version_table record;
    active integer;
BEGIN
    FOR version_table IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'ledger' AND c.relkind = 'r' AND c.relname ~ '^user_timelines_v[0-9]+$'
    LOOP
        EXECUTE format('ALTER TABLE ledger.%I ALTER COLUMN timeline TYPE text USING timeline::text', version_table.relname);
    END LOOP;
    SELECT active_version INTO active FROM ledger.projections WHERE name = 'users';
    EXECUTE format('CREATE VIEW ledger.user_timelines AS SELECT * FROM ledger.%I', 'user_timelines_v' || active);
    GRANT SELECT ON ledger.user_timelines TO ledger_app;
END
$$;

CREATE OR REPLACE FUNCTION ledger.create_users_projection_tables(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($f$
        CREATE TABLE ledger.%1$I (
            bundle_id text NOT NULL, original_transaction_id text NOT NULL, user_id text NOT NULL);
        CREATE TABLE ledger.%2$I (
            bundle_id text NOT NULL, user_id text NOT NULL, timeline text NOT NULL);
        CREATE TABLE ledger.%3$I (
            bundle_id text NOT NULL, original_transaction_id text NOT NULL, seq integer NOT NULL,
            kind text NOT NULL CHECK (kind IN ('purchase', 'renewal', 'refund', 'refund_reversed')),
            transaction_id text NOT NULL, user_id text, product_id text NOT NULL, quantity integer NOT NULL,
            price bigint, currency text, storefront text, environment text NOT NULL, occurred_at timestamptz NOT NULL);
        GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.%1$I, ledger.%2$I, ledger.%3$I TO ledger_app;
        $f$, 'transaction_owners_v' || v, 'user_timelines_v' || v, 'finance_rows_v' || v);
    INSERT INTO ledger.projection_checkpoints (name, version, status) VALUES ('users', v, 'building');
END
$$;
