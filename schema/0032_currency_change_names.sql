-- 0032: the currency's changes are named currency.granted, currency.spent and currency.reversed
-- from 0.10 on (balance.credited, balance.debited and balance.reversed before). A webhook whose
-- types name either name of one gets the other beside it, so it is delivered the changes of both
-- names: those a server of the previous release derives during a rolling upgrade, those this
-- release derives, and those stored before. Only adds to a list: expand, not contract.
UPDATE ledger.webhooks w
   SET types = ARRAY(
           SELECT DISTINCT t FROM unnest(w.types || ARRAY(
               SELECT CASE x WHEN 'balance.credited' THEN 'currency.granted' WHEN 'balance.debited' THEN 'currency.spent'
                             WHEN 'balance.reversed' THEN 'currency.reversed' WHEN 'currency.granted' THEN 'balance.credited'
                             WHEN 'currency.spent' THEN 'balance.debited' ELSE 'balance.reversed' END
                 FROM unnest(w.types) AS x
                WHERE x IN ('balance.credited', 'balance.debited', 'balance.reversed',
                            'currency.granted', 'currency.spent', 'currency.reversed'))) AS t
            ORDER BY t)
 WHERE w.types && ARRAY['balance.credited', 'balance.debited', 'balance.reversed']::text[];
