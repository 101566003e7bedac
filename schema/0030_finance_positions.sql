-- 0030: each finance row names the log position of the fact it comes from (a purchase's first
-- recording, the refund, the reversal), so an auditor can prove one row on its own against a
-- signed digest (docs/proofs.md) without re-reading the log.

-- New projection versions (rebuilds) create the column with their tables.
ALTER FUNCTION ledger.create_users_projection_tables(integer) RENAME TO create_users_projection_tables_before_positions;

CREATE FUNCTION ledger.add_finance_position_column(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE ledger.%I ADD COLUMN position bigint', 'finance_rows_v' || v);
END
$$;

CREATE FUNCTION ledger.create_users_projection_tables(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.create_users_projection_tables_before_positions(v);
    PERFORM ledger.add_finance_position_column(v);
END
$$;

-- Versions that exist already gain the column. Rows written from now on carry their position;
-- rows projected before keep none until `ledger rebuild` computes every row again.
DO $$
DECLARE
    v integer;
BEGIN
    FOR v IN SELECT version FROM ledger.projection_checkpoints WHERE name = 'users' AND status IN ('live', 'building') LOOP
        IF to_regclass(format('ledger.%I', 'finance_rows_v' || v)) IS NULL THEN CONTINUE; END IF;
        PERFORM ledger.add_finance_position_column(v);
    END LOOP;
    SELECT active_version INTO v FROM ledger.projections WHERE name = 'users';
    IF v IS NOT NULL THEN
        EXECUTE format('CREATE OR REPLACE VIEW ledger.finance_rows AS SELECT * FROM ledger.%I', 'finance_rows_v' || v);
        GRANT SELECT ON ledger.finance_rows TO ledger_app;
    END IF;
END
$$;
