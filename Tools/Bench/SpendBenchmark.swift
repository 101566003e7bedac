import ArgumentParser
import Foundation
import LedgerAccess
import LedgerCore
import LedgerServer

/// `ledger-bench spends`: currency spent per second through the API — on one wallet that every
/// request contends for (each spend decided as the wallet's only writer, on its lots), and across
/// many wallets — beside reads of the same wallets' state at the same concurrency, alternated.
/// Each wallet starts with lots expiring on different days, so a spend draws from the right ones.
struct SpendBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spends",
        abstract: "Spends per second on one contended wallet and across wallets, beside reads of the same state, alternated.")

    @Option(help: "Seconds per measurement.") var seconds = 5.0
    @Option(help: "Rounds (reads and the two kinds of spends alternate).") var rounds = 3
    @Option(help: "Requests in flight.") var connections = 16
    @Option(help: "Wallets the spread spends go to.") var wallets = 200
    @Option(help: "Lots granted to each wallet beforehand.") var lots = 20

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let server = try await BenchServer.start(on: database, logger: logger)
        let bundle = "com.example.bench"
        let admin = try await server.services.keys.create(name: "bench", scopes: [.admin], bundleID: nil).secret
        let app = server.base + "/v1/apps/\(bundle)"
        try await GoogleBenchmark.send("PUT", app, key: admin, ["environments": ["Sandbox"]], expecting: 200)
        try await GoogleBenchmark.send(
            "PUT", app + "/currencies/gems", key: admin, ["name": "Gems", "expires_after": "P60D"], expecting: 200)
        // Lots of every wallet: some expiring within days, most by the currency's policy.
        for wallet in 0...wallets {
            for lot in 0..<lots {
                var grant: [String: Any] = ["amount": 1_000_000, "reason": "seed", "grant_id": "seed-\(wallet)-\(lot)"]
                if lot % 4 == 0 { grant["expires_at"] = RFC3339.string(Date(timeIntervalSinceNow: Double(lot + 1) * 86_400)) }
                try await GoogleBenchmark.send(
                    "POST", app + "/users/player-\(wallet)/currencies/gems/grants", key: admin, grant, expecting: 201)
            }
        }
        let next = Counter()
        let run = UInt32.random(in: 0...UInt32.max)
        @Sendable func spend(_ wallet: Int) async throws {
            let n = next.add(1)
            try await GoogleBenchmark.send(
                "POST", app + "/users/player-\(wallet)/consumptions", key: admin,
                ["currency": "gems", "amount": 3, "idempotency_key": "s\(run)-\(n)", "reason": "item", "reference": "sku-\(n % 97)"],
                expecting: 200)
        }
        var reads: [RetentionBenchmark.Measurement] = [], one: [RetentionBenchmark.Measurement] = []
        var spread: [RetentionBenchmark.Measurement] = []
        let wallets = self.wallets
        for _ in 1...rounds {
            reads.append(
                try await RetentionBenchmark.measure(seconds: seconds, connections: connections) { index in
                    try await GoogleBenchmark.send("GET", app + "/users/player-\(1 + index % wallets)", key: admin, nil, expecting: 200)
                })
            one.append(try await RetentionBenchmark.measure(seconds: seconds, connections: connections) { _ in try await spend(0) })
            spread.append(
                try await RetentionBenchmark.measure(seconds: seconds, connections: connections) { index in
                    try await spend(1 + (index &* 7919) % wallets)
                })
        }
        await server.stop()
        print("Spends through the API on one server (it and PostgreSQL share 2 cores), \(rounds) rounds of \(seconds) s,")
        print("\(connections) requests in flight, each wallet seeded with \(lots) lots, medians")
        print("                                        answers/s     p50       p99")
        print("  GET a wallet's user state (baseline)  \(RetentionBenchmark.row(reads))")
        for (name, measurements) in [("spends on one wallet, contended   ", one), ("spends across \(wallets) wallets        ", spread)] {
            print(
                "  \(name)    \(RetentionBenchmark.row(measurements))   "
                    + String(format: "%5.1f %%", median(measurements.map(\.rate)) / median(reads.map(\.rate)) * 100) + " of reads")
        }
        print("  rounds: reads=\(reads.map { Int($0.rate) }) one=\(one.map { Int($0.rate) }) spread=\(spread.map { Int($0.rate) })")
    }
}
