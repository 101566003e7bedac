-- 0010: finance rows say when the ledger learnt them (time travel on both axes, docs/time-travel.md).
-- A month-end report closed at K is reproduced from the rows recorded by K; `recorded_at` is the
-- earliest recording of the fact behind the row (a purchase's first delivery, a refund's own).

-- New projection versions (rebuilds) create the column with the table.
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
            price bigint, currency text, storefront text, environment text NOT NULL, occurred_at timestamptz NOT NULL,
            recorded_at timestamptz NOT NULL);
        GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.%1$I, ledger.%2$I, ledger.%3$I TO ledger_app;
        $f$, 'transaction_owners_v' || v, 'user_timelines_v' || v, 'finance_rows_v' || v);
    INSERT INTO ledger.projection_checkpoints (name, version, status) VALUES ('users', v, 'building');
END
$$;

-- Versions that exist already gain the column, filled from the log: the earliest event of the
-- row's transaction and kind (for a transaction refunded more than once, its first refund).
DO $$
DECLARE
    v integer;
BEGIN
    FOR v IN SELECT version FROM ledger.projection_checkpoints WHERE name = 'users' AND status IN ('live', 'building') LOOP
        IF to_regclass(format('ledger.%I', 'finance_rows_v' || v)) IS NULL THEN CONTINUE; END IF;
        EXECUTE format('ALTER TABLE ledger.%I ADD COLUMN recorded_at timestamptz', 'finance_rows_v' || v);
        EXECUTE format($f$
            UPDATE ledger.%I f SET recorded_at = (
                SELECT min(e.recorded_at) FROM ledger.events e
                 WHERE e.stream = 'purchase:' || f.bundle_id || ':' || f.original_transaction_id
                   AND e.data->>'transactionID' = f.transaction_id
                   AND e.event_type = ANY (CASE f.kind WHEN 'refund' THEN ARRAY['Refunded']
                                                       WHEN 'refund_reversed' THEN ARRAY['RefundReversed']
                                                       ELSE ARRAY['Purchased', 'Restored', 'Renewed', 'Recovered'] END))
            $f$, 'finance_rows_v' || v);
        EXECUTE format('UPDATE ledger.%I SET recorded_at = occurred_at WHERE recorded_at IS NULL', 'finance_rows_v' || v);
        EXECUTE format('ALTER TABLE ledger.%I ALTER COLUMN recorded_at SET NOT NULL', 'finance_rows_v' || v);
    END LOOP;
    SELECT active_version INTO v FROM ledger.projections WHERE name = 'users';
    IF v IS NOT NULL THEN
        EXECUTE format('CREATE OR REPLACE VIEW ledger.finance_rows AS SELECT * FROM ledger.%I', 'finance_rows_v' || v);
        GRANT SELECT ON ledger.finance_rows TO ledger_app;
    END IF;
END
$$;
