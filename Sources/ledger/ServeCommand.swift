import ArgumentParser
import Foundation
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

    func run() async throws {
        let logger = LoggingSetup.logger("ledger")
        let opened = try database.open(logger: logger)
        defer { opened.close(logger: logger) }

        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: logger)
        try migrator.migrate(PostgresConnection.connect(opened.owner))

        let pool = PostgresPool(configuration: opened.application, size: poolSize, logger: logger)
        let store = EventStore(pool: pool, logger: logger)
        let app = buildApplication(
            services: LedgerServices(pool: pool, store: store, migrator: migrator), host: host, port: port, logger: logger
        ) { port in
            logger.info("ledger listening", metadata: ["http.address": "http://\(host):\(port)", "db": "\(opened.owner)"])
        }
        let group = ServiceGroup(configuration: .init(
            services: [app, NotificationService(store: store), ProjectionService(worker: ProjectionWorker(store: store, logger: logger))], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await pool.close()
        logger.info("ledger stopped")
    }
}

/// Cross-process wake-ups for subscriptions (LISTEN) and for others (coalesced NOTIFY), for the
/// lifetime of the server.
struct NotificationService: Service {
    let store: EventStore

    func run() async throws {
        try await cancelWhenGracefulShutdown { await store.runNotifications() }
    }
}

/// Keeps the active projection version current for the lifetime of the server.
struct ProjectionService: Service {
    let worker: ProjectionWorker

    func run() async throws {
        try await cancelWhenGracefulShutdown { await worker.run() }
    }
}
