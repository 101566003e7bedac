import Foundation
import Testing

/// Tests that start servers take turns: a few run at once, the rest wait their turn without
/// holding a thread. Every test of the suite started together — some fifty ledgers, each with its
/// workers polling, its pool and its PostgreSQL backends — was more than a slow machine could
/// serve: connections timed out while being opened and clients' budgets ran out in queues. A few at
/// a time, each test sees a machine it can finish on, and the whole run is no slower.
package struct TakingTurns: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's scope wraps its tests' scopes: only the tests themselves take turns.
        guard !test.isSuite else { return try await function() }
        await Turns.shared.take()
        do {
            try await function()
            await Turns.shared.give()
        } catch {
            await Turns.shared.give()
            throw error
        }
    }
}

extension Trait where Self == TakingTurns {
    /// Runs each test of the suite when one of a few turns is free (two per core).
    package static var takingTurns: Self { TakingTurns() }
}

/// Turns: a counting semaphore whose waiters are continuations, not threads (also `HeavyTests`' gate of one).
actor Turns {
    static let shared = Turns(count: max(2, 2 * ProcessInfo.processInfo.activeProcessorCount))
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}
