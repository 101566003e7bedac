-- 0017: purchases found by the app transaction they were made in.
--
-- StoreKit transactions carry the app's own purchase (`appTransactionID`). When Apple says a
-- parent withdrew consent for an app transaction (RESCIND_CONSENT), every user holding a purchase
-- made in it must show it: the projections find those purchases through this index instead of
-- reading the log. Partial, so facts without the field cost nothing; the projections' query
-- repeats its predicate word for word so the planner can use it.
CREATE INDEX events_app_transaction_idx ON ledger.events ((data ->> 'appTransactionID'))
 WHERE event_type IN ('Purchased', 'Restored', 'Renewed', 'Recovered') AND data ? 'appTransactionID';
