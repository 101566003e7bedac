-- 0028: Finish Transaction. An app that grants content from its server rather than calling
-- finish() in the app has each recorded purchase finished at Apple by the ledger: an outbox,
-- filled when a purchase or renewal is recorded, emptied by the finisher when Apple confirms.
CREATE TABLE ledger.apple_finishes (
    bundle_id       text NOT NULL,
    transaction_id  text NOT NULL,
    environment     text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_by      uuid,
    claimed_until   timestamptz,
    finished_at     timestamptz,
    -- Why a finish is settled without Apple's 200 (Apple refused it for good), or the last failure.
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, transaction_id)
);
CREATE INDEX apple_finishes_due ON ledger.apple_finishes (next_attempt_at) WHERE finished_at IS NULL;
COMMENT ON TABLE ledger.apple_finishes IS 'Transactions to finish at Apple (Finish Transaction), for apps whose server finishes them.';
GRANT SELECT, INSERT, UPDATE ON ledger.apple_finishes TO ledger_app;
