import ArgumentParser
import Foundation
import AppStore
import Hummingbird
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerSchema
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

    @Option(help: ArgumentHelp("Address to listen on (env LEDGER_HOST).", valueName: "host"))
    var host: String = ProcessInfo.processInfo.environment["LEDGER_HOST"] ?? "127.0.0.1"

    @Option(help: ArgumentHelp("Port to listen on; 0 picks a free one (env LEDGER_PORT).", valueName: "port"))
    var port: Int = Int(ProcessInfo.processInfo.environment["LEDGER_PORT"] ?? "") ?? 8080

    @Option(help: ArgumentHelp("Database connections in the pool (env LEDGER_POOL_SIZE).", valueName: "n"))
    var poolSize: Int = Int(ProcessInfo.processInfo.environment["LEDGER_POOL_SIZE"] ?? "") ?? 8

    @Option(name: .customLong("read-database-url"), help: ArgumentHelp(
        "Streaming replicas to serve reads from, comma-separated URLs (env LEDGER_READ_DATABASE_URL). Unset: the primary serves them.",
        valueName: "urls"))
    var readDatabaseURLs: String?

    @Option(help: ArgumentHelp(
        "Milliseconds a read waits for a replica to replay a write before the primary answers (env LEDGER_READ_REPLICA_WAIT_MS).",
        valueName: "ms"))
    var readReplicaWait: Int = Int(ProcessInfo.processInfo.environment["LEDGER_READ_REPLICA_WAIT_MS"] ?? "") ?? 250

    func run() async throws {
        let logger = LoggingSetup.logger("ledger")
        try await database.withDatabase(logger: logger) { opened, migrator in try await serve(opened, migrator: migrator, logger: logger) }
    }

    private func serve(_ opened: Database, migrator: Migrator, logger: Logger) async throws {
        let trust = try AppleTrust.load(logger: logger)
        let pool = PostgresPool(configuration: opened.application, size: poolSize, logger: logger)
        let replicas = replicaConfigurations(role: opened.role.name).map { PostgresPool(configuration: $0, size: poolSize, logger: logger) }
        for replica in replicas { logger.info("reads served by a replica", metadata: ["db": "\(replica.configuration)"]) }
        let store = EventStore(pool: pool, logger: logger)
        let services = LedgerServices(pool: pool, store: store, migrator: migrator, verifier: trust.verifier(),
                                      receipts: .fromEnvironment(ProcessInfo.processInfo.environment), replicas: replicas,
                                      replicaWait: .milliseconds(readReplicaWait), logger: logger)
        let app = buildApplication(services: services, host: host, port: port, logger: logger) { port in
            logger.info("ledger listening", metadata: ["http.address": "http://\(host):\(port)", "db": "\(opened.owner)"])
        }
        let group = ServiceGroup(configuration: .init(
            // Shut down last-listed first: the HTTP server stops accepting and finishes its requests
            // (which may wait for the projection) before the projection worker and LISTEN stop.
            services: services.backgroundServices(logger: logger) + [app],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await pool.close()
        for replica in replicas { await replica.close() }
        logger.info("ledger stopped")
    }
}

extension ServeCommand {
    /// One configuration per replica URL, narrowed to the application role like the primary's.
    func replicaConfigurations(role: String) -> [PostgresConfiguration] {
        let list = readDatabaseURLs ?? ProcessInfo.processInfo.environment["LEDGER_READ_DATABASE_URL"] ?? ""
        return list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { url in
            PostgresConfiguration(connectionString: url, applicationName: "ledger-reads", role: role)
        }
    }
}

/// The roots StoreKit 2 evidence must chain to (`LEDGER_APPLE_ROOT_CERTIFICATES`), announced at
/// start-up so an operator sees at once a missing Apple root or a test root in production.
enum AppleTrust {
    static func load(logger: Logger) throws -> TrustStore {
        let paths = ProcessInfo.processInfo.environment["LEDGER_APPLE_ROOT_CERTIFICATES"] ?? ""
        guard !paths.isEmpty else {
            logger.warning("no Apple roots configured (LEDGER_APPLE_ROOT_CERTIFICATES): every signed transaction and V2 notification will be refused as untrusted_chain; see docs/apple-roots.md")
            return TrustStore(roots: [])
        }
        let trust = try TrustStore.load(paths: paths)
        for (root, line) in zip(trust.roots, trust.summary) {
            if root.isAppleRootCAG3 { logger.info("\(line)") } else { logger.warning("\(line)") }
        }
        return trust
    }
}
