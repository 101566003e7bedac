-- 0022: secrets sealed at rest (LedgerSecrets, docs/deployment.md).
--
-- Shared secrets, In-App Purchase keys and webhook secrets are stored sealed with AES-256-GCM
-- under a key only the servers hold (LEDGER_SECRETS_KEY), so a dump, a backup or a replica gives
-- none of them away. Sealing needs the key, which the database never sees: the values stored in
-- clear before this migration are sealed by the first server (or `ledger migrate`) that starts
-- with the key, before it serves anything.

-- The keys the secrets are sealed under, each with a proof: a known text sealed under it. A
-- server whose key is not listed is refused at start-up. Two rows only during a key rotation.
CREATE TABLE ledger.secrets_keys (
    key_id   text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    proof    text NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.secrets_keys IS 'Ids of the keys stored secrets are sealed under, with a proof that opens only under each key. Never a key.';
GRANT SELECT, INSERT, DELETE ON ledger.secrets_keys TO ledger_app;

-- A sealed value is longer than the clear one (two envelopes during a rotation): the length
-- limits move to the API, which checks the clear value.
ALTER TABLE ledger.webhooks DROP CONSTRAINT IF EXISTS webhooks_secret_check;
ALTER TABLE ledger.webhooks ADD CONSTRAINT webhooks_secret_length CHECK (length(secret) BETWEEN 16 AND 2048);
ALTER TABLE ledger.app_server_api_keys DROP CONSTRAINT IF EXISTS app_server_api_keys_private_key_check;
ALTER TABLE ledger.app_server_api_keys ADD CONSTRAINT app_server_api_keys_private_key_length CHECK (length(private_key) BETWEEN 1 AND 16384);
