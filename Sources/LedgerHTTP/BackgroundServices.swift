import LedgerEventStore
import LedgerProjections
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
