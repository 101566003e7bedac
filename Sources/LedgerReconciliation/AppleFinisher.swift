import AppStoreServerAPI
import Foundation
import LedgerBackground
import LedgerCore
import LedgerIngestion
import Logging

/// Finishes at Apple every purchase and renewal the ledger recorded for an app whose server
/// finishes transactions (Finish Transaction). The outbox (`AppleFinishes`) keeps each one across
/// restarts and Apple's outages; each failure waits longer before the next try. Apple's final
/// refusals (an unknown transaction, an app without an In-App Purchase key) settle the row with
/// the reason: there is nothing a retry would change.
package struct AppleFinisher: Sendable {
    let finishes: AppleFinishes
    let directory: AppDirectory
    let api: AppStoreServerAPIClient
    let holder = UUID()
    /// A round waits on Apple: failures are checked, not silence.
    package let heartbeat = Heartbeat("apple finisher", checksSilence: false)
    let logger: Logger
    let observe: @Sendable (_ outcome: String) -> Void

    package init(
        finishes: AppleFinishes, directory: AppDirectory, api: AppStoreServerAPIClient, logger: Logger,
        observe: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.finishes = finishes
        self.directory = directory
        self.api = api
        self.logger = logger
        self.observe = observe
    }

    /// Finishes what is due (at most `limit`); the outcome of each, by transaction id.
    @discardableResult
    package func finishDue(limit: Int = 50) async throws -> [String: String] {
        await OutboxRound.run(
            try await finishes.claim(limit: limit, holder: holder), key: \.transactionID, observe: observe, work: finish
        ) { due, error in
            let delay = Backoff.outboxRetry.ceiling(afterFailures: due.attempts)
            try? await finishes.retry(due, after: delay, failure: "\(error)")
            logger.warning(
                "a transaction could not be finished at Apple yet; it is tried again",
                metadata: ["app.bundle_id": "\(due.bundleID)", "apple.transaction_id": "\(due.transactionID)", "retry_in": "\(delay)"])
        }
    }

    /// One transaction finished at Apple, or settled with the reason Apple refused it for good.
    func finish(_ due: AppleFinishes.Due) async throws -> String {
        do {
            let app = try await directory.app(due.bundleID)
            try await api.finishTransaction(due.transactionID, in: due.environment, as: try AppleLookups.key(of: app))
            try await finishes.finished(due)
            return "finished"
        } catch let error as LedgerError where error.kind != .unavailable {
            // Refused for good (not found, no key, unauthorized): settled, the reason kept.
            try await finishes.finished(due, note: "\(error.code): \(error.message)")
            logger.warning(
                "Apple refused to finish a transaction; it is not tried again",
                metadata: ["app.bundle_id": "\(due.bundleID)", "apple.transaction_id": "\(due.transactionID)", "code": "\(error.code)"])
            return "refused"
        }
    }

    /// What is due finished every `interval`, and at once again after a full batch.
    package func loop(every interval: Duration, batch: Int = 50) -> BackgroundLoop {
        .draining(batch: batch, every: interval, reportingTo: heartbeat, backoff: .storeRound, logger: logger) {
            try await finishDue(limit: $0).count
        }
    }
}
