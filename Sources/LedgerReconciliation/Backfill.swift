import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerIngestion
import LedgerPostgres
import Logging

/// Backfill at adoption: an app that starts using the ledger has years of purchases it cannot
/// import from StoreKit. From a file of its users and their original transaction ids (or legacy
/// receipts), each customer's history is pulled from Apple and recorded for that user — the same
/// facts, verified the same way, as a restore (`AppleLookups.backfill`); a legacy receipt is read
/// locally and leads to the histories of the families it names. Lines run `concurrency` at a time, so Apple's latency overlaps and recording
/// groups; each line done is remembered (`ledger.backfill_done`), so a second run, or one resumed
/// after a failure, skips it and records nothing.
package struct Backfill: Sendable {
    package struct Summary: Sendable, CustomStringConvertible {
        package var lines = 0
        package var imported = 0
        /// Done by an earlier run.
        package var skipped = 0
        package var transactions = 0
        package var failed: [(line: Int, reason: String)] = []
        package var seconds = 0.0

        package var description: String {
            var text =
                "\(lines) lines: \(imported) imported (\(transactions) transactions), \(skipped) done before, \(failed.count) failed"
                + String(format: " in %.1f s", seconds)
            for failure in failed.prefix(20) { text += "\n  line \(failure.line): \(failure.reason)" }
            if failed.count > 20 { text += "\n  … and \(failed.count - 20) more" }
            return text
        }
    }

    let lookups: AppleLookups
    let ingestor: Ingestor
    let pool: PostgresPool
    let concurrency: Int
    let logger: Logger

    package init(lookups: AppleLookups, ingestor: Ingestor, pool: PostgresPool, concurrency: Int = 16, logger: Logger) {
        self.lookups = lookups
        self.ingestor = ingestor
        self.pool = pool
        self.concurrency = max(1, concurrency)
        self.logger = logger
    }

    /// Imports `lines` for the app; `progress` is told (lines finished, lines) as they finish.
    package func run(bundleID: String, lines: [BackfillLine], progress: @Sendable (Int, Int) -> Void = { _, _ in }) async throws -> Summary
    {
        let started = ContinuousClock.now
        _ = try await ingestor.directory.app(bundleID) // unknown_app before anything else
        var summary = Summary(lines: lines.count)
        let doneBefore = try await doneKeys(bundleID)
        let todo = lines.filter { !doneBefore.contains(Self.progressKey($0)) }
        summary.skipped = lines.count - todo.count
        progress(summary.skipped, lines.count)
        var furthest: LogPosition?
        // Lines done are remembered in batches, not one commit each: a batch lost to a crash is
        // imported again next run, which records nothing (every fact is idempotent).
        var finishedLines: [(line: BackfillLine, transactions: Int)] = []
        try await withThrowingTaskGroup(of: (BackfillLine, Result<AppleLookups.Imported, any Error>).self) { group in
            var next = todo.makeIterator()
            func start() {
                guard let line = next.next() else { return }
                group.addTask { (line, await Result { try await self.importLine(line, bundleID: bundleID) }) }
            }
            for _ in 0..<concurrency { start() }
            var finished = summary.skipped
            while let (line, result) = try await group.next() {
                switch result {
                case .success(let imported):
                    summary.imported += 1
                    summary.transactions += imported.transactions
                    if let position = imported.position { furthest = max(furthest ?? position, position) }
                    finishedLines.append((line, imported.transactions))
                    if finishedLines.count >= Self.doneBatch { try await remember(&finishedLines, bundleID: bundleID) }
                case .failure(let error):
                    summary.failed.append((line.number, Self.reason(error)))
                }
                finished += 1
                progress(finished, lines.count)
                start()
            }
            try await remember(&finishedLines, bundleID: bundleID)
        }
        // Done means every user's state shows what was imported.
        if let furthest { try await ingestor.waitUntilProjected(furthest) }
        summary.failed.sort { $0.line < $1.line }
        summary.seconds = (ContinuousClock.now - started).seconds
        logger.info(
            "backfill finished",
            metadata: [
                "app.bundle_id": "\(bundleID)", "backfill.imported": "\(summary.imported)",
                "backfill.failed": "\(summary.failed.count)", "backfill.transactions": "\(summary.transactions)",
            ])
        return summary
    }

    static let doneBatch = 100

    /// One line: its customer's history recorded.
    private func importLine(_ line: BackfillLine, bundleID: String) async throws -> AppleLookups.Imported {
        switch line.reference {
        case .transaction(let id): try await lookups.backfill(bundleID: bundleID, userID: line.userID, transactionID: id)
        case .receipt(let data): try await lookups.backfill(bundleID: bundleID, userID: line.userID, receipt: data)
        }
    }

    /// Remembers `lines` as done in one statement, and empties the list.
    private func remember(_ lines: inout [(line: BackfillLine, transactions: Int)], bundleID: String) async throws {
        guard !lines.isEmpty else { return }
        try await pool.query(
            """
            INSERT INTO ledger.backfill_done (bundle_id, user_id, reference, transactions)
            SELECT $1, * FROM unnest($2::text[], $3::text[], $4::int[])
            ON CONFLICT DO NOTHING
            """,
            [
                bundleID, PostgresTextArray(lines.map(\.line.userID)), PostgresTextArray(lines.map(\.line.key)),
                PostgresTextArray(lines.map { String($0.transactions) }),
            ])
        lines.removeAll()
    }

    private func doneKeys(_ bundleID: String) async throws -> Set<String> {
        Set(
            try await pool.query("SELECT user_id, reference FROM ledger.backfill_done WHERE bundle_id = $1", [bundleID]).map { row in
                try row["user_id"].string() + "\u{0}" + row["reference"].string()
            })
    }

    static func progressKey(_ line: BackfillLine) -> String { line.userID + "\u{0}" + line.key }

    /// What an operator reads for a failed line: our code and sentence, never a secret.
    static func reason(_ error: any Error) -> String {
        if let error = error as? LedgerError { return "\(error.code): \(error.message)" }
        return "\(error)"
    }
}

/// `Result(catching:)` for async work (the standard library has only the synchronous one).
extension Result where Failure == any Error {
    package init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
