-- 0026: Google Play, a second store on the same ledger.
--
-- Each app's Google service account: the JSON key file Google issues, sealed like the other
-- secrets (LedgerSecrets), never in the log. Its email is not a secret and is shown back, so an
-- operator can tell which account the ledger asks Google as.
CREATE TABLE ledger.app_google_service_accounts (
    bundle_id        text PRIMARY KEY,
    client_email     text NOT NULL CHECK (length(client_email) BETWEEN 3 AND 320),
    private_key_file text NOT NULL CHECK (length(private_key_file) BETWEEN 1 AND 32768),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.app_google_service_accounts IS
    'Each app''s Google Play service account: its email, and its JSON key file sealed (LEDGER_SECRETS_KEY).';
GRANT SELECT, INSERT, UPDATE ON ledger.app_google_service_accounts TO ledger_app;

-- Google's answers are evidence as Apple's signatures are: kept as they came, with the push that
-- made the ledger ask. A Google answer is not signed; it is what Google said over TLS when asked.
ALTER TABLE ledger.evidence DROP CONSTRAINT evidence_kind_check;
ALTER TABLE ledger.evidence ADD CONSTRAINT evidence_kind_check
    CHECK (kind IN ('signed_transaction', 'signed_renewal_info', 'receipt', 'receipt_answer', 'notification_v1', 'notification_v2',
                    'app_transaction', 'google_subscription', 'google_product', 'google_notification'));

-- The Google purchases the ledger knows, by the key it names them with (`gp:` + the token's
-- SHA-256 prefix), with the token itself: Google is asked by token, so the ledger keeps it to ask
-- again (a notification, a reconciliation) and to acknowledge. A token is personal data: erasure
-- deletes the user's rows.
--
-- Also the acknowledgement outbox: Google refunds and revokes a purchase nobody acknowledged
-- within three days, so every paid purchase not yet acknowledged (or, for a consumable, consumed)
-- waits here until Google confirms, across restarts; servers share the work by claiming rows.
CREATE TABLE ledger.google_purchases (
    bundle_id       text NOT NULL,
    purchase_key    text NOT NULL CHECK (purchase_key ~ '^gp:[0-9a-f]{32}$'),
    purchase_token  text NOT NULL CHECK (length(purchase_token) BETWEEN 1 AND 4096),
    product_id      text NOT NULL,
    product_kind    text NOT NULL CHECK (product_kind IN ('subscription', 'product')),
    -- Google's first order id (renewals are `<first>..N`): what a refund review names.
    order_id        text,
    -- What Google is to be told: acknowledge (subscriptions, non-consumables) or consume.
    settle          text CHECK (settle IN ('acknowledge', 'consume')),
    -- When the purchase was first paid (Google's three days run from then).
    paid_at         timestamptz,
    settled_at      timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_by      uuid,
    claimed_until   timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, purchase_key)
);
CREATE INDEX google_purchases_unsettled ON ledger.google_purchases (next_attempt_at)
    WHERE settle IS NOT NULL AND settled_at IS NULL;
CREATE INDEX google_purchases_order ON ledger.google_purchases (bundle_id, order_id) WHERE order_id IS NOT NULL;
COMMENT ON TABLE ledger.google_purchases IS
    'Google Play purchase tokens by purchase key, and the acknowledgements and consumptions still owed to Google.';
GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.google_purchases TO ledger_app;

-- Real-time developer notifications received, by Pub/Sub's message id: Pub/Sub delivers at
-- least once, and a redelivery (same id) is answered at once without asking Google again.
CREATE TABLE ledger.google_notifications (
    bundle_id   text NOT NULL,
    message_id  text NOT NULL CHECK (length(message_id) BETWEEN 1 AND 200),
    evidence    text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, message_id)
);
COMMENT ON TABLE ledger.google_notifications IS 'Pub/Sub message ids of the Google Play notifications recorded, for deduplication.';
GRANT SELECT, INSERT, DELETE ON ledger.google_notifications TO ledger_app;

-- How far each app's voided purchases were read (Google's list looks back 30 days at most).
CREATE TABLE ledger.google_reconciliation (
    bundle_id    text PRIMARY KEY,
    voided_until timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.google_reconciliation IS 'How far each app''s Google Play voided purchases were read.';
GRANT SELECT, INSERT, UPDATE ON ledger.google_reconciliation TO ledger_app;
