import ArgumentParser
import Foundation
import LedgerCore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerReconciliation
import LedgerServer
import Logging

/// `ledger reconcile`: one run of what `serve` does every LEDGER_APPLE_RECONCILE_INTERVAL.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Recover what the stores told the ledger and it missed (once).",
        discussion: """
            App Store: reads the app's App Store Server Notification history from Apple (App Store Server API, with the
            key configured for the app) for every environment the app accepts, from where the last run stopped (less an
            hour of overlap; the first run reads 7 days), verifies each notification and records the ones not yet
            recorded. One server reconciles an app at a time; the others skip it.
            Google Play: reads Google's voided purchases from --since (or where the hourly poll stopped; Google keeps 30
            days), then asks Google about every subscription the ledger knows and Google still keeps, and records what
            changed. Each app is reconciled with every store it is configured for. Safe beside running servers.
            Example: ledger reconcile --app com.example.game --since 2026-11-01
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id")) var app: String
    @Option(help: ArgumentHelp("Start of the window instead (RFC 3339 or a date; Apple keeps 180 days, Google 30).", valueName: "time"))
    var since: String?

    func validate() throws {
        if let since, RFC3339.parseInstant(since) == nil {
            throw ValidationError("--since must be an RFC 3339 time or a date, e.g. 2026-11-01T00:00:00Z or 2026-11-01")
        }
    }

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.reconcile")
        let settings = try database.settings
        // What is recorded is projected here too, so each notification is answered as the server would.
        let start = since.flatMap(RFC3339.parseInstant)
        let reports = try await ServeCommand.withServices(database, settings: settings, logger: logger) { services in
            let configured = try await services.directory.app(app)
            let google = configured.settings.googlePlay != nil
            var reports: [String] = []
            // An app with neither store's credentials hears Apple's error, which says what to configure.
            if try configured.serverAPI != nil || !google {
                reports += try await services.recovery.reconcile(bundleID: app, since: start).map(\.description)
            }
            if google { reports.append(try await services.googleReconciliation.reconcile(bundleID: app, since: start).description) }
            return reports
        }
        for report in reports { print(report) }
    }
}
