import Hummingbird
import LedgerAccess
import LedgerConsole
import LedgerIngestion
import Logging
import Tracing

/// The HTTP edge's routes and middleware over the endpoints the composition root built.
package func buildApplication(
    endpoints: Endpoints, host: String, port: Int, limits: RequestLimits = RequestLimits(), logger: Logger, accessLog: Bool = false,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router(context: LedgerRequestContext.self)
    router.add(middleware: LimitsMiddleware(limits: limits))
    router.add(middleware: RequestIDMiddleware())
    // With no tracer (no OTLP endpoint configured) a request pays for no span at all; a caller's
    // trace id still reaches its log lines (`LedgerRequestContext` reads the header).
    if !(InstrumentationSystem.instrument is NoOpTracer) { router.add(middleware: RequestTracingMiddleware()) }
    if accessLog { router.add(middleware: AccessLogMiddleware(logger: logger)) }
    router.add(middleware: RequestMetricsMiddleware(metrics: endpoints.metrics))
    router.add(middleware: ErrorMiddleware())
    router.addRoutes(HealthController(readiness: endpoints.readiness).routes)
    OperationsController(metrics: endpoints.metrics, gauges: endpoints.gauges).register(on: router)
    let ingestion = IngestionController(ingestor: endpoints.ingestor, lookups: endpoints.lookups, metrics: endpoints.metrics)
    ingestion.registerWebhook(on: router)
    let retention = RetentionController(
        desk: RetentionDesk(ingestor: endpoints.ingestor), lookups: endpoints.lookups, directory: endpoints.directory,
        audit: endpoints.audit,
        metrics: endpoints.metrics)
    retention.registerRealtime(on: router)

    let v1 = router.group("v1").add(
        middleware: AuthMiddleware(
            keys: endpoints.keys, throttle: endpoints.throttle, limiter: KeyRateLimiter(), metrics: endpoints.metrics)
    ).add(
        middleware: PositionMiddleware())
    let directory = endpoints.directory
    AppsController(directory: directory, audit: endpoints.audit).register(on: v1)
    ingestion.register(on: v1)
    AppleController(lookups: endpoints.lookups, audit: endpoints.audit).register(on: v1)
    OffersController(offers: endpoints.offers).register(on: v1)
    retention.register(on: v1)
    UsersController(
        directory: directory, reader: endpoints.users, actions: endpoints.actions, audit: endpoints.audit, merges: endpoints.merges,
        subjectAccess: endpoints.subjectAccess, erasures: endpoints.erasures
    ).register(on: v1)
    ExportController(directory: directory, exports: endpoints.exports).register(on: v1)
    ChangesController(directory: directory, feed: endpoints.feed).register(on: v1)
    WebhooksController(directory: directory, registry: endpoints.webhooks, audit: endpoints.audit).register(on: v1)
    AuditController(audit: endpoints.audit).register(on: v1)
    ProofsController(proofs: endpoints.proofs).register(on: v1)
    // The templates are part of the binary: a missing one is a build fault, found by every test.
    try! ConsoleController<LedgerRequestContext>(console: endpoints.console).register(on: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "ledger"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
        logger: logger
    )
}
