import LedgerPostgres
import LedgerTracing
import Synchronization

/// A request's place in a group commit, answered once: by the group's writer, or by the
/// request's deadline if that comes first (`DeadlineWatch`). The writer goes on with the group
/// either way — the request may still be recorded, which a client sending it again finds
/// recorded once — but the request is answered 503 on time instead of waiting out a commit that
/// hangs (a synchronous standby gone, a lock held elsewhere).
final class GroupWaiter<Value: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Value, any Error>?>(nil)
    private let watch: DeadlineWatch<Value>

    private init(watch: DeadlineWatch<Value>) { self.watch = watch }

    /// Waits for the answer until `deadline` (nil: as long as it takes); `enqueue` puts the
    /// waiter where the writer finds it.
    static func wait(
        by deadline: ContinuousClock.Instant?, watch: DeadlineWatch<Value>, _ enqueue: (GroupWaiter) -> Void
    ) async throws -> Value {
        let waiter = GroupWaiter(watch: watch)
        return try await withCheckedThrowingContinuation { continuation in
            waiter.continuation.withLock { $0 = continuation }
            if let deadline { watch.watch(waiter, until: deadline) }
            enqueue(waiter)
        }
    }

    /// The first answer stands; a later one (the writer's, after the deadline) is dropped.
    func answer(_ result: Result<Value, any Error>) {
        guard let continuation = continuation.withLock({ $0.take() }) else { return }
        watch.forget(self)
        continuation.resume(with: result)
    }
}

/// Answers the waiters of one group commit whose request's deadline passed: one task for all of
/// them, asleep until the soonest deadline and running only while some wait. A timer task for
/// each waiter cost about a tenth of the retention endpoint's answers per second.
final class DeadlineWatch<Value: Sendable>: Sendable {
    private struct State {
        var waiting: [ObjectIdentifier: (waiter: GroupWaiter<Value>, deadline: ContinuousClock.Instant)] = [:]
        var running = false
    }

    private let state = Mutex(State())

    init() {}

    func watch(_ waiter: GroupWaiter<Value>, until deadline: ContinuousClock.Instant) {
        let start = state.withLock { state in
            state.waiting[ObjectIdentifier(waiter)] = (waiter, deadline)
            defer { state.running = true }
            return !state.running
        }
        // The watch serves every request that waits, not the first one's deadline.
        if start { Task { await RequestDeadline.detached { await self.run() } } }
    }

    func forget(_ waiter: GroupWaiter<Value>) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    private func run() async {
        while true {
            let soonest: ContinuousClock.Instant? = state.withLock { state in
                guard let soonest = state.waiting.values.map(\.deadline).min() else {
                    state.running = false
                    return nil
                }
                return soonest
            }
            guard let soonest else { return }
            // At most a second asleep: a request with a sooner deadline may come meanwhile.
            try? await Task.sleep(until: min(soonest, .now + .seconds(1)), clock: .continuous)
            let overdue = state.withLock { state in
                let now = ContinuousClock.now
                let due = state.waiting.filter { $0.value.deadline <= now }
                for key in due.keys { state.waiting[key] = nil }
                return due.values.map(\.waiter)
            }
            for waiter in overdue { waiter.answer(.failure(PostgresError.requestDeadlinePassed())) }
        }
    }
}
