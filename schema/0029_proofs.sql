-- 0029: a Merkle tree over the whole log (RFC 9162 hashing), so a digest signed outside the
-- database commits to everything the log held, and one event can be proven in it on its own.
--
-- Leaves are appended in the log's order (the order every projection reads it) by one writer at a
-- time, which holds proof_tree's row. A leaf commits to its event through a keyed commitment:
-- HMAC-SHA-256 under the leaf's own random salt. An erasure forgets the salts of the events it
-- rewrites: their leaves (and so every digest signed before) stay as they were, and nothing left
-- in the tree can confirm a guess of the identity erased.

-- Where the tree has read the log up to, and how many leaves it has.
CREATE TABLE ledger.proof_tree (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    tx_id      xid8 NOT NULL DEFAULT '0',
    position   bigint NOT NULL DEFAULT 0,
    size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO ledger.proof_tree DEFAULT VALUES;
COMMENT ON TABLE ledger.proof_tree IS 'The Merkle tree''s place in the log; its row is held by the one writer extending the tree.';

CREATE TABLE ledger.proof_leaves (
    leaf_index bigint PRIMARY KEY CHECK (leaf_index >= 0),
    position   bigint NOT NULL UNIQUE,
    -- 32 random bytes; NULL once an erasure has forgotten it.
    salt       bytea CHECK (length(salt) = 32),
    commitment bytea NOT NULL CHECK (length(commitment) = 32)
);
COMMENT ON TABLE ledger.proof_leaves IS 'Each leaf of the Merkle tree: the event''s position and its keyed commitment.';

-- Every complete subtree above the leaves: level l index i covers leaves [i·2^l, (i+1)·2^l)
-- (a leaf's own hash, level 0, is computed from its row). Any root or proof is computed from
-- O(log² n) of them.
CREATE TABLE ledger.proof_nodes (
    level smallint NOT NULL CHECK (level BETWEEN 1 AND 62),
    index bigint NOT NULL CHECK (index >= 0),
    hash  bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, index)
);
COMMENT ON TABLE ledger.proof_nodes IS 'The Merkle tree''s complete subtrees (RFC 9162 hashes).';

GRANT SELECT, UPDATE ON ledger.proof_tree TO ledger_app;
GRANT SELECT, INSERT ON ledger.proof_leaves TO ledger_app;
GRANT UPDATE (salt) ON ledger.proof_leaves TO ledger_app;
GRANT SELECT, INSERT ON ledger.proof_nodes TO ledger_app;
