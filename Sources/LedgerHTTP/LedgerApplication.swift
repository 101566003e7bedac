import Hummingbird
import LedgerEventStore
import LedgerPostgres
import Logging

/// What the HTTP routes need from the rest of the ledger. Built once by `ledger serve` (and by
/// tests), so routes never reach for globals.
public struct LedgerServices: Sendable {
    public var pool: PostgresPool
    public var store: EventStore
    public var migrator: Migrator

    public init(pool: PostgresPool, store: EventStore, migrator: Migrator) {
        self.pool = pool
        self.store = store
        self.migrator = migrator
    }
}

/// The composition root of the HTTP edge, shared by `ledger serve` and the tests.
public func buildApplication(
    services: LedgerServices, host: String, port: Int, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router()
    router.addRoutes(HealthController(services: services).routes)
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "ledger"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger
    )
}
