import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProjections
import Logging

extension ExportCommand {
    /// `ledger export currencies`: the currency ledger a month is closed with, from where the
    /// database is, for as long as the app's players take to read (no request's deadline).
    struct Currencies: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The currency ledger: per currency and UTC day, opening, issued, spent, expired, reversed, moved, closing.",
            discussion: """
                Every user of the app is read from the log, a page at a time, as known at --known-at (the close): a refund
                recorded after it changes the next month's books, not this one. Days are UTC; from's day is the first,
                to's the end (exclusive), at most 366 days. The same rows as GET /v1/apps/{app}/exports/currencies.
                Example: ledger export currencies --app com.example.game --from 2026-10-01 --to 2026-11-01 --known-at 2026-11-03 --out october-currencies.csv
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id")) var app: String
        @Option(help: ArgumentHelp("The first day, RFC 3339 (a date: its midnight UTC).", valueName: "time")) var from: String
        @Option(help: ArgumentHelp("The end (exclusive), RFC 3339.", valueName: "time")) var to: String
        @Option(help: ArgumentHelp("Only what was recorded by then (a month-end close), RFC 3339.", valueName: "time")) var knownAt: String?
        @Option(help: "csv (RFC 4180, with a header row) or jsonl.") var format: String = "csv"
        @Option(help: ArgumentHelp("Write here instead of stdout.", valueName: "file")) var out: String?

        func validate() throws {
            guard FinanceExport.Format(rawValue: format) != nil else { throw ValidationError("--format is csv or jsonl") }
            _ = try export()
        }

        /// The close the options ask for; a range the ledger refuses is said in the options' words.
        func export() throws -> CurrencyExport {
            var times: [String: Date] = [:]
            for (name, value) in [("--from", from), ("--to", to), ("--known-at", knownAt)] {
                guard let value else { continue }
                guard let time = RFC3339.parseInstant(value) else {
                    throw ValidationError(
                        "\(name) must be an RFC 3339 time or a date, e.g. 2026-10-01T00:00:00Z or 2026-10-01 (midnight UTC)")
                }
                times[name] = time
            }
            do {
                return try CurrencyExport(bundleID: app, from: times["--from"]!, to: times["--to"]!, knownAt: times["--known-at"])
            } catch {
                throw ValidationError("--from must be before --to, and at most 366 days before it")
            }
        }

        func run() async throws {
            let logger = LoggingSetup.logger("ledger.export")
            let export = try self.export()
            let format = FinanceExport.Format(rawValue: self.format)!
            let days = try await database.withDatabase(logger: logger) { opened, _ in
                let pool = PostgresPool(configuration: opened.application, size: 1, logger: logger)
                let days = await Result { try await export.days(on: pool) }
                await pool.close()
                return try days.get()
            }
            let handle = try ExportCommand.output(out)
            handle.write(Data(CurrencyExport.text(days, as: format).utf8))
            if out != nil { try handle.close() }
            let currencies = Set(days.map(\.currency)).count
            let note = currencies == 0 ? " (no user of \(app) ever held a currency: is the bundle id right?)" : ""
            FileHandle.standardError.write(Data("exported \(days.count) rows of \(currencies) currencies\(note)\n".utf8))
        }
    }
}
