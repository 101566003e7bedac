-- 0003: what the HTTP edge keeps beside the log — raw evidence, app secrets, API keys.

-- Raw Apple evidence, content-addressed: an event's metadata `evidence` ("sha256:<hex>") names a
-- row here, so an auditor can re-verify the JWS, re-send the receipt, or read the notification
-- exactly as it came. Like events, evidence is never changed or removed.
CREATE TABLE ledger.evidence (
    digest      text PRIMARY KEY CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    bundle_id   text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('signed_transaction', 'receipt', 'receipt_answer', 'notification_v1', 'notification_v2')),
    body        bytea NOT NULL,
    -- For a verifyReceipt answer, the receipt it answers.
    answers     text REFERENCES ledger.evidence (digest),
    received_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.evidence IS
    'Raw Apple evidence by SHA-256 (V1 notification passwords are redacted before hashing). Insert-only.';
CREATE TRIGGER evidence_no_update_delete BEFORE UPDATE OR DELETE ON ledger.evidence
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_rewrite();
CREATE TRIGGER evidence_no_truncate BEFORE TRUNCATE ON ledger.evidence
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_rewrite();
GRANT SELECT, INSERT ON ledger.evidence TO ledger_app;

-- Each app's shared secret (legacy receipts and V1 notifications). Apple needs it in clear, so
-- it cannot be hashed; it is kept out of the event log (which is forever) and never echoed back.
CREATE TABLE ledger.app_secrets (
    bundle_id     text PRIMARY KEY,
    shared_secret text NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE ON ledger.app_secrets TO ledger_app;

-- API keys: only a SHA-256 of the key is stored; the key itself is shown once, at creation.
CREATE TABLE ledger.api_keys (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    -- The key's first characters, to recognise it in a list ("lk_3f9a…").
    prefix     text NOT NULL,
    key_hash   bytea NOT NULL UNIQUE,
    scopes     text[] NOT NULL CHECK (scopes <@ ARRAY['read', 'ingest', 'finance', 'admin']),
    -- NULL: every app.
    bundle_id  text,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
GRANT SELECT, INSERT, UPDATE (revoked_at) ON ledger.api_keys TO ledger_app;
