import ArgumentParser
import Foundation
import LedgerBackground
import LedgerEventStore
import LedgerPostgres
import LedgerProofs
import Logging

/// `ledger-bench proofs`: what the Merkle tree over the log costs and answers. Appends with the
/// tree's writer running beside them (as `ledger serve` runs it) against appends without it, in
/// alternated rounds on the same database; inclusion and consistency proofs per second; and, on a
/// log grown to `--events`, the time to extend the tree over all of it, to sign a digest and to
/// audit the whole log.
struct ProofsBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proofs",
        abstract: "Appends with the proof tree maintained vs without; proofs per second; digest time on a large log.")

    @Option(help: "Rounds (appends without and with the tree alternate).") var rounds = 5
    @Option(help: "Seconds per append measurement.") var seconds = 3.0
    @Option(help: "Concurrent writers.") var writers = 4
    @Option(help: "Seconds per proof measurement.") var proofSeconds = 3.0
    @Option(help: "Events the log is grown to for the digest and the audit.") var events = 1_000_000

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let pool = PostgresPool(configuration: database.configuration, size: writers + 2, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let tree = ProofTree(pool: pool, logger: logger)
        let key = try DigestKey(pem: DigestKey.generate())
        let desk = ProofDesk(tree: tree, key: key)

        var without: [Double] = []
        var with: [Double] = []
        var catchUp: [Double] = []
        for round in 1...rounds {
            without.append(try await appends(store))
            while try await tree.extend() > 0 {}
            let writer = Task { await tree.loop(heartbeat: .init("proof tree"), pollInterval: .seconds(1)).runUntilCancelled() }
            with.append(try await appends(store))
            writer.cancel()
            _ = await writer.value
            let started = Date()
            while try await tree.extend() > 0 {}
            catchUp.append(Date().timeIntervalSince(started))
            FileHandle.standardError.write(Data("round \(round)/\(rounds) done\n".utf8))
        }

        let size = try await tree.head().size
        let inclusion = try await concurrentRate(writers: writers, seconds: proofSeconds) { _, _ in
            _ = try await tree.inclusion(position: Int64.random(in: 1...size), size: nil)
        }
        let consistency = try await concurrentRate(writers: writers, seconds: proofSeconds) { _, _ in
            _ = try await tree.consistency(from: Int64.random(in: 1...size), to: nil)
        }

        try await grow(store, pool: pool, to: events)
        let extendStarted = Date()
        var extended = 0
        while true {
            let added = try await tree.extend()
            if added == 0 { break }
            extended += added
        }
        let extendSeconds = Date().timeIntervalSince(extendStarted)
        var digestTimes: [Double] = []
        var digest: Digest?
        for _ in 0..<5 {
            let started = Date()
            digest = try await desk.digest()
            digestTimes.append(Date().timeIntervalSince(started) * 1000)
        }
        let auditStarted = Date()
        let auditPool = PostgresPool(configuration: database.configuration, size: 1, logger: logger)
        let report = try await ProofAudit(pool: auditPool).audit(digest!, keys: [key.publicKey])
        let auditSeconds = Date().timeIntervalSince(auditStarted)
        await auditPool.close()
        await pool.close()

        let (a, b) = (median(without), median(with))
        print("")
        print("appends, \(writers) writers, one event each, \(rounds) rounds of \(seconds) s, medians")
        print("  without the tree's writer      \(String(format: "%8.0f", a))/s")
        print(
            "  with the tree's writer beside  \(String(format: "%8.0f", b))/s   \(String(format: "%.1f %%", b / a * 100)) (goal ≥ 90 %)"
        )
        print("  the tree caught up after each round in \(String(format: "%.2f", median(catchUp))) s (median)")
        print("proofs on a tree of \(size) leaves, \(writers) at a time")
        print("  inclusion                      \(String(format: "%8.0f", inclusion))/s")
        print("  consistency                    \(String(format: "%8.0f", consistency))/s")
        print("a log of \(digest!.treeSize) events")
        print(
            "  tree extended over \(extended) new events in \(String(format: "%.1f", extendSeconds)) s (\(String(format: "%.0f", Double(extended) / extendSeconds)) leaves/s)"
        )
        print("  digest signed in \(String(format: "%.2f", median(digestTimes))) ms (median of 5)")
        print(
            "  audit of every leaf from its event: \(String(format: "%.1f", auditSeconds)) s, \(report.passed ? "passed" : "FAILED")"
        )
        print("all rounds: without=\(without.map { String(format: "%.0f", $0) }) with=\(with.map { String(format: "%.0f", $0) })")
    }

    /// One-event appends from `writers` tasks for `seconds`, as `ledger-bench append` makes them.
    private func appends(_ store: EventStore) async throws -> Double {
        try await concurrentRate(writers: writers, seconds: seconds) { writer, n in
            try await store.append(
                [NewEvent(id: UUID(), type: "PurchaseRecorded", data: AppendBenchmark.payload, occurredAt: Date())],
                to: "user-\(writer)-\(n % 50)")
        }
    }

    /// Appends in batches of 500 streams until the log holds `target` events.
    private func grow(_ store: EventStore, pool: PostgresPool, to target: Int) async throws {
        let have = try await pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
        var added = 0
        var batch = 0
        while have + added < target {
            let count = min(500, target - have - added)
            let events = (0..<count).map { _ in
                NewEvent(id: UUID(), type: "PurchaseRecorded", data: AppendBenchmark.payload, occurredAt: Date())
            }
            try await store.append(
                batch: events.enumerated().map { StreamAppend(stream: "bulk-\(batch)-\($0.offset)", events: [$0.element]) })
            added += count
            batch += 1
            if batch % 200 == 0 { FileHandle.standardError.write(Data("\rlog grown to \(have + added) events".utf8)) }
        }
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
