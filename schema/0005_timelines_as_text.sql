-- A user's timeline is stored as JSON text, not jsonb. PostgreSQL never looks inside one: it is
-- a LedgerCore.UserTimeline written and read whole by Swift. jsonb made every write parse and
-- re-encode the document and every read print it back (a rebuild's COPY of 26,489 timelines,
-- 116 MB: 2.7 s into jsonb, 1.6 s into text). Support can still query one with `timeline::jsonb`.
-- New versions are created with a text column (0004); this converts the ones that exist.

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
