import Foundation
import LedgerCore
import LedgerIngestion
import Logging

/// `ledger reconcile` for an app on Google Play. Google keeps no history of the notifications it
/// sent, as Apple does; what it keeps is each purchase's present and the voided purchases of the
/// last 30 days. So a run reads the voided list from `since` (or where the hourly poll stopped),
/// then asks Google about every subscription the ledger knows and Google still keeps, recording
/// what changed — a renewal, a cancellation, a hold — that a lost push never told. One-time
/// products change only by refund, which the voided list covers.
package struct GoogleReconciliation: Sendable {
    /// What one run did for one app.
    package struct Report: Sendable, CustomStringConvertible {
        package var bundleID: String
        package var from: Date?
        package var to: Date
        /// Voided purchases that recorded a refund or revocation not recorded before.
        package var refundsRecorded = 0
        package var subscriptionsAsked = 0
        package var changed = 0
        /// Tokens Google no longer keeps (ended more than 60 days ago): not asked about again.
        package var gone = 0
        /// Subscriptions Google refused to answer about (the error is logged), left for the next run.
        package var refused = 0

        package var description: String {
            "\(bundleID) google_play from \(from.map(RFC3339.string) ?? "the last poll"): \(refundsRecorded) refunds recorded, "
                + "\(subscriptionsAsked) subscriptions asked, \(changed) changed, \(gone) gone, \(refused) refused"
        }
    }

    let ingestor: Ingestor
    let refunds: GoogleRefundPoll
    let logger: Logger
    /// Subscriptions read from the database at a time.
    static let page = 200

    package init(ingestor: Ingestor, refunds: GoogleRefundPoll, logger: Logger) {
        self.ingestor = ingestor
        self.refunds = refunds
        self.logger = logger
    }

    /// One run for the app. Google away or refusing the service account stops the run with that
    /// error (asking on would only spend the quota); a refusal about one token is counted and the
    /// run goes on.
    package func reconcile(bundleID: String, since: Date? = nil, now: Date = Date()) async throws -> Report {
        let app = try await ingestor.directory.app(bundleID)
        guard app.settings.googlePlay != nil, try app.googleAccount != nil else {
            throw LedgerError(
                .googlePlayNotConfigured, "\(bundleID) has no Google Play package and service account; configure google_play first")
        }
        var report = Report(bundleID: bundleID, from: since, to: now)
        report.refundsRecorded = try await refunds.poll(bundleID, from: since, now: now)
        var after: String?
        while !Task.isCancelled {
            let known = try await ingestor.googlePurchases.subscriptions(bundleID: bundleID, after: after, limit: Self.page)
            for purchase in known {
                report.subscriptionsAsked += 1
                do {
                    switch try await ingestor.refreshGooglePurchase(purchase, bundleID: bundleID) {
                    case .changed: report.changed += 1
                    case .gone: report.gone += 1
                    case .unchanged: break
                    }
                } catch let error as LedgerError where error.code != .googleUnavailable && error.code != .googleAPIUnauthorized {
                    report.refused += 1
                    logger.warning(
                        "Google refused to answer about a subscription during reconciliation",
                        metadata: ["app.bundle_id": "\(bundleID)", "purchase.key": "\(purchase.key)", "code": "\(error.code)"])
                }
            }
            guard known.count == Self.page, let last = known.last else { break }
            after = last.key
        }
        logger.info(
            "reconciled Google Play purchases",
            metadata: [
                "app.bundle_id": "\(bundleID)", "reconcile.asked": "\(report.subscriptionsAsked)", "reconcile.changed": "\(report.changed)",
                "reconcile.refunds": "\(report.refundsRecorded)",
            ])
        return report
    }
}
