import LedgerChanges
import LedgerIngestion
import LedgerPrivacy
import LedgerReconciliation
import LedgerWebhooks

extension LedgerServices {
    /// Each owner's statement for what the subject-access export and the erasure read of tables
    /// LedgerPrivacy may not name (their owners sit beside or above it): built here, where every
    /// owner is in reach. The statements hold no pool, so `ledger erase` takes the same.
    package static let privacySources = PrivacySources(
        evidence: { EvidenceStore.held($0) },
        unshreddedEvidence: { EvidenceStore.unshredded($0) },
        changes: { ChangeFeed.changes(ofUser: $0, bundleID: $1) },
        webhookDeliveries: { WebhookRegistry.deliveries(toUser: $0, bundleID: $1) },
        webhookFailures: { WebhookRegistry.parked(forUser: $0, bundleID: $1) },
        backfills: { Backfill.linesDone(forUser: $0, bundleID: $1) },
        googlePurchases: { GooglePurchases.held(bundleID: $0, keys: $1) },
        forgetGooglePurchases: { GooglePurchases.forget(bundleID: $0, keys: $1) }, holdChanges: ChangeRelations.lock)
}
