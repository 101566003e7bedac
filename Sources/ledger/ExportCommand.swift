import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProjections
import Logging

/// `ledger export transactions`: the finance view as CSV or JSON lines, streamed to a file or
/// stdout; `ledger export currencies`: the currency ledger.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export finance data.",
        subcommands: [Transactions.self, Currencies.self]
    )

    /// Where an export goes: the file `--out` names (made anew), or stdout.
    static func output(_ out: String?) throws -> FileHandle {
        guard let out else { return .standardOutput }
        guard FileManager.default.createFile(atPath: out, contents: nil), let file = FileHandle(forWritingAtPath: out) else {
            throw ValidationError("cannot write \(out)")
        }
        return file
    }

    struct Transactions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every purchase, renewal, refund and reversed refund of an app in a time range.",
            discussion: """
                Rows come from the finance projection (run `ledger rebuild` first if it was never built).
                --known-at K reproduces the report as it was when the books were closed at K: only what was recorded
                by then (late refunds and renewals absent, owners as known then); each row's recorded_at says when
                the ledger learnt it.
                Times are RFC 3339 (2026-10-01T00:00:00Z); from is inclusive, to exclusive.
                Example: ledger export transactions --app com.example.game --from 2026-10-01T00:00:00Z --to 2026-11-01T00:00:00Z --out october.csv
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id")) var app: String
        @Option(help: ArgumentHelp("Start (inclusive), RFC 3339.", valueName: "time")) var from: String?
        @Option(help: ArgumentHelp("End (exclusive), RFC 3339.", valueName: "time")) var to: String?
        @Option(help: ArgumentHelp("Only what was recorded by then (a month-end close), RFC 3339.", valueName: "time")) var knownAt: String?
        @Option(help: "csv (RFC 4180, with a header row) or jsonl.") var format: String = "csv"
        @Option(help: "Production (default) or Sandbox; they are never mixed.") var environment: String = "Production"
        @Option(help: ArgumentHelp("Write here instead of stdout.", valueName: "file")) var out: String?

        func validate() throws {
            guard FinanceExport.Format(rawValue: format) != nil else { throw ValidationError("--format is csv or jsonl") }
            guard environment == "Production" || environment == "Sandbox" else {
                throw ValidationError("--environment is Production or Sandbox")
            }
            for (name, value) in [("--from", from), ("--to", to), ("--known-at", knownAt)] {
                if let value, Self.time(value) == nil {
                    throw ValidationError(
                        "\(name) must be an RFC 3339 time or a date, e.g. 2026-10-01T00:00:00Z or 2026-10-01 (midnight UTC)")
                }
            }
        }

        static func time(_ text: String) -> Date? { RFC3339.parseInstant(text) }

        func run() async throws {
            let logger = LoggingSetup.logger("ledger.export")
            try await database.withDatabase(logger: logger) { opened, _ in try await export(opened, logger: logger) }
        }

        private func export(_ opened: Database, logger: Logger) async throws {
            let pool = PostgresPool(configuration: opened.application, size: 1, logger: logger)
            let format = FinanceExport.Format(rawValue: self.format)!
            let export = FinanceExport(
                bundleID: app, environment: AppleEnvironment(rawValue: environment)!,
                from: from.flatMap(Self.time), to: to.flatMap(Self.time), knownAt: knownAt.flatMap(Self.time))
            let handle = try ExportCommand.output(out)
            var count = 0
            if format == .csv { handle.write(Data(FinanceExport.csvHeader().utf8)) }
            do {
                try await export.forEachPage(on: pool) { rows in
                    var chunk = ""
                    for row in rows { chunk += format == .csv ? FinanceExport.csvLine(row) : FinanceExport.jsonLine(row) }
                    handle.write(Data(chunk.utf8))
                    count += rows.count
                }
            } catch {
                await pool.close()
                throw error
            }
            await pool.close()
            if out != nil { try handle.close() }
            FileHandle.standardError.write(Data("exported \(count) rows\n".utf8))
        }
    }
}
