import Foundation

// The threads a rebuild runs on: its work is CPU-bound and blocking (libpq), so it uses threads
// of its own rather than Swift concurrency's cooperative pool.

/// Splits `count` items into `chunks` contiguous ranges and runs `body` on each on its own
/// thread (`concurrentPerform`), returning the results in range order.
enum Parallel {
    static func chunks<T>(of count: Int, into chunks: Int, _ body: (Int, Range<Int>) throws -> T) throws -> [T] {
        let chunks = max(1, chunks)
        let size = (count + chunks - 1) / chunks
        let slots = UnsafeMutablePointer<Result<T, any Error>?>.allocate(capacity: chunks)
        slots.initialize(repeating: nil, count: chunks)
        defer {
            slots.deinitialize(count: chunks)
            slots.deallocate()
        }
        // Each iteration writes only its own slot; the slots are read after all have returned.
        nonisolated(unsafe) let shared = slots
        withoutActuallyEscaping(body) { body in
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                let range = min(count, chunk * size)..<min(count, (chunk + 1) * size)
                shared[chunk] = Result { try body(chunk, range) }
            }
        }
        return try (0..<chunks).map { try slots[$0]!.get() }
    }

    /// Starts each task on a thread of its own (not the pool's: tasks that wait on the database
    /// should all be under way at once); `wait()` on the result throws the first error.
    static func start(_ tasks: [() throws -> Void]) -> Running {
        let running = Running()
        for task in tasks {
            nonisolated(unsafe) let task = task
            running.group.enter()
            Thread.detachNewThread {
                defer { running.group.leave() }
                do { try task() } catch { running.record(error) }
            }
        }
        return running
    }

    final class Running: @unchecked Sendable {
        let group = DispatchGroup()
        private let lock = NSLock()
        private var first: (any Error)?

        func record(_ error: any Error) { lock.withLock { if first == nil { first = error } } }

        func wait() throws {
            group.wait()
            if let error = lock.withLock({ first }) { throw error }
        }
    }
}
