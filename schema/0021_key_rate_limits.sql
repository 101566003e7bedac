-- 0021: an optional request limit per API key (requests per second; NULL: none), so one client's
-- runaway loop cannot take the server from the others (`ledger keys create --rate-limit N/s`).
ALTER TABLE ledger.api_keys ADD COLUMN rate_limit double precision CHECK (rate_limit IS NULL OR rate_limit > 0);
COMMENT ON COLUMN ledger.api_keys.rate_limit IS 'Requests per second this key may make (a second''s worth at once); NULL: no limit.';
