-- 0014: ingestion projects its own appends (issue 16).
--
-- A group of ingestions appends its events and, in the same transaction, applies them to the
-- active version of the `users` projection (LedgerProjections/InlineProjection.swift): the answer
-- is ready at commit instead of after the live worker's next batch. The worker still passes
-- every event to move its checkpoint, but leaves the events of a transaction listed here for
-- that version alone: they are applied already. It deletes the rows it has passed.
--
-- Writers of a user's timeline (and of a purchase's finance rows) take an advisory lock on the
-- user (and the purchase stream) before reading the facts they recompute from, so a recomputation
-- from an older snapshot never overwrites a newer one; see ProjectionLocks.swift.
CREATE TABLE ledger.inline_projections (
    version integer NOT NULL,
    tx_id   xid8 NOT NULL,
    PRIMARY KEY (version, tx_id)
);
COMMENT ON TABLE ledger.inline_projections IS 'Transactions whose events their writer applied to this version of the users projection itself.';
GRANT SELECT, INSERT, DELETE ON ledger.inline_projections TO ledger_app;
