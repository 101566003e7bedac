import AppStore
import ArgumentParser
import Foundation
import Hummingbird
import LedgerAccess
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerProofs
import LedgerReconciliation
import LedgerSchema
import LedgerServer
import Logging
import ServiceLifecycle
import UnixSignals

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP server (migrating the database first).",
        discussion: "Stops gracefully on SIGTERM or SIGINT: stops accepting, finishes requests in flight, closes the pool."
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Address to listen on (env LEDGER_HOST, default 127.0.0.1).", valueName: "host"))
    var host: String?

    @Option(help: ArgumentHelp("Port to listen on; 0 picks a free one (env LEDGER_PORT, default 8080).", valueName: "port"))
    var port: Int?

    @Option(help: ArgumentHelp("Database connections in the pool (env LEDGER_POOL_SIZE, default 8).", valueName: "n"))
    var poolSize: Int?

    @Option(
        name: .customLong("read-database-url"),
        help: ArgumentHelp(
            "Streaming replicas to serve reads from, comma-separated URLs (env LEDGER_READ_DATABASE_URL). Unset: the primary serves them.",
            valueName: "urls"))
    var readDatabaseURLs: String?

    @Option(
        help: ArgumentHelp(
            "Milliseconds a read waits for a replica to replay a write before the primary answers (env LEDGER_READ_REPLICA_WAIT_MS, default 250).",
            valueName: "ms"))
    var readReplicaWait: Int?

    /// The environment's settings with this command's flags applied.
    var settings: Configuration {
        get throws {
            try database.settings.applying { settings in
                if let host { settings.host = host }
                if let port { settings.port = port }
                if let poolSize { settings.poolSize = poolSize }
                if let readDatabaseURLs { settings.readDatabaseURLs = Configuration.list(readDatabaseURLs) }
                if let readReplicaWait { settings.readReplicaWait = .milliseconds(readReplicaWait) }
            }
        }
    }

    func run() async throws {
        let logger = LoggingSetup.logger("ledger")
        let settings = try self.settings
        try await database.withDatabase(logger: logger) { opened, migrator in
            try await Self.serve(opened, migrator: migrator, settings: settings, logger: logger)
        }
    }

    private static func serve(_ opened: Database, migrator: Migrator, settings: Configuration, logger: Logger) async throws {
        let traces = try TracingSetup.bootstrap(settings.tracing, logger: logger)
        let services = try makeServices(opened, migrator: migrator, settings: settings, logger: logger)
        let host = settings.host
        let watchdog = settings.stuckAfter.map { Watchdog(host: host, patience: $0, logger: logger) }
        let app = services.application(
            host: host, port: settings.port, limits: settings.limits, logger: logger, accessLog: settings.accessLog
        ) { port in
            logger.info("ledger listening", metadata: ["http.address": "http://\(host):\(port)", "db": "\(opened.owner)"])
            watchdog?.start(port: port)
        }
        if let interval = settings.reconcileInterval {
            logger.info("notification history is read from Apple every \(interval) for apps with an App Store Server API key")
        }
        let group = ServiceGroup(
            configuration: .init(
                // Shut down last-listed first: the HTTP server stops accepting and finishes its requests
                // (which may wait for the projection) before the projection worker and LISTEN stop.
                // The pools are listed first, so they are closed last.
                // The trace exporter is listed before them all: it sends the last spans at the end.
                services: (traces.map { [$0] } ?? []) + [services.pools]
                    + services.backgroundServices(reconcileInterval: settings.reconcileInterval, logger: logger) + [app],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        watchdog?.stop()
        if let reason = watchdog?.reason {
            logger.error("ledger stopped: it could not recover by itself", metadata: ["reason": "\(reason)"])
            throw ExitCode(70)
        }
        logger.info("ledger stopped")
    }

    /// The server's parts from the settings — the same for `serve` and for commands that record
    /// what they learn from Apple (`reconcile`): one composition, no second way to build it.
    static func makeServices(_ opened: Database, migrator: Migrator, settings: Configuration, logger: Logger) throws -> LedgerServices {
        let trust = try AppleTrust.load(paths: settings.appleRootCertificates, logger: logger)
        let keyring = try SecretsKeys.keyring(settings, for: opened, logger: logger)
        try SecretsKeys.prepare(keyring, on: opened, logger: logger)
        var application = opened.application
        application.deadline = settings.databaseDeadline
        let pool = PostgresPool(configuration: application, size: settings.poolSize, logger: logger)
        let replicas = settings.readDatabaseURLs.map { url in
            PostgresPool(
                configuration: PostgresConfiguration(
                    connectionString: url, applicationName: "ledger-reads", role: opened.role.name, deadline: settings.databaseDeadline),
                size: settings.poolSize, logger: logger)
        }
        for replica in replicas { logger.info("reads served by a replica", metadata: ["db": "\(replica.configuration)"]) }
        let store = EventStore(pool: pool, logger: logger)
        let services = LedgerServices(
            pool: pool, store: store, migrator: migrator, verifier: trust.verifier(), keyring: keyring,
            receipts: settings.verifyReceipt, serverAPI: settings.serverAPI, google: settings.google, replicas: replicas,
            replicaWait: settings.readReplicaWait, webhookPolicy: settings.webhooks,
            throttle: FailureThrottle(limit: settings.authenticationFailureLimit, trustedProxies: Set(settings.trustedProxies)),
            stuckAfter: settings.stuckAfter ?? .seconds(60), digestKey: try settings.digestKeyFile.map(DigestKey.init(contentsOf:)),
            digestSinks: settings.digestSinks, digestInterval: settings.digestInterval, logger: logger)
        return services
    }

    /// `body` with the server's parts, for a command that records what it learns from Apple
    /// (`reconcile`, `backfill`): the background services run beside it as under a server — the
    /// projection follows what is recorded — and stop gracefully once it is done, thrown or not.
    static func withServices<T>(
        _ database: DatabaseOptions, settings: Configuration, logger: Logger, _ body: (LedgerServices) async throws -> T
    ) async throws -> T {
        try await database.withDatabase(logger: logger) { opened, migrator in
            let services = try makeServices(opened, migrator: migrator, settings: settings, logger: logger)
            let group = ServiceGroup(
                configuration: .init(
                    services: [services.pools] + services.backgroundServices(delivering: false, logger: logger), logger: logger))
            let background = Task { try await group.run() }
            let result = await Result(catching: { try await body(services) })
            await group.triggerGracefulShutdown()
            _ = await background.result
            return try result.get()
        }
    }
}

/// The roots StoreKit 2 evidence must chain to (`LEDGER_APPLE_ROOT_CERTIFICATES`), announced at
/// start-up so an operator sees at once a missing Apple root or a test root in production.
enum AppleTrust {
    static func load(paths: String?, logger: Logger) throws -> TrustStore {
        guard let paths, !paths.isEmpty else {
            logger.warning(
                "no Apple roots configured (LEDGER_APPLE_ROOT_CERTIFICATES): every signed transaction and V2 notification will be refused as untrusted_chain; see docs/apple-roots.md"
            )
            return TrustStore(roots: [])
        }
        let trust = try TrustStore.load(paths: paths)
        for (root, line) in zip(trust.roots, trust.summary) {
            if root.isApples { logger.info("\(line)") } else { logger.warning("\(line)") }
        }
        return trust
    }
}
