import AppStore
import Hummingbird
import LedgerChanges
import LedgerConsole
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import Logging

/// The composition root of the HTTP edge, shared by `ledger serve` and the tests.
package func buildApplication(
    services: LedgerServices, host: String, port: Int, limits: RequestLimits = RequestLimits(), logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router(context: LedgerRequestContext.self)
    router.add(middleware: LimitsMiddleware(limits: limits))
    router.add(middleware: RequestMetricsMiddleware(metrics: services.metrics))
    router.add(middleware: ErrorMiddleware())
    router.addRoutes(HealthController(services: services).routes)
    OperationsController(metrics: services.metrics, pool: services.pool, reads: services.reads).register(on: router)
    let ingestion = IngestionController(ingestor: services.ingestor, lookups: services.lookups, metrics: services.metrics)
    ingestion.registerWebhook(on: router)

    let v1 = router.group("v1").add(middleware: AuthMiddleware(keys: services.keys)).add(middleware: PositionMiddleware())
    let directory = services.directory
    AppsController(directory: directory).register(on: v1)
    ingestion.register(on: v1)
    AppleController(lookups: services.lookups).register(on: v1)
    OffersController(offers: OfferDesk(ingestor: services.ingestor)).register(on: v1)
    UsersController(directory: directory, reader: UserStateReader(pool: services.pool, cache: services.timelines, replicas: services.reads),
                    actions: services.actions).register(on: v1)
    ExportController(directory: directory, reads: services.reads).register(on: v1)
    ChangesController(directory: directory, feed: ChangeFeed(pool: services.pool, notifications: services.changes)).register(on: v1)
    WebhooksController(directory: directory, registry: services.webhooks).register(on: v1)
    let metrics = services.metrics
    let console = ConsoleContext(
        sessions: ConsoleSessions(pool: services.pool, keys: services.keys), directory: directory,
        reader: UserStateReader(pool: services.pool, cache: services.timelines, replicas: services.reads), metrics: MetricsReader(reads: services.reads),
        actions: services.actions, evidence: EvidenceStore(pool: services.pool), tokens: AppAccountTokens(store: services.store), lookups: services.lookups,
        pool: services.pool,
        refusals: { metrics.counts("ledger_evidence_total", by: "result") { $0 != "result" || $1 != "accepted" }.map { (code: $0.0, count: $0.1) } })
    // The templates are part of the binary: a missing one is a build fault, found by every test.
    try! ConsoleController<LedgerRequestContext>(console: console).register(on: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "ledger"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger
    )
}
