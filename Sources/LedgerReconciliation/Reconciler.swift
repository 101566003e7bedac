import Foundation
import LedgerBackground
import LedgerIngestion
import Logging

/// The background reconciler: on start-up and every `interval`, recovers the notifications of
/// every app that has an App Store Server API key. A failure for one app (Apple away, a key Apple
/// refuses) is logged and tried again next time; it never stops the others or the server.
package struct Reconciler: Sendable {
    let recovery: NotificationRecovery
    let directory: AppDirectory
    let interval: Duration
    /// Told of every pass; a pass fails only when the apps cannot be listed (the database away).
    /// A pass asks Apple page after page for each app (a week of history the first time), as long
    /// as Apple takes: its silence is not checked, only its failures.
    package let heartbeat = Heartbeat("reconciliation with Apple", checksSilence: false)
    let logger: Logger

    package init(recovery: NotificationRecovery, directory: AppDirectory, interval: Duration, logger: Logger) {
        self.recovery = recovery
        self.directory = directory
        self.interval = interval
        self.logger = logger
    }

    /// The reconciler as a background loop: a pass a step, `interval` apart. A pass that could not
    /// list the apps is tried again after the loop's backoff, from a few seconds up to a minute.
    package var loop: BackgroundLoop {
        .periodic(every: interval, reportingTo: heartbeat, backoff: .storeRound, logger: logger) { try await pass() }
    }

    /// One pass over every app with a key; the reports of those that ran. Each app's failure is
    /// its own line, with the app: Apple being away or refusing one app's key is no fault of this
    /// server's, and the next pass tries again.
    @discardableResult
    package func pass() async throws -> [NotificationRecovery.Report] {
        let apps = try await directory.appsWithServerAPIKeys()
        var reports: [NotificationRecovery.Report] = []
        for bundleID in apps where !Task.isCancelled {
            do {
                reports += try await recovery.reconcile(bundleID: bundleID)
            } catch {
                logger.warning(
                    "reconciliation with Apple failed; it is tried again next interval",
                    metadata: ["app.bundle_id": "\(bundleID)", "error": "\(error)"])
            }
        }
        return reports
    }
}
