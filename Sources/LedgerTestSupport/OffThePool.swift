import Foundation

/// Runs blocking work (a child process waited for, a poll with `usleep`) on a thread of its own
/// and awaits it. Swift's cooperative pool has a thread per core — two here — and a test that
/// blocks one for a minute (a failover manager deciding) starves every other test of the
/// process: their servers stop answering and their clients time out.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
