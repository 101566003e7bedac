import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerProjections
import LedgerSchema

struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Rebuild the projections from the first event, beside the live ones, then switch atomically.",
        discussion: """
            Safe while `ledger serve` runs and events arrive: the server keeps answering from the live version until
            the new one has caught up, then both switch in one transaction. Prints a progress bar on a terminal and
            plain progress lines otherwise. The only projection today is `users` (ownership and user timelines).
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "Which projection to rebuild (default: all).")
    var projection: String?

    func validate() throws {
        if let projection, projection != "users" { throw ValidationError("unknown projection \(projection); known: users") }
    }

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.rebuild")
        let (report, display) = try await database.withDatabase(logger: logger) { opened, _ in
            let owner = opened.owner
            let display = ProgressDisplay(terminal: isatty(STDERR_FILENO) == 1)
            let report = try whilePostgres("rebuilding the projections") {
                try ProjectionRebuilder(logger: logger) { try PostgresConnection.connect(owner) }.rebuild(progress: display.show)
            }
            return (report, display)
        }
        display.finish()
        print(
            String(
                format: "rebuilt users v%d: %d events (%d replayed; Apple's notification records are evidence only), %d users; "
                    + "replay %.1f s, total %.1f s (%.0f events/s)",
                report.version, report.events, report.replayed, report.users, report.replaySeconds, report.totalSeconds,
                Double(report.events) / max(report.totalSeconds, 0.001)))
    }
}

/// `[█████░░░░░] 52%  520,000/1,000,000 events  140,210 events/s  ETA 3 s` redrawn in place on a
/// terminal; one plain line per second otherwise (logs, CI).
final class ProgressDisplay: @unchecked Sendable {
    private let terminal: Bool
    private var lastLine = Date.distantPast

    init(terminal: Bool) { self.terminal = terminal }

    func show(_ progress: RebuildProgress) {
        let fraction = progress.totalEstimate > 0 ? min(1, Double(progress.events) / Double(progress.totalEstimate)) : 1
        let rate = progress.eventsPerSecond
        let eta = rate > 0 ? Double(progress.totalEstimate - progress.events) / rate : 0
        let text = String(
            format: "%@ %3.0f%%  %d/%d events  %.0f events/s  ETA %.0f s",
            progress.phase.rawValue, fraction * 100, progress.events, progress.totalEstimate, rate, max(0, eta))
        if terminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            FileHandle.standardError.write(Data("\r\u{1B}[2K[\(bar)] \(text)".utf8))
        } else if Date().timeIntervalSince(lastLine) >= 1 || progress.phase != .replaying {
            lastLine = Date()
            FileHandle.standardError.write(Data("rebuild: \(text)\n".utf8))
        }
    }

    func finish() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
