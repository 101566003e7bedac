-- 0027: asking Google again. `ledger reconcile` and a user's sync ask Google about purchases the
-- ledger already knows; a token Google no longer keeps (410: ended more than 60 days ago) is
-- marked so that later runs stop asking about it, and each row says when it was last asked.
ALTER TABLE ledger.google_purchases
    ADD COLUMN refreshed_at timestamptz,
    ADD COLUMN gone_at      timestamptz;
CREATE INDEX google_purchases_to_refresh ON ledger.google_purchases (bundle_id, purchase_key)
    WHERE product_kind = 'subscription' AND gone_at IS NULL;
