/// Tests that load a 2-core machine with thousands of requests, and the tests that check every
/// request gets a decision under contention (their servers' 10 s pool waits are part of what they
/// check), run one at a time: side by side, CPU starvation from one made the other's requests wait
/// out the pool (seen in CI dry runs). Everything else still runs in parallel.
package actor HeavyTests {
    static let gate = HeavyTests()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Runs `body` when no other heavy test runs.
    package static func oneAtATime<T>(_ body: () async throws -> T) async rethrows -> T {
        await gate.acquire()
        do {
            let result = try await body()
            await gate.release()
            return result
        } catch {
            await gate.release()
            throw error
        }
    }
}
