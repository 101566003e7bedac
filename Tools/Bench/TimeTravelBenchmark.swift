import ArgumentParser
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections

/// `ledger-bench timetravel`: reads of one user on both axes of time (`at`, `known_at`) for a user
/// with 200 facts, among other users, beside raw PostgreSQL round trips in the same run: `SELECT 1`
/// and the live path's one indexed row.
struct TimeTravelBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timetravel",
        abstract: "?at= / ?known_at= reads of a user with 200 facts: p50/p99 beside raw PostgreSQL round trips.")

    @Option(help: "Reads per measurement.") var reads = 2_000
    @Option(help: "Other users (20 facts each) sharing the tables.") var others = 2_000
    @Option(help: "Measurement rounds.") var rounds = 3

    func run() async throws {
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let pool = PostgresPool(
            configuration: {
                var c = database.configuration; c.role = "ledger_app"; return c
            }(), size: 2, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let bundle = "com.example.bench"
        let start = Date(timeIntervalSinceNow: -400 * 86_400)
        func facts(user: String, original: String, renewals: Int) throws -> [StreamAppend] {
            // A monthly-priced subscription renewed every two days (so 200 facts span the 400 days).
            var events: [(LedgerEvent, Date)] = []
            var period = start
            for n in 0...renewals {
                let facts = TransactionFacts(
                    environment: .production, transactionID: n == 0 ? original : "\(original)-\(n)", originalTransactionID: original,
                    productID: "pro.monthly", purchaseDate: period, expiresDate: period + 2 * 86_400,
                    price: 4_990, currency: "EUR", signedDate: period)
                events.append((n == 0 ? .purchased(facts) : .renewed(facts), period))
                if n == 0 { events.append((.transactionClaimed(Claim(originalTransactionID: original, userID: user)), period + 60)) }
                period += 2 * 86_400
            }
            var byStream: [String: [NewEvent]] = [:]
            for (event, occurredAt) in events {
                let (stream, new) = try StoredFacts.newEvent(event, bundleID: bundle, id: UUID(), occurredAt: occurredAt)
                byStream[stream, default: []].append(new)
            }
            return byStream.map { StreamAppend(stream: $0.key, events: $0.value) }
        }
        let catalogue = try StoredFacts.newEvent(
            .productConfigured(ProductDefinition(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"])),
            bundleID: bundle, id: UUID(), occurredAt: start)
        _ = try await store.append([catalogue.event], to: catalogue.stream)
        _ = try await store.append(batch: try facts(user: "u0", original: "t0", renewals: 198)) // 200 facts
        for chunk in stride(from: 1, through: others, by: 200) {
            _ = try await store.append(
                batch: try (chunk..<min(chunk + 200, others + 1)).flatMap { try facts(user: "u\($0)", original: "t\($0)", renewals: 18) })
        }
        while try await pool.withConnection({ try ProjectionRunner.liveStep(on: $0, batchSize: 2_000) }) > 0 {}
        try owner.execute(script: "ANALYZE")
        let reader = UserStateReader(pool: pool)
        let recorded = try await pool.query("SELECT min(recorded_at) AS a, max(recorded_at) AS b FROM ledger.events")[0]
        let (firstRecorded, lastRecorded) = (try recorded["a"].date(), try recorded["b"].date())
        let state = try await reader.state(bundleID: bundle, userID: "u0", at: start + 100 * 86_400, knownAt: nil)
        guard state.entitlements["pro"]?.active == true else { throw ValidationError("the benchmark's user is not what it should be") }

        func latencies(_ body: () async throws -> Void) async throws -> (p50: Double, p99: Double) {
            var samples: [Double] = []
            samples.reserveCapacity(reads)
            let clock = ContinuousClock()
            for _ in 0..<reads {
                let began = clock.now
                try await body()
                let elapsed = clock.now - began
                samples.append(elapsed.seconds * 1_000)
            }
            samples.sort()
            return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
        }
        var rows: [String: [(Double, Double)]] = [:]
        let names = ["SELECT 1 (raw round trip)", "the live path's indexed row", "?at= (everything known)", "?at=&known_at=", "?known_at="]
        for _ in 1...rounds {
            rows[names[0], default: []].append(try await latencies { _ = try await pool.query("SELECT 1") })
            rows[names[1], default: []].append(
                try await latencies {
                    _ = try await pool.query(
                        "SELECT timeline FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2", [bundle, "u0"])
                })
            rows[names[2], default: []].append(
                try await latencies {
                    _ = try await reader.state(
                        bundleID: bundle, userID: "u0", at: start + Double.random(in: 0...400) * 86_400, knownAt: nil)
                })
            rows[names[3], default: []].append(
                try await latencies {
                    let known = firstRecorded + Double.random(in: 0...1) * lastRecorded.timeIntervalSince(firstRecorded)
                    _ = try await reader.state(
                        bundleID: bundle, userID: "u0", at: start + Double.random(in: 0...400) * 86_400, knownAt: known)
                })
            rows[names[4], default: []].append(
                try await latencies {
                    let known = firstRecorded + Double.random(in: 0...1) * lastRecorded.timeIntervalSince(firstRecorded)
                    _ = try await reader.state(bundleID: bundle, userID: "u0", at: known, knownAt: known)
                })
        }
        await pool.close()
        print(
            "reads of one user with 200 facts (\(others) other users of 20), \(reads) sequential reads × \(rounds) rounds, medians of rounds"
        )
        let baseline = median(rows[names[0]]!.map(\.0))
        for name in names {
            let p50 = median(rows[name]!.map(\.0)), p99 = median(rows[name]!.map(\.1))
            print(
                "  " + name.padding(toLength: 32, withPad: " ", startingAt: 0)
                    + String(format: " p50 %6.3f ms   p99 %6.3f ms   (p50 %5.1f× SELECT 1)", p50, p99, p50 / baseline))
        }
        print("  goal: p99 < 5 ms for ?at= and ?known_at=")
    }
}
