-- 0009: what reconciliation with Apple keeps beside the log (LedgerReconciliation, docs/reconciliation.md).

-- Each app's In-App Purchase key for the App Store Server API. Apple needs the private key to
-- sign each request's token, so it cannot be hashed; like the shared secret it is kept out of the
-- event log (which is forever), never echoed back and never logged.
CREATE TABLE ledger.app_server_api_keys (
    bundle_id   text PRIMARY KEY,
    issuer_id   text NOT NULL CHECK (length(issuer_id) BETWEEN 1 AND 64),
    key_id      text NOT NULL CHECK (length(key_id) BETWEEN 1 AND 64),
    private_key text NOT NULL CHECK (length(private_key) BETWEEN 1 AND 4096),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.app_server_api_keys IS
    'App Store Server API credentials per app (issuer id, key id, the .p8 private key). Never in events or answers.';
GRANT SELECT, INSERT, UPDATE ON ledger.app_server_api_keys TO ledger_app;

-- How far each app's notification history has been read from Apple, per environment, and which
-- server is reading it now. The lease (not a transaction or a session lock) is what makes one
-- server reconcile at a time: a reconciliation waits on Apple for minutes, and a transaction
-- held that long would hold back every reader behind the snapshot fence.
CREATE TABLE ledger.apple_reconciliation (
    bundle_id     text NOT NULL,
    environment   text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    -- Notification history up to here has been read and recorded; the next run starts before it
    -- (an overlap: Apple's history is written a little after each send).
    covered_until timestamptz,
    leased_by     uuid,
    leased_until  timestamptz,
    last_run_at   timestamptz,
    -- What the last run found, or why it failed (Apple's words or ours; never a secret).
    last_result   text,
    PRIMARY KEY (bundle_id, environment)
);
COMMENT ON TABLE ledger.apple_reconciliation IS
    'Notification history read from Apple per app and environment, and the lease of the server reading it.';
GRANT SELECT, INSERT, UPDATE ON ledger.apple_reconciliation TO ledger_app;

-- Renewal info pulled from Apple (Get All Subscription Statuses) is evidence too.
ALTER TABLE ledger.evidence DROP CONSTRAINT evidence_kind_check;
ALTER TABLE ledger.evidence ADD CONSTRAINT evidence_kind_check
    CHECK (kind IN ('signed_transaction', 'signed_renewal_info', 'receipt', 'receipt_answer', 'notification_v1', 'notification_v2'));

-- Apple's CONSUMPTION_REQUESTs waiting for an answer: an outbox filled when such a notification is
-- recorded (by the webhook or by reconciliation) and emptied by the consumption responder, so a
-- request outlives restarts and Apple's outages until its 12 hours run out. Derived from the log
-- and never rebuilt: what was sent to Apple is an event (ConsumptionInformationSent).
CREATE TABLE ledger.consumption_requests (
    bundle_id               text NOT NULL,
    notification_uuid       text NOT NULL,
    transaction_id          text NOT NULL,
    original_transaction_id text NOT NULL,
    environment             text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    -- Apple's signedDate of the request: Apple waits 12 hours from it for an answer.
    requested_at            timestamptz NOT NULL,
    claimed_by              uuid,
    claimed_until           timestamptz,
    attempts                integer NOT NULL DEFAULT 0,
    answered_at             timestamptz,
    -- sent, not_consented, no_consumption_policy, no_app_store_server_api_key, or the last failure.
    outcome                 text,
    PRIMARY KEY (bundle_id, notification_uuid)
);
CREATE INDEX consumption_requests_waiting_idx ON ledger.consumption_requests (requested_at) WHERE answered_at IS NULL;
COMMENT ON TABLE ledger.consumption_requests IS
    'CONSUMPTION_REQUESTs to answer (outbox of the consumption responder); answers are events.';
GRANT SELECT, INSERT, UPDATE ON ledger.consumption_requests TO ledger_app;

-- What `ledger backfill` has done, so a second run (or one resumed after a failure) skips it:
-- one row per app, user and reference (an original transaction id, or a receipt's digest).
CREATE TABLE ledger.backfill_done (
    bundle_id    text NOT NULL,
    user_id      text NOT NULL,
    reference    text NOT NULL,
    transactions integer NOT NULL,
    done_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, user_id, reference)
);
COMMENT ON TABLE ledger.backfill_done IS 'Lines of backfill files already imported from Apple (resumable backfill).';
GRANT SELECT, INSERT ON ledger.backfill_done TO ledger_app;
