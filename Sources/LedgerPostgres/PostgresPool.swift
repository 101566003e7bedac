import LedgerTracing
import Logging
import NIOPosix
import Synchronization
import Tracing

/// A fixed number of connections, each used by one caller at a time, on dedicated threads.
///
/// Callers hand the pool a *synchronous* closure; it runs on a thread of the pool's own
/// `NIOThreadPool` (one thread per connection), never on Swift's cooperative pool. That shape also
/// makes it impossible to `await` something slow (a call to Apple) while holding a transaction open.
///
/// Connections open lazily. One that breaks is dropped and its slot reconnects on next use, so a
/// database that goes away yields `connectionFailed`/`connectionLost` errors and the pool recovers
/// by itself when the database returns.
package final class PostgresPool: Sendable {
    package let configuration: PostgresConfiguration
    package let size: Int
    private let threads: NIOThreadPool
    private let state: Mutex<State>
    private let waitLimit: Duration
    private let logger: Logger

    private let vitals = Mutex(PoolVitals())

    private struct State: ~Copyable {
        var idle: [Slot]
        var waiters: [(id: Int, continuation: CheckedContinuation<Slot, any Error>)] = []
        var nextWaiterID = 0
        var closed = false
    }

    /// A connection slot; `connection` is nil until opened or after it broke.
    struct Slot: @unchecked Sendable {
        var connection: PostgresConnection?
    }

    package init(configuration: PostgresConfiguration, size: Int = 4, waitLimit: Duration = .seconds(10), logger: Logger) {
        precondition(size > 0, "a pool needs at least one connection")
        self.configuration = configuration
        self.size = size
        self.waitLimit = waitLimit
        self.logger = logger
        self.threads = NIOThreadPool(numberOfThreads: size)
        self.threads.start()
        self.state = Mutex(State(idle: Array(repeating: Slot(connection: nil), count: size)))
    }

    /// Runs `body` with exclusive use of one connection, on a pool thread.
    /// A request's deadline (`RequestDeadline`) bounds the wait for a connection, the making of
    /// one and every answer `body` waits for; past it the call fails as `requestDeadline`.
    package func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let deadline = RequestDeadline.current
        if RequestDeadline.hasPassed { throw PostgresError.requestDeadlinePassed() }
        let slot = try await acquire(by: deadline)
        let configuration = self.configuration
        let logger = self.logger
        // The pool's threads are not the caller's task: its trace and deadline go along by hand.
        let context = ServiceContext.current
        let outcome: (Slot, Result<T, any Error>)
        do {
            outcome = try await threads.runIfActive {
                ServiceContext.withValue(context) {
                    RequestDeadline.$current.withValue(deadline) { self.run(slot, body, configuration: configuration, logger: logger) }
                }
            }
        } catch {
            release(Slot(connection: nil))
            throw PostgresError(code: .poolClosed, message: "the pool's threads are shut down")
        }
        release(outcome.0)
        return try outcome.1.get()
    }

    /// On a pool thread: the slot's connection checked (or opened), `body` run on it, the
    /// connection kept or retired.
    private func run<T>(
        _ slot: Slot, _ body: (PostgresConnection) throws -> T, configuration: PostgresConfiguration, logger: Logger
    ) -> (Slot, Result<T, any Error>) {
        var slot = slot
        if let idle = slot.connection, !idle.checkAlive() { slot.connection = nil }
        do {
            let opened = slot.connection == nil
            let connection = try slot.connection ?? PostgresConnection.connect(Self.within(RequestDeadline.current, configuration))
            slot.connection = connection
            let result = Result { try body(connection) }
            if !connection.isHealthy {
                logger.warning("postgres connection broke; it will be replaced", metadata: ["db": "\(configuration)"])
                slot.connection = nil
                self.vitals.withLock { $0.lost(opened: opened) }
            } else {
                if connection.isInTransaction {
                    // A body that escaped mid-transaction must not leak it to the next caller.
                    connection.rollbackIfNeeded()
                }
                self.vitals.withLock { $0.reached(opened: opened) }
            }
            return (slot, result)
        } catch {
            self.vitals.withLock { $0.lost(opened: false) }
            return (Slot(connection: nil), .failure(error))
        }
    }

    /// How the pool has fared with its database: connections opened and dropped, and since when
    /// (if at all) it has been unable to reach it — for a pool on a host list with
    /// `target_session_attrs=read-write`, the time without a primary accepting commits.
    package var health: PoolHealth { vitals.withLock { $0.health } }

    /// Connections in use now, and callers waiting for one.
    package var usage: (inUse: Int, waiting: Int) {
        state.withLock { state in (state.closed ? 0 : size - state.idle.count, state.waiters.count) }
    }

    /// BEGIN; body; COMMIT on one pooled connection (ROLLBACK when `body` throws).
    package func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.transaction(body) }
    }

    /// One statement on any free connection.
    @discardableResult
    package func query(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) async throws -> PostgresRows {
        try await withConnection { try $0.query(sql, parameters) }
    }

    /// Closes every connection and stops the threads. Waiting callers get `poolClosed`.
    package func close() async {
        let waiters = state.withLock { state -> [CheckedContinuation<Slot, any Error>] in
            state.closed = true
            state.idle.removeAll()
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(throwing: PostgresError(code: .poolClosed, message: "the pool was closed")) }
        try? await threads.shutdownGracefully()
    }

    // MARK: - Slots

    /// `configuration` with its connect timeout cut to what is left before `deadline`, in whole
    /// seconds as libpq takes it (at least one).
    private static func within(_ deadline: ContinuousClock.Instant?, _ configuration: PostgresConfiguration) -> PostgresConfiguration {
        guard let deadline else { return configuration }
        let left = (deadline - .now).components.seconds + 1
        var cut = configuration
        cut.connectTimeoutSeconds = Int(max(1, min(Int64(configuration.connectTimeoutSeconds), left)))
        return cut
    }

    private func acquire(by deadline: ContinuousClock.Instant?) async throws -> Slot {
        enum Immediate { case slot(Slot), closed, wait }
        let immediate: Immediate = state.withLock { state in
            if state.closed { return .closed }
            if let slot = state.idle.popLast() { return .slot(slot) }
            return .wait
        }
        switch immediate {
        case .slot(let slot): return slot
        case .closed: throw PostgresError(code: .poolClosed, message: "the pool was closed")
        case .wait: break
        }

        let id = state.withLock { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let waitLimit = self.waitLimit
        let ownLimit = ContinuousClock.now + waitLimit
        let timeout = Task { [weak self] in
            if let deadline, deadline < ownLimit {
                try await Task.sleep(until: deadline)
                self?.expireWaiter(id, error: PostgresError.requestDeadlinePassed())
            } else {
                try await Task.sleep(until: ownLimit)
                self?.expireWaiter(id, error: PostgresError(code: .poolTimeout, message: "no connection became free within \(waitLimit)"))
            }
        }
        defer { timeout.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Cancellation is checked under the lock: a cancellation that came before this
                // waiter was queued found nothing to expire, and must not leave it waiting.
                let readyNow: Result<Slot, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.closed { return .failure(PostgresError(code: .poolClosed, message: "the pool was closed")) }
                    if let slot = state.idle.popLast() { return .success(slot) }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let readyNow { continuation.resume(with: readyNow) }
            }
        } onCancel: {
            expireWaiter(id, error: CancellationError())
        }
    }

    private func expireWaiter(_ id: Int, error: any Error) {
        let waiter = state.withLock { state -> CheckedContinuation<Slot, any Error>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).continuation
        }
        waiter?.resume(throwing: error)
    }

    private func release(_ slot: Slot) {
        let waiter = state.withLock { state -> CheckedContinuation<Slot, any Error>? in
            if state.closed { return nil }
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.idle.append(slot)
            return nil
        }
        waiter?.resume(returning: slot)
    }
}

/// What `PostgresPool.health` reports.
package struct PoolHealth: Sendable {
    /// Connections opened, the first of each slot included.
    package var connectionsOpened = 0
    /// Connections dropped because they broke, were retired (the server left, or became read-only)
    /// or could not be opened.
    package var connectionsLost = 0
    /// Since when every attempt to use the database has failed; nil while it answers.
    package var unavailableSince: ContinuousClock.Instant?
    /// Time spent unavailable, closed periods only (add `unavailableSince` for the current one).
    package var unavailableTotal = Duration.zero
    /// Since when every statement has found the database; nil while it is away.
    package var availableSince: ContinuousClock.Instant?

    /// The current period without the database, zero while it answers.
    package func unavailable(at now: ContinuousClock.Instant = .now) -> Duration {
        unavailableSince.map { now - $0 } ?? .zero
    }

    /// How long the database has answered without a break, zero while it is away.
    package func available(at now: ContinuousClock.Instant = .now) -> Duration {
        availableSince.map { now - $0 } ?? .zero
    }
}

/// The pool's bookkeeping behind `PoolHealth`: a period of unavailability starts with the first
/// lost or unopenable connection and ends with the first statement a healthy connection answers.
struct PoolVitals {
    var health = PoolHealth()

    mutating func reached(opened: Bool) {
        if opened { health.connectionsOpened += 1 }
        if let since = health.unavailableSince {
            health.unavailableTotal += ContinuousClock.now - since
            health.unavailableSince = nil
        }
        if health.availableSince == nil { health.availableSince = .now }
    }

    mutating func lost(opened: Bool) {
        if opened { health.connectionsOpened += 1 }
        health.connectionsLost += 1
        if health.unavailableSince == nil { health.unavailableSince = .now }
        health.availableSince = nil
    }
}
