import Synchronization

/// One writer per stream at a time inside this process, the others queued in arrival order.
///
/// Decisions that read a stream and then append to it (a spend against a balance, an ownership
/// claim) used to race and retry; under load some never won and were answered "try again". Here
/// they take turns instead, and a turn costs no database connection while it waits: only the
/// holder has one. Across processes the holder also takes a PostgreSQL advisory lock on the stream
/// (`EventStore.serialized`), which this queue keeps to one waiter per server.
///
/// A waiter is not cancelled: every turn is bounded (the pool's wait limit, one short
/// transaction), and a cancelled caller's turn passes straight on to the next.
final class StreamLocks: Sendable {
    private struct Queue {
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    /// Streams with a holder, and who waits for each.
    private let held = Mutex<[String: Queue]>([:])

    func withLock<T>(_ stream: String, _ body: () async throws -> T) async throws -> T {
        await acquire(stream)
        defer { release(stream) }
        return try await body()
    }

    private func acquire(_ stream: String) async {
        let free = held.withLock { held in
            guard held[stream] == nil else { return false }
            held[stream] = Queue()
            return true
        }
        guard !free else { return }
        await withCheckedContinuation { continuation in
            let nowFree = held.withLock { held -> Bool in
                guard held[stream] != nil else {
                    held[stream] = Queue() // released between the two looks
                    return true
                }
                held[stream]!.waiting.append(continuation)
                return false
            }
            if nowFree { continuation.resume() }
        }
    }

    /// Hands the stream to the next waiter (it stays held), or frees it.
    private func release(_ stream: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var queue = held[stream], !queue.waiting.isEmpty else {
                held[stream] = nil
                return nil
            }
            let next = queue.waiting.removeFirst()
            held[stream] = queue
            return next
        }
        next?.resume()
    }
}
