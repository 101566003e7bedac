-- 0019: the app's own purchase (a signed AppTransaction, posted by the app or pulled from Apple on
-- a sync) is evidence too.
ALTER TABLE ledger.evidence DROP CONSTRAINT evidence_kind_check;
ALTER TABLE ledger.evidence ADD CONSTRAINT evidence_kind_check
    CHECK (kind IN ('signed_transaction', 'signed_renewal_info', 'receipt', 'receipt_answer', 'notification_v1', 'notification_v2',
                    'app_transaction'));
