import AppStore
import AppStoreSimulator
import Foundation
import GooglePlay
import Hummingbird
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerSchema
import LedgerSecrets
import LedgerServer
import LedgerWebhooks
import Logging
import ServiceLifecycle

/// The real server as `ledger serve` runs it (background services and HTTP in one service group),
/// on a benchmark database, trusting a test authority's root (a fresh one unless given: two
/// servers of one benchmark trust the same): what the HTTP benchmarks load.
struct BenchServer {
    let services: LedgerServices
    let pool: PostgresPool
    let authority: TestCertificateAuthority
    let base: String
    let group: ServiceGroup
    let task: Task<Void, any Error>

    static func start(
        on database: BenchDatabase, authority: TestCertificateAuthority? = nil, google: GooglePlayConfiguration = GooglePlayConfiguration(),
        logger: Logger
    ) async throws -> BenchServer {
        var application = database.configuration
        application.role = "ledger_app"
        return try await start(application: application, authority: authority, google: google, logger: logger)
    }

    /// The server on a database already migrated, connected as `application` says (a host
    /// list, a deadline).
    static func start(
        application: PostgresConfiguration, authority: TestCertificateAuthority? = nil,
        google: GooglePlayConfiguration = GooglePlayConfiguration(), logger: Logger
    ) async throws -> BenchServer {
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: logger)
        let pool = PostgresPool(configuration: application, size: 8, logger: logger)
        let authority = try authority ?? TestCertificateAuthority()
        // The benchmarks' webhook receiver listens on loopback.
        var webhooks = WebhookPolicy()
        webhooks.targets.allowPrivateNetworks = true
        let services = LedgerServices(
            pool: pool, store: EventStore(pool: pool, logger: logger), migrator: migrator,
            verifier: SignedDataVerifier(roots: [authority.root]), keyring: .ephemeral(), receipts: VerifyReceiptConfiguration(),
            google: google, webhookPolicy: webhooks,
            logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = services.application(host: "127.0.0.1", port: 0, logger: logger) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: services.backgroundServices(logger: logger) + [app], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let base = "http://127.0.0.1:\(await iterator.next()!)"
        return BenchServer(services: services, pool: pool, authority: authority, base: base, group: group, task: task)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
        await pool.close()
    }
}
