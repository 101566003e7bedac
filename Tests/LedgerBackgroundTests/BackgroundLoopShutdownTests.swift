import LedgerBackground
import Logging
import ServiceLifecycle
import Testing

/// A loop resting or waiting ends when its task is cancelled or its service group shuts down —
/// the waits are the real ones here, an hour long, so a loop that did not end would hang the test
/// until its time limit rather than pass by luck.
@Suite(.timeLimit(.minutes(1))) struct BackgroundLoopShutdownTests {
    /// A loop whose steps rest for an hour; `started` yields at each step.
    static func resting(_ started: AsyncStream<Void>.Continuation) -> BackgroundLoop {
        BackgroundLoop(reportingTo: Heartbeat("reconciliation with Apple"), logger: RecordedLines().logger) {
            started.yield()
            return .after(.seconds(3600))
        }
    }

    @Test func cancellationEndsALoopThatRests() async throws {
        let (steps, started) = AsyncStream.makeStream(of: Void.self)
        let loop = Self.resting(started)
        let running = Task { await loop.runUntilCancelled() }
        var iterator = steps.makeAsyncIterator()
        await iterator.next()
        running.cancel()
        await running.value
    }

    @Test func cancellationEndsALoopWaitingToBeWoken() async throws {
        let (steps, started) = AsyncStream.makeStream(of: Void.self)
        let loop = BackgroundLoop(reportingTo: Heartbeat("projection worker"), logger: RecordedLines().logger) {
            started.yield()
            return .whenWoken { try? await Task.sleep(for: .seconds(3600)) }
        }
        let running = Task { await loop.runUntilCancelled() }
        var iterator = steps.makeAsyncIterator()
        await iterator.next()
        running.cancel()
        await running.value
    }

    @Test func aGracefulShutdownOfItsServiceGroupEndsIt() async throws {
        let (steps, started) = AsyncStream.makeStream(of: Void.self)
        let logger = RecordedLines().logger
        let group = ServiceGroup(configuration: .init(services: [Self.resting(started)], logger: logger))
        let running = Task { try await group.run() }
        var iterator = steps.makeAsyncIterator()
        await iterator.next()
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
