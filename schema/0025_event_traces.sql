-- 0025: the trace each event was recorded in, kept until the change projection has read it, so
-- the webhook delivery of a change continues the trace of the request that caused it (a game
-- server follows one purchase from its own call through ours to the webhook it receives).
--
-- Beside the log, not in it: an event is the same fact whichever request recorded it, and a
-- retried request (a new trace, the same event id) must stay a replay. Written only for sampled
-- traces; with tracing off this table stays empty.
CREATE TABLE ledger.event_traces (
    event_id    uuid PRIMARY KEY,
    traceparent text NOT NULL CHECK (traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ledger.event_traces IS
    'W3C traceparent of the request that recorded each event, until its changes are derived.';
GRANT SELECT, INSERT, DELETE ON ledger.event_traces TO ledger_app;

-- The trace a change's deliveries continue: that of the first traced event behind it.
ALTER TABLE ledger.changes ADD COLUMN traceparent text
    CHECK (traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

-- How far a rebuild has come, written by the rebuild about once a second, so every server's
-- /metrics (and an operator's SQL) can show it while `ledger rebuild` runs elsewhere.
ALTER TABLE ledger.projection_checkpoints
    ADD COLUMN progress_phase text,
    ADD COLUMN progress_events bigint,
    ADD COLUMN progress_total bigint;
