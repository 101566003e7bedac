import ArgumentParser
import Foundation
import LedgerHTTP
import LedgerPostgres
import LedgerReconciliation
import LedgerServer
import Logging

/// `ledger backfill`: an adopting app's purchases imported from Apple, user by user.
struct BackfillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill",
        abstract: "Import an app's existing purchases from Apple for its users (resumable).",
        discussion: """
            FILE is CSV with a header row naming user_id and original_transaction_id (or receipt_data), or JSON lines
            with those keys. For each line the customer's whole history, subscription statuses and refunds are pulled
            from Apple's App Store Server API (the app's key must be configured), verified and recorded for the user
            under the app's restore policy. A receipt line (a legacy app receipt, base64) is read here, not sent to
            verifyReceipt: its signature and chain are checked to a root of LEDGER_APPLE_ROOT_CERTIFICATES (list
            Apple Inc. Root there, see docs/apple-roots.md) and its in-app transaction ids lead to Apple's history. Lines done are
            remembered: run it again after a failure and it goes on where it stopped. Prints a progress bar on a
            terminal and a summary at the end; exits 1 when a line failed.
            Example: ledger backfill --app com.example.game --file users.csv
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id")) var app: String
    @Option(help: ArgumentHelp("CSV or JSON lines of user_id and original_transaction_id or receipt_data.", valueName: "file")) var file:
        String
    @Option(help: "Lines imported at a time.") var concurrency = 16

    func validate() throws {
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency is 1 to 256") }
    }

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.backfill")
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch { throw ValidationError("cannot read \(file) as UTF-8 text") }
        let lines: [BackfillLine]
        do { lines = try BackfillFile.parse(text) } catch let invalid as BackfillFile.Invalid {
            throw ValidationError("\(file), \(invalid)")
        }
        let settings = try database.settings.applying { $0.poolSize = max($0.poolSize, min(concurrency, 32)) }
        let display = LineProgress(terminal: isatty(STDERR_FILENO) == 1)
        // The projection follows along, as under a server.
        let summary = try await ServeCommand.withServices(database, settings: settings, logger: logger) { services in
            let backfill = Backfill(
                lookups: services.lookups, ingestor: services.ingestor, pool: services.pool, concurrency: concurrency, logger: logger)
            return try await backfill.run(bundleID: app, lines: lines, progress: display.show)
        }
        display.finish()
        print(summary)
        if !summary.failed.isEmpty { throw ExitCode(1) }
    }
}

/// `[█████░░░░░] 52%  5,200/10,000 lines  420 lines/s` redrawn in place on a terminal; a plain line
/// a second otherwise (logs, CI).
final class LineProgress: @unchecked Sendable {
    private let terminal: Bool
    private let started = Date()
    private let lock = NSLock()
    private var lastLine = Date.distantPast

    init(terminal: Bool) { self.terminal = terminal }

    func show(_ done: Int, _ total: Int) {
        lock.lock()
        defer { lock.unlock() }
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        let rate = Double(done) / max(Date().timeIntervalSince(started), 0.001)
        let text = String(format: "%3.0f%%  %d/%d lines  %.0f lines/s", fraction * 100, done, total, rate)
        if terminal {
            let filled = Int(fraction * 30)
            FileHandle.standardError.write(
                Data("\r\u{1B}[2K[\(String(repeating: "█", count: filled) + String(repeating: "░", count: 30 - filled))] \(text)".utf8))
        } else if Date().timeIntervalSince(lastLine) >= 1 || done == total {
            lastLine = Date()
            FileHandle.standardError.write(Data("backfill: \(text)\n".utf8))
        }
    }

    func finish() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
