-- 0012: the finance metrics (console, docs/console.md): each original transaction's contributions
-- to the daily series — spans (active subscriptions, MRR) and points (new, renewed, churned,
-- trials converted, refunds, revenue) — kept per transaction like its finance rows, in every
-- version of the `users` projection, and summed by day when asked.

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
    PERFORM ledger.create_metrics_table(v);
    INSERT INTO ledger.projection_checkpoints (name, version, status) VALUES ('users', v, 'building');
END
$$;

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

CREATE OR REPLACE FUNCTION ledger.index_users_projection(v integer, part text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CASE part
    WHEN 'owners' THEN
        EXECUTE format('ALTER TABLE ledger.%1$I ADD PRIMARY KEY (bundle_id, original_transaction_id, user_id);
                        CREATE INDEX ON ledger.%1$I (bundle_id, user_id)', 'transaction_owners_v' || v);
    WHEN 'timelines' THEN
        EXECUTE format('ALTER TABLE ledger.%1$I ADD PRIMARY KEY (bundle_id, user_id)', 'user_timelines_v' || v);
    WHEN 'finance' THEN
        EXECUTE format('CREATE UNIQUE INDEX %2$I ON ledger.%1$I (bundle_id, original_transaction_id, seq);
                        ALTER TABLE ledger.%1$I ADD CONSTRAINT %2$I PRIMARY KEY USING INDEX %2$I',
                       'finance_rows_v' || v, 'finance_rows_v' || v || '_pkey');
    WHEN 'finance_time' THEN
        EXECUTE format('CREATE INDEX ON ledger.%1$I (bundle_id, environment, occurred_at)', 'finance_rows_v' || v);
    WHEN 'metrics' THEN
        EXECUTE format('CREATE INDEX ON ledger.%1$I (bundle_id, original_transaction_id);
                        CREATE INDEX ON ledger.%1$I (bundle_id, environment, kind, from_at)', 'metric_contributions_v' || v);
    ELSE
        RAISE EXCEPTION 'unknown part % of the users projection', part;
    END CASE;
END
$$;

CREATE OR REPLACE FUNCTION ledger.create_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.create_users_projection_tables(v);
    PERFORM ledger.index_users_projection(v, 'owners');
    PERFORM ledger.index_users_projection(v, 'timelines');
    PERFORM ledger.index_users_projection(v, 'finance');
    PERFORM ledger.index_users_projection(v, 'finance_time');
    PERFORM ledger.index_users_projection(v, 'metrics');
END
$$;

CREATE OR REPLACE FUNCTION ledger.activate_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE OR REPLACE VIEW ledger.transaction_owners AS SELECT * FROM ledger.%I', 'transaction_owners_v' || v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.user_timelines AS SELECT * FROM ledger.%I', 'user_timelines_v' || v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.finance_rows AS SELECT * FROM ledger.%I', 'finance_rows_v' || v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.metric_contributions AS SELECT * FROM ledger.%I', 'metric_contributions_v' || v);
    GRANT SELECT ON ledger.transaction_owners, ledger.user_timelines, ledger.finance_rows, ledger.metric_contributions TO ledger_app;
    UPDATE ledger.projection_checkpoints SET status = 'retired' WHERE name = 'users' AND version <> v AND status = 'live';
    UPDATE ledger.projection_checkpoints SET status = 'live' WHERE name = 'users' AND version = v;
    INSERT INTO ledger.projections (name, active_version) VALUES ('users', v)
        ON CONFLICT (name) DO UPDATE SET active_version = EXCLUDED.active_version;
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
