import LedgerBackground
import Logging
import Synchronization
import Testing

/// The loop every background part runs in, with no database and no clock: steps scripted round by
/// round, the waits recorded instead of slept, the log lines kept in memory.
@Suite struct BackgroundLoopTests {
    struct DatabaseAway: Error, CustomStringConvertible {
        var description: String { "the database is away" }
    }

    /// What a scripted run saw: the waits the loop asked for, and notes the steps took.
    final class Script: Sendable {
        let sleeps = Mutex<[Duration]>([])
        let rounds = Mutex(0)
        let notes = Mutex<[String: String]>([:])

        var sleep: BackgroundLoop.Sleep { { duration in self.sleeps.withLock { $0.append(duration) } } }

        /// The round this is, from 1.
        func nextRound() -> Int {
            rounds.withLock {
                $0 += 1; return $0
            }
        }
        func note(_ key: String, _ value: String) { notes.withLock { $0[key] = value } }
    }

    static let backoff = Backoff(first: .seconds(1), limit: .seconds(60))

    /// Ends the run from inside a step: the shutdown cutting a step short, which is no failure.
    static func stop() throws -> Never {
        withUnsafeCurrentTask { $0?.cancel() }
        throw CancellationError()
    }

    /// Runs the loop in a task of its own (the one `stop` cancels) until it ends.
    static func run(_ loop: BackgroundLoop) async {
        await Task { await loop.runUntilCancelled() }.value
    }

    @Test func aPartThatFailsTwiceIsFailingThenWellAndSaysEachOnce() async throws {
        let (script, lines, heartbeat) = (Script(), RecordedLines(), Heartbeat("projection worker"))
        let loop = BackgroundLoop(reportingTo: heartbeat, backoff: Self.backoff, logger: lines.logger, sleep: script.sleep) {
            switch script.nextRound() {
            case 1, 2: throw DatabaseAway()
            case 3:
                script.note("status after two failures", "\(heartbeat.status(silentAfter: .seconds(30)))")
                script.note("lines after two failures", "\(lines.all.count)")
                return .after(.seconds(7))
            case 4:
                script.note("status after a round that worked", "\(heartbeat.status(silentAfter: .seconds(30)))")
                throw DatabaseAway()
            default: try Self.stop()
            }
        }
        await Self.run(loop)

        let notes = script.notes.withLock { $0 }
        #expect(notes["status after two failures"]?.hasPrefix("failing(") == true)
        #expect(notes["status after two failures"]?.contains("the database is away") == true)
        #expect(notes["lines after two failures"] == "1", "two failures in a row are one line")
        #expect(notes["status after a round that worked"] == "ok")
        #expect(heartbeat.status(silentAfter: .seconds(30)) != .ok, "the last round failed")

        let said = lines.all
        #expect(said.map(\.level) == [.warning, .info, .warning], "a line when failing starts, one on recovery, none for a shutdown")
        #expect(said.first?.message.contains("projection worker") == true)
        #expect(said.first?.metadata["part"] == "projection worker")
        #expect(said.first?.metadata["error"] == "the database is away")
        #expect(said.dropFirst().first?.metadata["failures"] == "2")
    }

    @Test func theBackoffGrowsWithEachFailureAndStartsOverAfterARoundThatWorked() async throws {
        let script = Script()
        let loop = BackgroundLoop(
            reportingTo: Heartbeat("change projection"), backoff: Self.backoff, logger: RecordedLines().logger, sleep: script.sleep
        ) {
            switch script.nextRound() {
            case 1, 2, 3, 5: throw DatabaseAway()
            case 4: return .after(.seconds(7))
            default: try Self.stop()
            }
        }
        await Self.run(loop)

        let sleeps = script.sleeps.withLock { $0 }
        try #require(sleeps.count == 5, "\(sleeps)")
        // Each wait is in the upper half of its ceiling: 1 s, 2 s, 4 s; then the rest asked for; then 1 s again.
        #expect(sleeps[0] > .milliseconds(500) && sleeps[0] <= .seconds(1))
        #expect(sleeps[1] > .seconds(1) && sleeps[1] <= .seconds(2))
        #expect(sleeps[2] > .seconds(2) && sleeps[2] <= .seconds(4))
        #expect(sleeps[3] == .seconds(7))
        #expect(sleeps[4] > .milliseconds(500) && sleeps[4] <= .seconds(1), "reset by the round that worked")
    }

    @Test func againRunsTheNextStepAtOnce() async throws {
        let script = Script()
        let heartbeat = Heartbeat("webhook deliveries")
        let loop = BackgroundLoop(reportingTo: heartbeat, logger: RecordedLines().logger, sleep: script.sleep) {
            if script.nextRound() > 100 { try Self.stop() }
            return .again
        }
        await Self.run(loop)
        #expect(script.rounds.withLock { $0 } == 101)
        #expect(script.sleeps.withLock { $0 }.isEmpty, "no wait between steps that ask for more at once")
        #expect(heartbeat.status(silentAfter: .seconds(30)) == .ok)
    }

    @Test func whenWokenTheNextStepWaitsForTheWakeUp() async throws {
        let script = Script()
        let order = Mutex<[String]>([])
        let loop = BackgroundLoop(reportingTo: Heartbeat("notifications"), logger: RecordedLines().logger, sleep: script.sleep) {
            order.withLock { $0.append("step") }
            if script.nextRound() > 2 { try Self.stop() }
            return .whenWoken { order.withLock { $0.append("woken") } }
        }
        await Self.run(loop)
        #expect(order.withLock { $0 } == ["step", "woken", "step", "woken", "step"])
        #expect(script.sleeps.withLock { $0 }.isEmpty, "the wake-up is the part's own wait, no sleep added")
    }
}
