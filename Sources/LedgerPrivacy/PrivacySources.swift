import LedgerPostgres

/// The statements an export and an erasure need from tables whose owners sit beside or above
/// LedgerPrivacy: the evidence (LedgerIngestion), the changes (LedgerChanges), the webhook
/// deliveries (LedgerWebhooks) and the backfills (LedgerReconciliation). The composition root
/// hands in each owner's own statement. Moving privacy above its owners instead would put it over
/// modules it has no business with (the deliveries, Apple's history) for a few reads; the
/// owners below it (the event store, the audit log) are asked directly.
///
/// Each statement's columns are its owner's promise; the export reads them by name.
package struct PrivacySources: Sendable {
    /// The evidence behind digests: `digest`, `kind`, `received_at`, `body`, `shredded_at`.
    package var evidence: @Sendable (_ digests: [String]) -> PipelinedStatement
    /// The evidence behind digests not emptied yet, with the verifyReceipt answer to a receipt:
    /// `digest`, `body`, `answered`, `answered_body`.
    package var unshreddedEvidence: @Sendable (_ digests: [String]) -> PipelinedStatement
    /// The changes announced about a user: `body`.
    package var changes: @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement
    /// A user's webhook deliveries: `webhook`, `delivered`, `wanted`, `attempts`, `last_error`,
    /// `next_attempt_at`.
    package var webhookDeliveries: @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement
    /// A user's parked changes: `webhook`, `position`, `attempts`, `last_error`, `parked_at`.
    package var webhookFailures: @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement
    /// The backfill lines imported for a user: `reference`, `done_at`.
    package var backfills: @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement
    /// The Google Play purchases among the keys: `purchase_key`, `product_id`, `purchase_token`,
    /// `paid_at`, `settled_at`.
    package var googlePurchases: @Sendable (_ bundleID: String, _ keys: [String]) -> PipelinedStatement
    /// Forgets the tokens of the Google Play purchases among the keys.
    package var forgetGooglePurchases: @Sendable (_ bundleID: String, _ keys: [String]) -> PipelinedStatement
    /// Holds the change projection's batches until the transaction ends: it numbers its changes
    /// under an advisory lock of its own, not under the checkpoint rows the other batches wait on.
    package var holdChanges: PipelinedStatement

    package init(
        evidence: @escaping @Sendable (_ digests: [String]) -> PipelinedStatement,
        unshreddedEvidence: @escaping @Sendable (_ digests: [String]) -> PipelinedStatement,
        changes: @escaping @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement,
        webhookDeliveries: @escaping @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement,
        webhookFailures: @escaping @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement,
        backfills: @escaping @Sendable (_ userID: String, _ bundleID: String) -> PipelinedStatement,
        googlePurchases: @escaping @Sendable (_ bundleID: String, _ keys: [String]) -> PipelinedStatement,
        forgetGooglePurchases: @escaping @Sendable (_ bundleID: String, _ keys: [String]) -> PipelinedStatement,
        holdChanges: PipelinedStatement
    ) {
        self.evidence = evidence
        self.unshreddedEvidence = unshreddedEvidence
        self.changes = changes
        self.webhookDeliveries = webhookDeliveries
        self.webhookFailures = webhookFailures
        self.backfills = backfills
        self.googlePurchases = googlePurchases
        self.forgetGooglePurchases = forgetGooglePurchases
        self.holdChanges = holdChanges
    }
}
