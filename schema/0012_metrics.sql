-- 0012: the finance metrics (console, docs/console.md): each original transaction's contributions
-- to the daily series — spans (active subscriptions, MRR) and points (new, renewed, churned,
-- trials converted, refunds, revenue) — kept per transaction like its finance rows, in every
-- version of the `users` projection, and summed by day when asked.

-- Each projection function keeps what it did and gains the metrics: the earlier definition is
-- renamed and called, so its text is not restated here.
ALTER FUNCTION ledger.create_users_projection_tables(integer) RENAME TO create_users_projection_tables_before_metrics;
ALTER FUNCTION ledger.index_users_projection(integer, text) RENAME TO index_users_projection_before_metrics;
ALTER FUNCTION ledger.create_users_projection(integer) RENAME TO create_users_projection_before_metrics;
ALTER FUNCTION ledger.activate_users_projection(integer) RENAME TO activate_users_projection_before_metrics;

-- until_at NULL: a point. kind: LedgerCore.MetricContribution.Kind.
CREATE FUNCTION ledger.create_metrics_table(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($f$
        CREATE TABLE ledger.%1$I (
            bundle_id text NOT NULL, original_transaction_id text NOT NULL, kind text NOT NULL, environment text NOT NULL,
            dimension text NOT NULL, from_at timestamptz NOT NULL, until_at timestamptz, value bigint NOT NULL);
        GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.%1$I TO ledger_app;
        $f$, 'metric_contributions_v' || v);
END
$$;

CREATE FUNCTION ledger.create_users_projection_tables(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.create_users_projection_tables_before_metrics(v);
    PERFORM ledger.create_metrics_table(v);
END
$$;

CREATE FUNCTION ledger.index_users_projection(v integer, part text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF part = 'metrics' THEN
        EXECUTE format('CREATE INDEX ON ledger.%1$I (bundle_id, original_transaction_id);
                        CREATE INDEX ON ledger.%1$I (bundle_id, environment, kind, from_at)', 'metric_contributions_v' || v);
    ELSE
        PERFORM ledger.index_users_projection_before_metrics(v, part);
    END IF;
END
$$;

-- The earlier create_users_projection called the earlier table and index functions by name; it is
-- made again from the two new ones.
CREATE FUNCTION ledger.create_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.create_users_projection_tables(v);
    PERFORM ledger.index_users_projection(v, part) FROM unnest(ARRAY['owners', 'timelines', 'finance', 'finance_time', 'metrics']) AS part;
END
$$;
DROP FUNCTION ledger.create_users_projection_before_metrics(integer);

CREATE FUNCTION ledger.activate_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.activate_users_projection_before_metrics(v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.metric_contributions AS SELECT * FROM ledger.%I', 'metric_contributions_v' || v);
    GRANT SELECT ON ledger.metric_contributions TO ledger_app;
END
$$;

-- Versions that exist already gain the table, empty: what was recorded before this migration is
-- counted after the next `ledger rebuild` (the contributions are computed by the domain, in Swift).
DO $$
DECLARE
    v integer;
BEGIN
    FOR v IN SELECT version FROM ledger.projection_checkpoints WHERE name = 'users' AND status IN ('live', 'building') LOOP
        IF to_regclass(format('ledger.%I', 'finance_rows_v' || v)) IS NULL THEN CONTINUE; END IF;
        PERFORM ledger.create_metrics_table(v);
        PERFORM ledger.index_users_projection(v, 'metrics');
    END LOOP;
    SELECT active_version INTO v FROM ledger.projections WHERE name = 'users';
    IF v IS NOT NULL THEN
        EXECUTE format('CREATE OR REPLACE VIEW ledger.metric_contributions AS SELECT * FROM ledger.%I', 'metric_contributions_v' || v);
        GRANT SELECT ON ledger.metric_contributions TO ledger_app;
    END IF;
END
$$;
