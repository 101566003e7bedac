import Foundation
import LedgerIngestion
import Logging

/// The background reconciler: on start-up and every `interval`, recovers the notifications of
/// every app that has an App Store Server API key. A failure for one app (Apple away, a key Apple
/// refuses) is logged and tried again next time; it never stops the others or the server.
package struct Reconciler: Sendable {
    let recovery: NotificationRecovery
    let directory: AppDirectory
    let interval: Duration
    let logger: Logger

    package init(recovery: NotificationRecovery, directory: AppDirectory, interval: Duration, logger: Logger) {
        self.recovery = recovery
        self.directory = directory
        self.interval = interval
        self.logger = logger
    }

    /// Runs until cancelled.
    package func run() async {
        while !Task.isCancelled {
            await runOnce()
            try? await Task.sleep(for: interval)
        }
    }

    /// One pass over every app with a key; the reports of those that ran.
    @discardableResult
    package func runOnce() async -> [NotificationRecovery.Report] {
        let apps: [String]
        do {
            apps = try await directory.appsWithServerAPIKeys()
        } catch {
            logger.warning("reconciliation could not list the apps", metadata: ["error": "\(error)"])
            return []
        }
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
