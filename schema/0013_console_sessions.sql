-- 0013: the console's sessions (LedgerConsole, docs/console.md). An API key is exchanged for a
-- session; the cookie carries a random token of which only the SHA-256 is kept (a copy of this
-- table signs nobody in). A session ends on sign-out, after 8 hours idle, or when its key is
-- revoked. The CSRF token every form carries is per session.
CREATE TABLE ledger.console_sessions (
    token_hash   bytea PRIMARY KEY,
    key_id       uuid NOT NULL REFERENCES ledger.api_keys (id),
    csrf         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_sessions_seen_idx ON ledger.console_sessions (last_seen_at);
COMMENT ON TABLE ledger.console_sessions IS 'Console sign-ins: hashed session tokens, their API key, CSRF token and last use.';
GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.console_sessions TO ledger_app;
