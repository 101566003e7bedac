import LedgerEventStore
import LedgerPostgres
import Logging
import LedgerProjections
import LedgerReconciliation
import ServiceLifecycle

/// Cross-process wake-ups for subscriptions (LISTEN) and for others (coalesced NOTIFY), for the
/// lifetime of the server.
public struct NotificationService: Service {
    let store: EventStore

    public init(store: EventStore) { self.store = store }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { await store.runNotifications() }
    }
}

/// Keeps the active projection version current for the lifetime of the server.
public struct ProjectionService: Service {
    let worker: ProjectionWorker

    public init(worker: ProjectionWorker) { self.worker = worker }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { await worker.run() }
    }
}

/// Keeps this server's cached timelines true to what any process's projection batches change.
public struct TimelineCacheService: Service {
    let cache: TimelineCache
    let configuration: PostgresConfiguration
    let logger: Logger

    public init(cache: TimelineCache, configuration: PostgresConfiguration, logger: Logger) {
        self.cache = cache
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { await cache.runInvalidations(configuration: configuration, logger: logger) }
    }
}

/// Recovers notifications the ledger missed from Apple's notification history, on start-up and
/// every interval (`LEDGER_APPLE_RECONCILE_INTERVAL`).
public struct ReconcilerService: Service {
    let reconciler: Reconciler

    public init(reconciler: Reconciler) { self.reconciler = reconciler }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { await reconciler.run() }
    }
}

/// Answers Apple's CONSUMPTION_REQUESTs waiting in the outbox, every few seconds.
public struct ConsumptionResponderService: Service {
    let responder: ConsumptionResponder
    let interval: Duration

    public init(responder: ConsumptionResponder, interval: Duration) {
        self.responder = responder
        self.interval = interval
    }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { await responder.run(every: interval) }
    }
}

extension LedgerServices {
    /// What runs beside the HTTP server, in start order (a service group stops them in reverse,
    /// so list the HTTP server after these: it stops first and finishes its requests while the
    /// projection worker still runs).
    /// `reconcileInterval`: how often Apple's notification history is read, with CONSUMPTION_REQUESTs
    /// answered every 15 s (nil: neither, as in tests that run them themselves).
    public func backgroundServices(pollInterval: Duration = .milliseconds(250), projecting: Bool = true, reconcileInterval: Duration? = nil,
                                   logger: Logger) -> [any Service] {
        let worker = ProjectionWorker(store: store, pollInterval: pollInterval, progress: progress, cache: timelines,
                                      durable: !reads.replicas.isEmpty, logger: logger)
        return [NotificationService(store: store), TimelineCacheService(cache: timelines, configuration: pool.configuration, logger: logger)]
            + (projecting ? [ProjectionService(worker: worker)] : [])
            + (reconcileInterval.map { interval -> [any Service] in
                [ReconcilerService(reconciler: Reconciler(recovery: recovery, directory: directory, interval: interval, logger: logger)),
                 ConsumptionResponderService(responder: consumption, interval: .seconds(15))]
            } ?? [])
    }
}
