import Logging
import ServiceLifecycle

/// The one loop every background part of the server runs in: the part supplies a step — one round
/// of its work, saying when the next should start — and the loop owns the rest, the same way for
/// all of them. It stops on cancellation or the service group's graceful shutdown; it reports each
/// round to the part's `Heartbeat` (a beat after a step that worked, the error after one that
/// threw); it logs one line when the part starts failing and one when it recovers; after a failure
/// it waits by `Backoff` (reset by the next step that works), and between steps as the step asked.
///
/// A step that throws has failed as a whole and is tried again whole: each part keeps what must
/// survive a failure (its checkpoint, unrecorded attempts) in the database or in its own state.
package struct BackgroundLoop: Service, CustomStringConvertible {
    package typealias Step = @Sendable () async throws -> Next
    /// Waits `Duration`, or less when cancelled; tests give one that records and returns.
    package typealias Sleep = @Sendable (Duration) async -> Void

    /// The part's name and its report; `/readyz` reads the report when the server registered it.
    package let heartbeat: Heartbeat
    let backoff: Backoff
    let logger: Logger
    let sleep: Sleep
    let step: Step

    /// What it does, for the service group's logs and this loop's own.
    package var description: String { heartbeat.part }

    package init(
        reportingTo heartbeat: Heartbeat, backoff: Backoff = Backoff(), logger: Logger, sleep: @escaping Sleep = Self.taskSleep,
        step: @escaping Step
    ) {
        self.heartbeat = heartbeat
        self.backoff = backoff
        self.logger = logger
        self.sleep = sleep
        self.step = step
    }

    package static let taskSleep: Sleep = { try? await Task.sleep(for: $0) }

    /// Runs steps until cancelled or the service group shuts down gracefully.
    package func run() async throws {
        let loop = self
        await cancelWhenGracefulShutdown { await loop.runUntilCancelled() }
    }

    /// Runs steps until the task is cancelled; a part that runs inside another's service (the
    /// append notifications inside the LISTEN service) calls this.
    package func runUntilCancelled() async {
        var streak = FailureStreak()
        while !Task.isCancelled {
            let next: Next
            do {
                next = try await step()
            } catch {
                if Task.isCancelled { return } // a step cut short by the shutdown did not fail
                heartbeat.failed(error)
                if streak.failed() != nil { logStartedFailing(error) }
                await sleep(backoff.delay(afterFailures: streak.failures, jitter: Double.random(in: 0..<1)))
                continue
            }
            if case .recovered(let failures, let after) = streak.worked() { logRecovered(failures: failures, after: after) }
            heartbeat.beat(restingFor: next.rest)
            switch next {
            case .again: continue
            case .after(let duration): await sleep(duration)
            case .whenWoken(let wake): await wake()
            }
        }
    }

    // MARK: The failure log line

    /// Once, when the part starts failing: later rounds fail quietly until one works.
    private func logStartedFailing(_ error: any Error) {
        logger.warning("\(description) failing; retrying with backoff", metadata: ["part": "\(description)", "error": "\(error)"])
    }

    /// Once, when a round works after failed ones.
    private func logRecovered(failures: Int, after: Duration) {
        logger.info(
            "\(description) works again", metadata: ["part": "\(description)", "failures": "\(failures)", "failing_for": "\(after)"])
    }
}
