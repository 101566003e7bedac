-- 0018: finance rows name the offer a transaction was bought with (Apple's offerType, its
-- identifier and discount type), so discounted revenue reconciles: introductory, promotional,
-- offer-code and win-back sales apart from full-price ones. A refund row carries its purchase's.

-- New projection versions (rebuilds) create the columns with their tables: the earlier
-- definition is renamed and called, so its text is not restated here.
ALTER FUNCTION ledger.create_users_projection_tables(integer) RENAME TO create_users_projection_tables_before_offers;

CREATE FUNCTION ledger.add_finance_offer_columns(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE ledger.%I ADD COLUMN offer_type integer, ADD COLUMN offer_id text, ADD COLUMN offer_discount_type text',
                   'finance_rows_v' || v);
END
$$;

CREATE FUNCTION ledger.create_users_projection_tables(v integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ledger.create_users_projection_tables_before_offers(v);
    PERFORM ledger.add_finance_offer_columns(v);
END
$$;

-- Versions that exist already gain the columns, filled from the log as the projection computes
-- them: the offer of the transaction's first statement in business order.
DO $$
DECLARE
    v integer;
BEGIN
    FOR v IN SELECT version FROM ledger.projection_checkpoints WHERE name = 'users' AND status IN ('live', 'building') LOOP
        IF to_regclass(format('ledger.%I', 'finance_rows_v' || v)) IS NULL THEN CONTINUE; END IF;
        PERFORM ledger.add_finance_offer_columns(v);
        EXECUTE format($f$
            UPDATE ledger.%I f
               SET offer_type = (o.data ->> 'offerType')::integer, offer_id = o.data ->> 'offerIdentifier',
                   offer_discount_type = o.data ->> 'offerDiscountType'
              FROM (SELECT DISTINCT ON (e.stream, e.data ->> 'transactionID') e.stream, e.data
                      FROM ledger.events e
                     WHERE e.event_type IN ('Purchased', 'Restored', 'Renewed', 'Recovered')
                       AND (e.data ? 'offerType' OR e.data ? 'offerIdentifier')
                     ORDER BY e.stream, e.data ->> 'transactionID', e.occurred_at, e.position) o
             WHERE o.stream = 'purchase:' || f.bundle_id || ':' || f.original_transaction_id
               AND o.data ->> 'transactionID' = f.transaction_id
            $f$, 'finance_rows_v' || v);
    END LOOP;
    SELECT active_version INTO v FROM ledger.projections WHERE name = 'users';
    IF v IS NOT NULL THEN
        EXECUTE format('CREATE OR REPLACE VIEW ledger.finance_rows AS SELECT * FROM ledger.%I', 'finance_rows_v' || v);
        GRANT SELECT ON ledger.finance_rows TO ledger_app;
    END IF;
END
$$;
