import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore
import LedgerIngestion
import LedgerPostgres
import Logging

/// Recovers notifications the ledger missed: Apple retries a failed delivery for about three
/// days, so an outage longer than that loses them unless the app's
/// notification history is read. For each environment the app accepts, this reads the history
/// since the window it last covered (minus an overlap: Apple writes its history a little after
/// each send), verifies every notification and records those not yet recorded — the same path
/// as the webhook, so a notification's UUID makes one already recorded a no-op.
///
/// One server at a time reads an app's history (`ReconciliationCoverage`'s lease); another that
/// tries meanwhile skips it and says so.
package struct NotificationRecovery: Sendable {
    /// What one run did for one app and environment.
    package struct Report: Sendable, CustomStringConvertible {
        package var bundleID: String
        package var environment: AppleEnvironment
        package var from: Date?
        package var to: Date?
        package var seen = 0
        package var recorded = 0
        package var alreadyRecorded = 0
        /// Notifications that did not verify (forged, another app's, a refused environment).
        package var refused = 0
        /// Another server held the lease: nothing was read.
        package var skipped = false

        package var description: String {
            if skipped { return "\(bundleID) \(environment.rawValue): skipped, another server is reconciling it" }
            let window = [from, to].map { $0.map(RFC3339.string) ?? "?" }.joined(separator: " – ")
            return "\(bundleID) \(environment.rawValue) \(window): \(seen) notifications in Apple's history, \(recorded) recorded, "
                + "\(alreadyRecorded) already recorded, \(refused) refused"
        }
    }

    /// How a run's findings are counted (metrics): `recorded`, `already_recorded`, `refused`.
    package typealias Observe = @Sendable (_ result: String, _ count: Int) -> Void

    let ingestor: Ingestor
    let api: AppStoreServerAPIClient
    let coverage: ReconciliationCoverage
    let holder = UUID()
    let overlap: TimeInterval
    let firstWindow: TimeInterval
    let observe: Observe
    let logger: Logger
    /// Apple keeps 180 days of notification history.
    static let historyLimit: TimeInterval = 180 * 86_400

    /// `overlap`: how far before the covered window a run starts again; `firstWindow`: how far
    /// back the first run of an app reads; `lease`: how long a server may hold an app's history
    /// without renewing (renewed after every page).
    package init(
        ingestor: Ingestor, api: AppStoreServerAPIClient, pool: PostgresPool, overlap: TimeInterval = 3600,
        firstWindow: TimeInterval = 7 * 86_400, lease: Duration = .seconds(300), logger: Logger,
        observe: @escaping Observe = { _, _ in }
    ) {
        self.ingestor = ingestor
        self.api = api
        self.coverage = ReconciliationCoverage(pool: pool, duration: lease)
        self.overlap = overlap
        self.firstWindow = firstWindow
        self.observe = observe
        self.logger = logger
    }

    /// Reads the app's notification history in every environment it accepts and records what
    /// was missed. `since` overrides where the window starts (at most 180 days back).
    package func reconcile(bundleID: String, since: Date? = nil, now: Date = Date()) async throws -> [Report] {
        let app = try await ingestor.directory.app(bundleID)
        guard let key = try app.serverAPI else {
            throw LedgerError(
                .appleAPINotConfigured,
                "\(bundleID) has no App Store Server API key; configure app_store_server_api first")
        }
        var reports: [Report] = []
        for environment in [AppleEnvironment.production, .sandbox] where app.settings.environments.contains(environment) {
            guard let lease = try await coverage.lease(bundleID, environment, holder: holder) else {
                reports.append(Report(bundleID: bundleID, environment: environment, skipped: true))
                continue
            }
            reports.append(try await read(lease, key: key, since: since, now: now))
        }
        return reports
    }

    /// One environment's window, read page by page under the lease.
    private func read(_ lease: ReconciliationCoverage.Lease, key: ServerAPICredentials, since: Date?, now: Date) async throws -> Report {
        let start = max(
            since ?? lease.coveredUntil.map { $0.addingTimeInterval(-overlap) } ?? now.addingTimeInterval(-firstWindow),
            now.addingTimeInterval(-Self.historyLimit + 60))
        var report = Report(bundleID: lease.bundleID, environment: lease.environment, from: start, to: now)
        do {
            try await api.notificationHistory(from: start, to: now, in: lease.environment, as: key) { page in
                for item in page.notificationHistory ?? [] {
                    guard let signed = item.signedPayload else { continue }
                    try await record(signed, bundleID: lease.bundleID, into: &report)
                }
                guard try await coverage.renew(lease) else {
                    throw LedgerError(.reconciliationLeaseLost, "another server took over reconciling \(lease.bundleID)")
                }
            }
        } catch {
            try? await coverage.release(lease, coveredUntil: nil, result: "failed: \(error)")
            throw error
        }
        // Covered only when this window joins what was covered before (an explicit later `since`
        // leaves a gap that the next run must still read).
        let joins = lease.coveredUntil.map { start <= $0 } ?? true
        try await coverage.release(lease, coveredUntil: joins ? now : nil, result: report.description)
        logger.info(
            "reconciled notification history",
            metadata: [
                "app.bundle_id": "\(lease.bundleID)", "apple.environment": "\(lease.environment.rawValue)",
                "reconcile.seen": "\(report.seen)", "reconcile.recorded": "\(report.recorded)", "reconcile.refused": "\(report.refused)",
            ])
        return report
    }

    /// One notification from Apple's history, through the webhook's own path.
    private func record(_ signedPayload: String, bundleID: String, into report: inout Report) async throws {
        report.seen += 1
        let body = try JSONSerialization.data(withJSONObject: ["signedPayload": signedPayload])
        do {
            switch try await ingestor.ingestNotification(bundleID: bundleID, body: body) {
            case .recorded:
                report.recorded += 1
                observe("recorded", 1)
            case .alreadyRecorded:
                report.alreadyRecorded += 1
                observe("already_recorded", 1)
            }
        } catch let error as LedgerError where error.kind == .unverifiable || error.kind == .invalid {
            // A forged or foreign item in the answer is refused like a forged webhook; the rest go on.
            report.refused += 1
            observe("refused", 1)
            logger.warning(
                "a notification from Apple's history was refused", metadata: ["app.bundle_id": "\(bundleID)", "code": "\(error.code)"])
        }
    }
}
