-- 0023: the appAccountToken links of one user, found without reading the whole log. A link is an
-- event of its token's own stream (`token:<bundle>:<uuid>`, found by token); a merge of two
-- accounts and a subject-access export ask the other way round: which tokens stand for this user.
-- Partial: only link events are indexed, a few per user.
CREATE INDEX events_token_links_by_user_idx ON ledger.events ((data->>'userID'))
    WHERE event_type = 'AppAccountTokenLinked';
