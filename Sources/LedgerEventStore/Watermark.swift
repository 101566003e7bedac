import Synchronization

/// A value that only rises, and tasks waiting for it to reach a mark: each is resumed by the rise
/// that reaches its mark, or at once if the value is already there — so no wake-up is lost between
/// "not yet" and "start waiting". Serves the log's append signal (`Wakeup`) and the projection's
/// progress that writers wait on (`ProjectionProgress`).
package final class Watermark<Value: Comparable & Sendable>: Sendable {
    private struct State {
        var value: Value
        var waiters: [Int: (mark: Value, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextID = 0
    }
    private let state: Mutex<State>

    package init(_ initial: Value) { state = Mutex(State(value: initial)) }

    package var value: Value { state.withLock { $0.value } }

    /// Raises the value to `next(value)` if that is higher, resuming every waiter it reaches.
    package func raise(_ next: (Value) -> Value) {
        let reached = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let raised = next(state.value)
            guard raised > state.value else { return [] }
            state.value = raised
            let reached = state.waiters.filter { $0.value.mark <= raised }
            for id in reached.keys { state.waiters[id] = nil }
            return reached.values.map(\.continuation)
        }
        for waiter in reached { waiter.resume() }
    }

    package func raise(to value: Value) { raise { max($0, value) } }

    /// True once the value has reached `mark`; false after `timeout` (or on cancellation).
    package func wait(reaching mark: Value, timeout: Duration) async -> Bool {
        if value >= mark { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntil(reaching: mark) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        return value >= mark
    }

    private func waitUntil(reaching mark: Value) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.value >= mark || Task.isCancelled { return true }
                    state.waiters[id] = (mark, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }
}
