import AppStore
import ArgumentParser
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerSchema
import LedgerSecrets
import LedgerServer
import Logging
import ServiceLifecycle

/// `ledger-bench replica`: user-state reads served by a streaming standby against the same reads
/// on the primary, in the same run on the same machine, and the wait a read adds after a write
/// for the standby to replay it (read-your-writes across nodes).
struct ReplicaBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "User-state reads on a streaming replica vs the primary, and the read-your-writes wait after a write.")

    @Option(help: "Users with a timeline to read.") var users = 2000
    @Option(help: "Seconds per read run.") var seconds = 4
    @Option(help: "Rounds of the primary / replica pair (medians are quoted).") var rounds = 3
    @Option(help: "Concurrent readers.") var concurrency = 8
    @Option(help: "Writes followed by a read on the replica.") var writes = 300

    func run() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let base = URL(fileURLWithPath: "/var/tmp/ledger-bench-replica-\(getpid())")
        let port = Int.random(in: 20_000..<60_000)
        let primary = try EmbeddedPostgres(
            dataDirectory: base.appendingPathComponent("primary"),
            options: .init(durable: true, port: port, loopback: true), logger: logger)
        try primary.start()
        let standby = try primary.createStandby(
            dataDirectory: base.appendingPathComponent("standby"), options: .init(durable: true, port: port))
        try standby.start()
        defer {
            try? standby.stop()
            try? primary.stop()
            try? FileManager.default.removeItem(at: base)
        }
        try primary.createDatabase("bench")
        let owner = try PostgresConnection.connect(primary.configuration(database: "bench"))
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: logger)
        try migrator.migrate(owner)
        func application(_ configuration: PostgresConfiguration) -> PostgresConfiguration {
            var copy = configuration
            copy.role = ApplicationRole.defaultName
            return copy
        }
        let pool = PostgresPool(configuration: application(primary.configuration(database: "bench")), size: concurrency, logger: logger)
        let replica = PostgresPool(configuration: application(standby.configuration(database: "bench")), size: concurrency, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let services = LedgerServices(
            pool: pool, store: store, migrator: migrator, verifier: SignedDataVerifier(roots: []),
            keyring: .ephemeral(), receipts: VerifyReceiptConfiguration(), replicas: [replica], logger: logger)
        let group = ServiceGroup(configuration: .init(services: services.backgroundServices(logger: logger), logger: logger))
        let background = Task { try await group.run() }

        let bundle = "com.example.bench"
        _ = try await services.directory.configure(bundle, settings: .init(), sharedSecret: nil)
        FileHandle.standardError.write(Data("granting \(users) users an entitlement each\n".utf8))
        let actions = services.actions
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for worker in 0..<concurrency {
                tasks.addTask {
                    for index in stride(from: worker, to: users, by: concurrency) {
                        _ = try await actions.grant(
                            bundleID: bundle, userID: "u\(index)", entitlement: "pro", expiresAt: nil,
                            reason: "bench", grantID: "g\(index)")
                    }
                }
            }
            try await tasks.waitForAll()
        }
        try owner.execute(script: "ANALYZE")
        try await Task.sleep(for: .seconds(1)) // the standby replays the ANALYZE too

        // Reads: no timeline cache, so every read is a query; one reader of each kind.
        let onPrimary = UserStateReader(pool: pool, replicas: .primaryOnly(pool, logger: logger))
        let onReplica = UserStateReader(
            pool: pool,
            replicas: ReadReplicas(primary: pool, replicas: [replica], checkpoint: ProjectionRunner.activeCheckpoint(on:), logger: logger))
        var primaryRates: [Double] = [], replicaRates: [Double] = []
        for _ in 0..<rounds {
            primaryRates.append(try await readRate(onPrimary, bundle: bundle))
            replicaRates.append(try await readRate(onReplica, bundle: bundle))
        }

        // Read-your-writes: a grant answered (projected on the primary), then the same user read on
        // the replica with the write's position as the fence; beside it the same read unfenced.
        let reads = services.reads
        var fenced: [Double] = [], plain: [Double] = []
        for index in 0..<writes {
            let written = WrittenPosition()
            try await WrittenPosition.$current.withValue(written) {
                _ = try await actions.grant(
                    bundleID: bundle, userID: "u\(index % users)", entitlement: "vip", expiresAt: nil,
                    reason: "bench", grantID: "ryw\(index)")
            }
            let position = written.position ?? .start
            let query = "SELECT timeline AS t FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2"
            let user = "u\(index % users)"
            var started = ContinuousClock.now
            _ = try await reads.read(atLeast: position) { try $0.query(query, [bundle, user]).count }
            fenced.append(milliseconds(ContinuousClock.now - started))
            started = ContinuousClock.now
            _ = try await replica.withConnection { try $0.query(query, [bundle, user]).count }
            plain.append(milliseconds(ContinuousClock.now - started))
        }
        let sources = reads.sources
        await group.triggerGracefulShutdown()
        _ = await background.result
        await pool.close()
        await replica.close()

        let primaryMedian = median(primaryRates), replicaMedian = median(replicaRates)
        print("user-state reads, \(concurrency) concurrent readers, \(users) users, no cache (medians of \(rounds) rounds)")
        print("  primary   \(format(primaryMedian))   rounds: \(primaryRates.map { String(format: "%.0f", $0) }.joined(separator: " / "))")
        print("  replica   \(format(replicaMedian))   rounds: \(replicaRates.map { String(format: "%.0f", $0) }.joined(separator: " / "))")
        print(String(format: "  replica / primary: %.1f %% (goal ≥ 80 %%)", replicaMedian / max(primaryMedian, 1) * 100))
        print("read-your-writes on the replica after \(writes) writes (each answered once projected on the primary)")
        print(
            String(
                format: "  fenced read median %.3f ms (p90 %.3f), the same read unfenced %.3f ms: added wait %.3f ms (goal < 5 ms)",
                median(fenced), percentile(fenced, 0.9), median(plain), median(fenced) - median(plain)))
        print("  answered by the replica \(sources.replica), by the primary after the wait \(sources.primary)")
    }

    /// Reads of random users from `concurrency` tasks for `seconds`; reads per second.
    private func readRate(_ reader: UserStateReader, bundle: String) async throws -> Double {
        let deadline = ContinuousClock.now + .seconds(seconds)
        let users = self.users
        let started = ContinuousClock.now
        let count = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for _ in 0..<concurrency {
                tasks.addTask {
                    var done = 0
                    while ContinuousClock.now < deadline {
                        _ = try await reader.currentState(bundleID: bundle, userID: "u\(Int.random(in: 0..<users))")
                        done += 1
                    }
                    return done
                }
            }
            return try await tasks.reduce(0, +)
        }
        return Double(count) / (ContinuousClock.now - started).seconds
    }
}

private func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

private func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}
