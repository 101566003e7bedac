import Foundation
import GooglePlay
import LedgerBackground
import LedgerCore
import LedgerIngestion
import LedgerPostgres
import Logging

/// Refunds and chargebacks read from Google's voided purchases list, on start-up and every
/// `interval`, for every app with a service account: a notification Pub/Sub never delivered (a
/// push endpoint down for longer than Pub/Sub retries, a subscription set up late) still reaches
/// the books. Subscriptions' renewals included (`type=1`), quantity-based partial refunds too,
/// from an hour before where the last pass stopped (`overlap`) — no further back than Google's
/// 30 days — page by page.
package struct GoogleRefundPoll: Sendable {
    let ingestor: Ingestor
    let directory: AppDirectory
    let pool: PostgresPool
    let interval: Duration
    /// A pass asks Google page after page for each app, as long as Google takes: failures are
    /// checked, not silence.
    package let heartbeat = Heartbeat("google refunds", checksSilence: false)
    let logger: Logger

    package init(ingestor: Ingestor, directory: AppDirectory, pool: PostgresPool, interval: Duration, logger: Logger) {
        self.ingestor = ingestor
        self.directory = directory
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    package var loop: BackgroundLoop {
        .periodic(every: interval, reportingTo: heartbeat, backoff: .storeRound, logger: logger) { try await pass() }
    }

    /// One pass over every app with a service account: how many voided purchases recorded something
    /// new, by app.
    /// One app's failure (Google away, a refused account) is its own line; the next pass retries.
    @discardableResult
    package func pass(now: Date = Date()) async throws -> [String: Int] {
        var recorded: [String: Int] = [:]
        for bundleID in try await directory.appsWithGoogleAccounts() where !Task.isCancelled {
            do {
                recorded[bundleID] = try await poll(bundleID, now: now)
            } catch {
                logger.warning(
                    "Google's voided purchases could not be read; they are read again next interval",
                    metadata: ["app.bundle_id": "\(bundleID)", "error": "\(error)"])
            }
        }
        return recorded
    }

    /// Each pass reads again the last hour before its checkpoint: a purchase voided just before a
    /// pass may reach Google's list after it, and reading one again records nothing new.
    static let overlap: TimeInterval = 3600
    /// Google's list looks back 30 days.
    static let listLimit: TimeInterval = 30 * 86_400

    /// One app: the voided purchases since its checkpoint (less the overlap), or since `from`, to
    /// now, each recorded, then the checkpoint moved; how many recorded something new.
    package func poll(_ bundleID: String, from: Date? = nil, now: Date) async throws -> Int {
        let app = try await directory.app(bundleID)
        guard let settings = app.settings.googlePlay, let account = try app.googleAccount else { return 0 }
        let window = now.addingTimeInterval(-Self.listLimit + 60)
        let checkpoint = try await checkpoint(bundleID)
        let since = max(from ?? checkpoint?.addingTimeInterval(-Self.overlap) ?? window, window)
        let pages = try await ingestor.google.client(for: account).voidedPurchases(
            package: settings.packageName, .init(startTime: since, type: 1, includeQuantityBasedPartialRefund: true))
        var count = 0
        for voided in pages.flatMap(\.model.voidedPurchases) {
            if try await ingestor.recordGoogleVoided(voided, bundleID: bundleID) { count += 1 }
        }
        // A later `from` than the checkpoint leaves a gap the next pass must still read.
        if let checkpoint, since > checkpoint, since > window { return count }
        try await pool.query(
            """
            INSERT INTO ledger.google_reconciliation (bundle_id, voided_until) VALUES ($1, $2)
            ON CONFLICT (bundle_id) DO UPDATE SET voided_until = EXCLUDED.voided_until, updated_at = now()
            """, [bundleID, now])
        return count
    }

    func checkpoint(_ bundleID: String) async throws -> Date? {
        try await pool.query("SELECT voided_until FROM ledger.google_reconciliation WHERE bundle_id = $1", [bundleID]).first.map {
            try $0["voided_until"].date()
        }
    }
}
