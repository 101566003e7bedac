import LedgerBackground
import Testing

/// The wait after failed rounds in a row: doubled each time from the first, never past the limit,
/// less a random part of its upper half so parts that failed together do not retry together.
@Suite struct BackoffTests {
    @Test func eachCeilingDoublesUpToTheLimit() {
        let backoff = Backoff(first: .milliseconds(100), limit: .seconds(5))
        let ceilings = (1...9).map { backoff.ceiling(afterFailures: $0) }
        #expect(ceilings == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000].map { Duration.milliseconds($0) })
    }

    @Test func theJitterTakesAtMostHalfOff() {
        let backoff = Backoff(first: .seconds(1), limit: .seconds(60))
        #expect(backoff.delay(afterFailures: 3, jitter: 0) == .seconds(4))
        #expect(backoff.delay(afterFailures: 3, jitter: 0.5) == .seconds(3))
        #expect(backoff.delay(afterFailures: 3, jitter: 1) > .seconds(2), "never half or less: each wait is longer than the one before")
    }

    @Test func aLimitBelowTheFirstWaitIsTheFirstWait() {
        #expect(Backoff(first: .seconds(5), limit: .seconds(1)).ceiling(afterFailures: 4) == .seconds(5))
    }

    @Test func aStreakSaysWhenFailingStartsAndWhenItEnds() {
        var streak = FailureStreak()
        let start = ContinuousClock.now
        #expect(streak.worked(at: start) == nil, "working all along: nothing to say")
        #expect(streak.failed(at: start) == .startedFailing)
        #expect(streak.failed(at: start + .seconds(1)) == nil)
        #expect(streak.failures == 2)
        #expect(streak.worked(at: start + .seconds(3)) == .recovered(failures: 2, after: .seconds(3)))
        #expect(streak.failures == 0 && streak.worked() == nil)
    }

    @Test func anOutboxRowWaitsFiveSecondsDoublingToAnHour() {
        let waits = (1...12).map { Backoff.outboxRetry.ceiling(afterFailures: $0) }
        #expect(waits == [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600].map { Duration.seconds($0) })
        #expect(Backoff.outboxRetry.ceiling(afterFailures: 0) == .seconds(5))
    }
}
