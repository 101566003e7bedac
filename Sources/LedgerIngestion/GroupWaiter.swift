import LedgerPostgres
import LedgerTracing
import Synchronization

/// A request's place in a group commit, answered once: by the group's writer, or by the
/// request's deadline if that comes first. The writer goes on with the group either way — the
/// request may still be recorded, which a client sending it again finds recorded once — but the
/// request is answered 503 on time instead of waiting out a commit that hangs (a synchronous
/// standby gone, a lock held elsewhere).
final class GroupWaiter<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var timer: Task<Void, Never>?
        var answered = false
    }

    private let state = Mutex(State())

    private init() {}

    /// Waits for the answer until `deadline` (nil: as long as it takes); `enqueue` puts the
    /// waiter where the writer finds it.
    static func wait(by deadline: ContinuousClock.Instant?, _ enqueue: (GroupWaiter) -> Void) async throws -> Value {
        let waiter = GroupWaiter()
        return try await withCheckedThrowingContinuation { continuation in
            waiter.state.withLock { $0.continuation = continuation }
            if let deadline {
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { waiter.answer(.failure(PostgresError.requestDeadlinePassed())) }
                }
                let late = waiter.state.withLock { state in
                    if !state.answered { state.timer = timer }
                    return state.answered
                }
                if late { timer.cancel() }
            }
            enqueue(waiter)
        }
    }

    /// The first answer stands; a later one (the writer's, after the deadline) is dropped.
    func answer(_ result: Result<Value, any Error>) {
        let (continuation, timer) = state.withLock { state in
            defer {
                state.continuation = nil
                state.timer = nil
                state.answered = true
            }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(with: result)
    }
}
