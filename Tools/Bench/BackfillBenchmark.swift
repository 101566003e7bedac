import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import ArgumentParser
import Crypto
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerReconciliation
import LedgerSchema
import LedgerSecrets
import LedgerServer
import Logging
import ServiceLifecycle

/// `ledger-bench backfill`: an adopting app's customers imported from the simulator's App Store
/// Server API (history pages, statuses, refunds; every JWS verified; recorded with ownership), end
/// to end, beside `EventStore.append(batch:)` of the very events it recorded, in the same run.
struct BackfillBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill",
        abstract: "Backfill from the local App Store Server API vs. append(batch:) of the same events.")

    @Option(help: "Customers per round.") var customers = 500
    @Option(help: "Transactions per customer (a subscription and its renewals).") var perCustomer = 10
    @Option(help: "Lines imported at a time.") var concurrency = 16
    @Option(help: "Measurement rounds (new customers each round).") var rounds = 3

    func run() async throws {
        let (database, _, logger) = try BenchDatabase.openMigrated()
        defer { database.close() }
        let bundle = "com.example.bench"
        // Apple: the simulator on loopback, one app known in both environments, one key.
        let authority = try TestCertificateAuthority()
        let simulator = ServerAPISimulator(pageSize: 20)
        let listener = VerifyReceiptServer()
        let urls = try await listener.start { simulator.register(on: $0) }
        defer { listener.stop() }
        let appleBase = String(urls.production.dropLast("/production/verifyReceipt".count))
        let signingKey = P256.Signing.PrivateKey()
        let issuer = UUID().uuidString.lowercased()
        let production = SimulatedApp(authority: authority, bundleID: bundle, appAppleID: 1_234_567_890, environment: "Production")
        var sandbox = production
        sandbox.environment = "Sandbox"
        for app in [production, sandbox] {
            simulator.register(app, key: .init(issuerID: issuer, keyID: "BENCHKEY1", publicKey: signingKey.publicKey))
        }

        // The ledger's parts as `ledger backfill` builds them, its projection following along.
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: logger)
        let pool = PostgresPool(
            configuration: {
                var c = database.configuration; c.role = "ledger_app"; return c
            }(), size: 16, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let services = LedgerServices(
            pool: pool, store: store, migrator: migrator, verifier: SignedDataVerifier(roots: [authority.root]),
            keyring: .ephemeral(), receipts: VerifyReceiptConfiguration(),
            serverAPI: ServerAPIConfiguration(productionURL: appleBase + "/production", sandboxURL: appleBase + "/sandbox"),
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: services.backgroundServices(logger: logger), logger: logger))
        let background = Task { try await group.run() }
        let credentials = try ServerAPICredentials(
            issuerID: issuer, keyID: "BENCHKEY1", privateKeyPEM: signingKey.pemRepresentation, bundleID: bundle)
        _ = try await services.directory.configure(
            bundle, settings: AppSettings(appleAppID: 1_234_567_890), sharedSecret: nil, serverAPI: credentials)
        _ = try await services.directory.define(.init(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]), in: bundle)
        let backfill = Backfill(
            lookups: services.lookups, ingestor: services.ingestor, pool: pool, concurrency: concurrency, logger: logger)

        var backfillRates: [Double] = [], batchRates: [Double] = []
        for round in 1...rounds {
            let lines = addCustomers(round: round, to: simulator, app: production)
            let clock = ContinuousClock()
            let started = clock.now
            let summary = try await backfill.run(bundleID: bundle, lines: lines)
            let seconds = (clock.now - started).seconds
            guard summary.failed.isEmpty else { throw ValidationError("backfill failed: \(summary)") }
            backfillRates.append(Double(summary.transactions) / seconds)
            // The baseline: the same events (same data, new ids and streams) through append(batch:).
            let appends = try await copies(of: round, bundle: bundle, pool: pool)
            let batchStarted = clock.now
            for chunk in stride(from: 0, to: appends.count, by: 500) {
                _ = try await store.append(batch: Array(appends[chunk..<min(chunk + 500, appends.count)]))
            }
            // Transactions' worth of events per second: the same events the backfill wrote for them.
            batchRates.append(Double(summary.transactions) / (clock.now - batchStarted).seconds)
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "round %d: backfill %.0f tx/s (%d events), append(batch:) of the same events %.0f tx/s\n",
                        round, backfillRates.last!, appends.reduce(0) { $0 + $1.events.count }, batchRates.last!
                    ).utf8))
        }
        await group.triggerGracefulShutdown()
        _ = await background.result
        await pool.close()

        let backfillMedian = median(backfillRates), batchMedian = median(batchRates)
        print("")
        print(
            "backfill, \(customers) customers × \(perCustomer) transactions a round, \(concurrency) lines at a time, \(rounds) rounds, medians"
        )
        print("  append(batch:) of the same events  \(format(batchMedian)) transactions' worth (the baseline)")
        print(
            "  backfill end to end                \(format(backfillMedian))   \(String(format: "%.1f %%", backfillMedian / batchMedian * 100)) of append(batch:) (goal ≥ 2,000/s)"
        )
        print(
            "all rounds: backfill=\(backfillRates.map { String(format: "%.0f", $0) }.joined(separator: ",")) batch=\(batchRates.map { String(format: "%.0f", $0) }.joined(separator: ","))"
        )
    }

    /// This round's customers: a subscription renewed monthly up to now, each its own customer.
    private func addCustomers(round: Int, to simulator: ServerAPISimulator, app: SimulatedApp) -> [BackfillLine] {
        let month: TimeInterval = 30 * 86_400
        let start = Date(timeIntervalSinceNow: -Double(perCustomer - 1) * month - 86_400)
        return (0..<customers).map { n in
            let original = "r\(round)c\(n)-0"
            var periods = [
                SimulatedTransaction(
                    transactionID: original, productID: "pro.monthly", purchaseDate: start, expiresDate: start.addingTimeInterval(month))
            ]
            for k in 1..<perCustomer { periods.append(periods.last!.renewed(transactionID: "r\(round)c\(n)-\(k)", period: month)) }
            simulator.add(periods, customer: "r\(round)-customer-\(n)", to: app)
            return BackfillLine(number: n + 2, userID: "r\(round)-user-\(n)", reference: .transaction(original))
        }
    }

    /// The events the round's backfill recorded, as appends to fresh streams with fresh ids.
    private func copies(of round: Int, bundle: String, pool: PostgresPool) async throws -> [StreamAppend] {
        let rows = try await pool.query(
            """
            SELECT stream, event_type, data::text AS data, metadata::text AS metadata, occurred_at FROM ledger.events
             WHERE stream LIKE $1 ORDER BY position
            """, ["purchase:\(bundle):r\(round)c%"])
        var byStream: [String: [NewEvent]] = [:]
        for row in rows {
            let event = NewEvent(
                id: UUID(), type: try row["event_type"].string(), data: try row["data"].string(),
                metadata: try row["metadata"].string(), occurredAt: try row["occurred_at"].date())
            byStream["copy:" + (try row["stream"].string()), default: []].append(event)
        }
        return byStream.map { StreamAppend(stream: $0.key, events: $0.value, expectedVersion: .noStream) }
    }
}
