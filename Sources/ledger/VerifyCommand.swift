import ArgumentParser
import Foundation
import LedgerEventStore
import LedgerPostgres
import Logging

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute every stream's SHA-256 hash chain and name the first broken event of each stream.",
        discussion: "Exit status 0 when the log is intact, 1 when any stream is broken (edited or deleted rows)."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.verify")
        try await database.withDatabase(logger: logger) { opened, _ in try await verify(opened, logger: logger) }
    }

    private func verify(_ opened: Database, logger: Logger) async throws {
        let pool = PostgresPool(configuration: opened.owner, size: 1, logger: logger)
        let started = Date()
        let report = try await ChainVerifier(pool: pool).verify { progress in
            FileHandle.standardError.write(Data("\rverified \(progress.events) events in \(progress.streams) streams".utf8))
        }
        FileHandle.standardError.write(Data("\n".utf8))
        await pool.close()
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        if report.isIntact {
            print("intact: \(report.events) events in \(report.streams) streams (\(seconds) s)")
            return
        }
        print("BROKEN: \(report.breaks.count) of \(report.streams) streams (\(report.events) events read, \(seconds) s)")
        for broken in report.breaks { print("  \(broken)") }
        throw ExitCode(1)
    }
}
