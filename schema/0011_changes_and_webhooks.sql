-- 0011: changes (what each fact meant for each user), webhooks that push them, and their delivery
-- state (LedgerChanges, LedgerWebhooks; docs/webhooks.md).

-- Every change announced, in announcement order. Derived from the log by the change projection
-- (its checkpoint is the 'changes' row of projection_checkpoints), but never rebuilt away: a
-- change once announced keeps its id and position, and deriving it again (a re-derivation from
-- zero, a clock sweep meeting a batch) adds nothing, because the id is a digest of what makes it
-- this change. Positions are handed out by the one writer that holds the projection's advisory
-- lock until it commits, so they appear in commit order and a reader's cursor never skips one.
CREATE TABLE ledger.changes (
    position    bigint PRIMARY KEY,
    id          uuid NOT NULL UNIQUE,
    bundle_id   text NOT NULL,
    user_id     text NOT NULL,
    type        text NOT NULL,
    occurred_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL,
    -- The change as delivered and listed (LedgerCore.ChangeJSON), written once.
    body        text NOT NULL
);
CREATE INDEX changes_app_idx ON ledger.changes (bundle_id, position);
CREATE INDEX changes_user_idx ON ledger.changes (bundle_id, user_id, position);
COMMENT ON TABLE ledger.changes IS
    'Changes announced to webhooks and the change feed (derived from ledger.events; ids stable across re-derivations).';
GRANT SELECT, INSERT ON ledger.changes TO ledger_app;

-- When each user's next entitlement runs out: what the clock sweep waits for (an expiry has no
-- event behind it). checked_until: expiries up to here were derived.
CREATE TABLE ledger.change_clock (
    bundle_id     text NOT NULL,
    user_id       text NOT NULL,
    checked_until timestamptz NOT NULL,
    next_expiry   timestamptz,
    PRIMARY KEY (bundle_id, user_id)
);
CREATE INDEX change_clock_due_idx ON ledger.change_clock (next_expiry) WHERE next_expiry IS NOT NULL;
GRANT SELECT, INSERT, UPDATE ON ledger.change_clock TO ledger_app;

INSERT INTO ledger.projection_checkpoints (name, version, status) VALUES ('changes', 1, 'live');

-- Webhooks per app. The secret signs each delivery (HMAC-SHA256), so it is kept as given — like
-- the App Store Server API key, never echoed back and never logged.
CREATE TABLE ledger.webhooks (
    bundle_id  text NOT NULL,
    name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    url        text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    secret     text NOT NULL CHECK (length(secret) BETWEEN 16 AND 256),
    -- Change types delivered; NULL: all.
    types      text[],
    -- Changes after this position are delivered (those before the webhook existed are not,
    -- unless replayed).
    starts_after bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, name)
);
COMMENT ON TABLE ledger.webhooks IS 'Where each app''s changes are pushed; the signing secret is never returned.';
GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.webhooks TO ledger_app;

-- Delivery state, one row per webhook and user that ever had a change: a user's changes go
-- out one at a time, in order (the next waits for the previous one's 2xx), and users are
-- independent. The row is leased by the server delivering it (several servers share the work;
-- a lease outlives one attempt's timeout, so two servers never send the same change at once,
-- and a killed server's lease simply runs out). Rows stay when idle: a row deleted as its user's
-- next change is announced would come back from the webhook's start and deliver everything again.
CREATE TABLE ledger.webhook_queue (
    bundle_id        text NOT NULL,
    webhook          text NOT NULL,
    user_id          text NOT NULL,
    -- Changes up to this position were delivered (or parked, or filtered out).
    delivered        bigint NOT NULL,
    -- The user's latest change: there is work while wanted > delivered.
    wanted           bigint NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    first_failed_at  timestamptz,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    leased_by        uuid,
    leased_until     timestamptz,
    last_error       text,
    PRIMARY KEY (bundle_id, webhook, user_id),
    FOREIGN KEY (bundle_id, webhook) REFERENCES ledger.webhooks ON DELETE CASCADE
);
-- Only rows with work: idle users (most of them) cost the dispatcher nothing.
CREATE INDEX webhook_queue_due_idx ON ledger.webhook_queue (next_attempt_at) WHERE wanted > delivered;
GRANT SELECT, INSERT, UPDATE ON ledger.webhook_queue TO ledger_app;

-- Changes that failed for the whole retry window (72 hours by default), parked so the user's
-- later changes go on; listed by GET …/failures and re-sent by POST …/replay.
CREATE TABLE ledger.webhook_failures (
    bundle_id  text NOT NULL,
    webhook    text NOT NULL,
    position   bigint NOT NULL,
    change_id  uuid NOT NULL,
    user_id    text NOT NULL,
    attempts   integer NOT NULL,
    last_error text,
    parked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, webhook, position),
    FOREIGN KEY (bundle_id, webhook) REFERENCES ledger.webhooks ON DELETE CASCADE
);
GRANT SELECT, INSERT, DELETE ON ledger.webhook_failures TO ledger_app;
