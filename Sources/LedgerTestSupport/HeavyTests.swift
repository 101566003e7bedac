/// Tests that load a 2-core machine with thousands of requests, and the tests that check every
/// request gets a decision under contention (their servers' 10 s pool waits are part of what they
/// check), run one at a time: side by side, CPU starvation from one made the other's requests wait
/// out the pool (seen in CI dry runs). Everything else still runs in parallel.
package enum HeavyTests {
    /// One turn: the same semaphore server tests take turns by, with room for one.
    static let gate = Turns(count: 1)

    /// Runs `body` when no other heavy test runs.
    package static func oneAtATime<T>(_ body: () async throws -> T) async rethrows -> T {
        await gate.take()
        do {
            let result = try await body()
            await gate.give()
            return result
        } catch {
            await gate.give()
            throw error
        }
    }
}
