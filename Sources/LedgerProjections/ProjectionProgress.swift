import LedgerEventStore
import Synchronization

/// How far this process's projection worker has applied the log, for writers that answer only
/// once their write is visible (read-your-writes). A waiter is resumed by the worker's own
/// advance — no query, no polling: sixteen writers polling every half millisecond were 32,000
/// timer wake-ups a second on two cores. A write whose events another process projects is still
/// caught by the caller's slower check of the checkpoint row.
public final class ProjectionProgress: Sendable {
    private struct State {
        var applied = LogPosition.start
        var waiters: [Int: (position: LogPosition, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextID = 0
    }
    private let state = Mutex(State())

    public init() {}

    public var position: LogPosition { state.withLock { $0.applied } }

    func advance(to position: LogPosition) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard position > state.applied else { return [] }
            state.applied = position
            let ready = state.waiters.filter { $0.value.position <= position }
            for id in ready.keys { state.waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }

    /// True once the worker has applied `position`; false after `timeout` (or on cancellation).
    public func wait(for position: LogPosition, timeout: Duration) async -> Bool {
        if self.position >= position { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForAdvance(to: position); return self.position >= position }
            group.addTask { try? await Task.sleep(for: timeout); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || self.position >= position
        }
    }

    private func waitForAdvance(to position: LogPosition) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.applied >= position || Task.isCancelled { return true }
                    state.waiters[id] = (position, continuation)
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
