-- 0002: projections — state derived from ledger.events, rebuilt blue-green.
--
-- Each projection exists in numbered versions (tables suffixed _v1, _v2, …). One version is
-- active; readers go through views that name it, so `ledger rebuild` can build version N+1 beside
-- the live N and switch by replacing the views in one transaction: a reader sees the old version
-- or the new one, never a half-built one. Projection rows are derived data: unlike events, they
-- are updated in place and can always be rebuilt from zero.

CREATE TABLE ledger.projections (
    name           text PRIMARY KEY,
    active_version integer NOT NULL CHECK (active_version >= 1)
);
COMMENT ON TABLE ledger.projections IS
    'Which version of each projection readers see. Locked FOR UPDATE by a switch, FOR SHARE by each worker batch.';

-- Where each version has read the log up to, advanced in the same transaction as the rows it
-- covers: a crash anywhere applies nothing twice and loses nothing.
CREATE TABLE ledger.projection_checkpoints (
    name       text NOT NULL,
    version    integer NOT NULL,
    tx_id      xid8 NOT NULL DEFAULT '0',
    position   bigint NOT NULL DEFAULT 0,
    status     text NOT NULL CHECK (status IN ('building', 'live', 'retired')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

-- UPDATE only so a worker batch may hold the row FOR SHARE (PostgreSQL requires it for row locks).
GRANT SELECT, UPDATE (active_version) ON ledger.projections TO ledger_app;
GRANT SELECT, UPDATE ON ledger.projection_checkpoints TO ledger_app;

-- The tables of version v of the `users` projection:
--   transaction_owners_v: every (app, original transaction, user) that ever owned it — how a
--                         user's purchase streams are found;
--   user_timelines_v:     each user's periods of access and balance entries (LedgerCore.UserTimeline),
--                         evaluated at the instant of each query, so nothing stored goes stale;
--   finance_rows_v:       one row per money-moving fact (LedgerCore.FinanceRow), per original
--                         transaction, indexed by app, environment and time for month-end exports.
CREATE FUNCTION ledger.create_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($f$
        CREATE TABLE ledger.%1$I (
            bundle_id text NOT NULL, original_transaction_id text NOT NULL, user_id text NOT NULL,
            PRIMARY KEY (bundle_id, original_transaction_id, user_id));
        CREATE INDEX ON ledger.%1$I (bundle_id, user_id);
        CREATE TABLE ledger.%2$I (
            bundle_id text NOT NULL, user_id text NOT NULL, timeline jsonb NOT NULL,
            PRIMARY KEY (bundle_id, user_id));
        CREATE TABLE ledger.%3$I (
            bundle_id text NOT NULL, original_transaction_id text NOT NULL, seq integer NOT NULL,
            kind text NOT NULL CHECK (kind IN ('purchase', 'renewal', 'refund', 'refund_reversed')),
            transaction_id text NOT NULL, user_id text, product_id text NOT NULL, quantity integer NOT NULL,
            price bigint, currency text, storefront text, environment text NOT NULL, occurred_at timestamptz NOT NULL,
            PRIMARY KEY (bundle_id, original_transaction_id, seq));
        CREATE INDEX ON ledger.%3$I (bundle_id, environment, occurred_at);
        GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.%1$I, ledger.%2$I, ledger.%3$I TO ledger_app;
        $f$, 'transaction_owners_v' || v, 'user_timelines_v' || v, 'finance_rows_v' || v);
    INSERT INTO ledger.projection_checkpoints (name, version, status) VALUES ('users', v, 'building');
END
$$;

-- Makes version v the one readers see (call inside the switching transaction).
CREATE FUNCTION ledger.activate_users_projection(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE OR REPLACE VIEW ledger.transaction_owners AS SELECT * FROM ledger.%I', 'transaction_owners_v' || v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.user_timelines AS SELECT * FROM ledger.%I', 'user_timelines_v' || v);
    EXECUTE format('CREATE OR REPLACE VIEW ledger.finance_rows AS SELECT * FROM ledger.%I', 'finance_rows_v' || v);
    GRANT SELECT ON ledger.transaction_owners, ledger.user_timelines, ledger.finance_rows TO ledger_app;
    UPDATE ledger.projection_checkpoints SET status = 'retired' WHERE name = 'users' AND version <> v AND status = 'live';
    UPDATE ledger.projection_checkpoints SET status = 'live' WHERE name = 'users' AND version = v;
    INSERT INTO ledger.projections (name, active_version) VALUES ('users', v)
        ON CONFLICT (name) DO UPDATE SET active_version = EXCLUDED.active_version;
END
$$;

SELECT ledger.create_users_projection(1);
SELECT ledger.activate_users_projection(1);
