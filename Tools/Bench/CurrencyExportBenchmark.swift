import ArgumentParser
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections

/// `ledger-bench currency-export`: the currency ledger of an app closed a page of users at a
/// time, at several page sizes, beside the same users' histories read one user at a time (as a
/// `known_at` read of a user's state reads one) in the same run: users per second.
struct CurrencyExportBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "currency-export",
        abstract: "The currency ledger closed a page of users at a time, beside each user's history read alone: users per second.")

    @Option(help: "Users of the app.") var users = 5_000
    @Option(help: "Grants and spends of each user (half each).") var movements = 20
    @Option(help: "Measurement rounds.") var rounds = 3
    @Option(help: "Page sizes to measure, comma-separated.") var pages = "50,500,2000"

    func run() async throws {
        let pageSizes = pages.split(separator: ",").compactMap { Int($0) }
        guard !pageSizes.isEmpty, pageSizes.allSatisfy({ $0 > 0 }) else { throw ValidationError("--pages: whole numbers, e.g. 50,500") }
        let (database, owner, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        var application = database.configuration
        application.role = "ledger_app"
        let pool = PostgresPool(configuration: application, size: 2, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let bundle = "com.example.bench"
        let now = Date()
        let start = now - 60 * 86_400
        let gems = CurrencyDefinition(code: "gems", name: "Gems", expiresAfter: ISODuration("P30D"))
        let configured = try StoredFacts.newEvent(.currencyConfigured(gems), bundleID: bundle, id: UUID(), occurredAt: start - 86_400)
        _ = try await store.append([configured.event], to: configured.stream)
        // Each user: grants and spends alternating over 60 days, the spends smaller than the grants.
        func history(_ user: Int) throws -> StreamAppend {
            let userID = "player-\(user)"
            let events = try (0..<movements).map { n -> NewEvent in
                let at = start + Double(n) * 60 * 86_400 / Double(movements) + Double(user % 600)
                let event: LedgerEvent =
                    n % 2 == 0
                    ? .currencyGranted(
                        CurrencyGrant(grantID: "g\(user)-\(n)", userID: userID, currency: "gems", amount: 100, reason: "quest"))
                    : .consumed(Consumption(userID: userID, currency: "gems", amount: 30, idempotencyKey: "s\(user)-\(n)", reason: "item"))
                return try StoredFacts.newEvent(event, bundleID: bundle, id: UUID(), occurredAt: at).event
            }
            return StreamAppend(stream: LedgerStream.user(bundle, userID: userID), events: events)
        }
        for chunk in stride(from: 0, to: users, by: 200) {
            _ = try await store.append(batch: try (chunk..<min(chunk + 200, users)).map(history))
        }
        while try await pool.withConnection({ try ProjectionRunner.liveStep(on: $0, batchSize: 2_000) }) > 0 {}
        try owner.execute(script: "ANALYZE")

        // Closed as known once everything is recorded: both ways read every fact.
        let close = Date()
        // Up to today's midnight: the last day's closing is what the users hold just before it.
        let midnight = CurrencyLedger.day(of: now)
        let export = try CurrencyExport(bundleID: bundle, from: start, to: midnight, knownAt: close)
        let reader = UserStateReader(pool: pool)
        let ids = (0..<users).map { "player-\($0)" }
        let clock = ContinuousClock()
        func rate(_ body: () async throws -> Void) async throws -> Double {
            let began = clock.now
            try await body()
            return Double(users) / (clock.now - began).seconds
        }
        var alone: [Double] = [], paged: [Int: [Double]] = [:]
        var expected: Int64?
        for _ in 1...rounds {
            alone.append(
                try await rate {
                    var held: Int64 = 0
                    for id in ids {
                        held +=
                            try await reader.state(bundleID: bundle, userID: id, at: midnight - 0.001, knownAt: close).balances["gems"] ?? 0
                    }
                    if expected == nil { expected = held }
                })
            for size in pageSizes {
                paged[size, default: []].append(
                    try await rate {
                        let closing = try await export.days(on: pool, pageSize: size).last?.closing
                        guard closing == expected else {
                            throw ValidationError(
                                "the close holds \(String(describing: closing)) gems, the users \(String(describing: expected))")
                        }
                    })
            }
        }
        await pool.close()
        print("The currency ledger of \(users) users (\(movements) grants and spends each, 60 days), medians of \(rounds) rounds:")
        print("  each user's history read alone (baseline)  " + String(format: "%8.0f users/s", median(alone)))
        for size in pageSizes {
            let value = median(paged[size]!)
            print(
                "  closed \(size) users a page".padding(toLength: 45, withPad: " ", startingAt: 0)
                    + String(format: "%8.0f users/s   ×%.2f", value, value / median(alone)))
        }
        print("  rounds: alone=\(alone.map { Int($0) }) " + pageSizes.map { "\($0)=\(paged[$0]!.map { Int($0) })" }.joined(separator: " "))
    }
}
