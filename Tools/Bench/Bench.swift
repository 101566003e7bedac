import ArgumentParser
import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import Logging

/// `swift run -c release ledger-bench append`: the event store's append paths against raw
/// PostgreSQL on the same cluster, in the same run. Prints medians and ratios, because absolute
/// numbers on a shared 2-core machine mean little.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-bench",
        abstract: "Benchmarks that print ratios against a baseline measured in the same run.",
        subcommands: [
            AppendBenchmark.self, RebuildBenchmark.self, JWSBenchmark.self, HTTPBenchmark.self, ReplicaBenchmark.self,
            BackfillBenchmark.self,
            TimeTravelBenchmark.self, WebhookBenchmark.self, ConsoleBenchmark.self, OfferBenchmark.self, FailoverBenchmark.self,
            TracingBenchmark.self, GoogleBenchmark.self, RetentionBenchmark.self, ProofsBenchmark.self, SpendBenchmark.self,
            CurrencyExportBenchmark.self,
        ]
    )
}

/// A durable throwaway cluster (fsync and synchronous commit on, like production), or
/// LEDGER_DATABASE_URL when set.
struct BenchDatabase {
    let configuration: PostgresConfiguration
    let cluster: EmbeddedPostgres?

    static func open(logger: Logger) throws -> BenchDatabase {
        if let url = ProcessInfo.processInfo.environment["LEDGER_DATABASE_URL"], !url.isEmpty {
            return BenchDatabase(configuration: PostgresConfiguration(connectionString: url), cluster: nil)
        }
        let folder = URL(fileURLWithPath: "/var/tmp/ledger-bench-\(getpid())/postgres")
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(durable: true), logger: logger)
        try cluster.start()
        try cluster.createDatabase("bench")
        return BenchDatabase(configuration: cluster.configuration(database: "bench"), cluster: cluster)
    }

    /// A quiet logger, the database, and an owner connection with the schema migrated: every
    /// benchmark starts here.
    static func openMigrated() throws -> (BenchDatabase, PostgresConnection, Logger) {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let database = try open(logger: logger)
        let owner = try PostgresConnection.connect(database.configuration)
        try Migrator(migrations: LedgerSchema.migrations(), logger: logger).migrate(owner)
        return (database, owner, logger)
    }

    func close() {
        guard let cluster else { return }
        try? cluster.stop()
        try? FileManager.default.removeItem(at: cluster.dataDirectory.deletingLastPathComponent())
        try? FileManager.default.removeItem(at: cluster.socketDirectory)
    }
}

/// Median of a sample; the statistic every ratio here is built on.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ rate: Double) -> String { String(format: "%9.0f/s", rate) }

/// Calls `body` back to back on one task for `seconds`, in runs of 50; returns calls per second.
/// One task is one core at a time: what the "on one core" benchmarks measure.
func benchRate(seconds: Double, _ body: () async throws -> Void) async throws -> Double {
    let started = Date()
    var count = 0
    while Date().timeIntervalSince(started) < seconds {
        for _ in 0..<50 { try await body() }
        count += 50
    }
    return Double(count) / Date().timeIntervalSince(started)
}

/// Calls `body(writer, n)` from `writers` concurrent tasks, each back to back, for `seconds`;
/// returns calls per second across them.
func concurrentRate(writers: Int, seconds: Double, _ body: @escaping @Sendable (Int, Int) async throws -> Void) async throws -> Double {
    let started = Date()
    let deadline = started.addingTimeInterval(seconds)
    let total = try await withThrowingTaskGroup(of: Int.self) { group in
        for writer in 0..<writers {
            group.addTask {
                var n = 0
                while Date() < deadline {
                    try await body(writer, n)
                    n += 1
                }
                return n
            }
        }
        return try await group.reduce(0, +)
    }
    return Double(total) / Date().timeIntervalSince(started)
}
