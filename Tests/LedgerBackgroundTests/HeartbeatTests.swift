import LedgerBackground
import Testing

/// What `/readyz` reads of a part: failing since its first failed round, well again at its next
/// good one, silent when no round finished for too long — not while it rests on purpose, and never
/// for a part whose rounds last as long as Apple takes.
@Suite struct HeartbeatTests {
    struct AppleAway: Error, CustomStringConvertible {
        var description: String { "Apple did not answer" }
    }

    @Test func aFailedRoundIsFailingUntilARoundWorks() {
        let heartbeat = Heartbeat("consumption responder")
        heartbeat.failed(AppleAway())
        guard case .failing(_, let error) = heartbeat.status(silentAfter: .seconds(30)) else {
            Issue.record("not failing")
            return
        }
        #expect(error == "Apple did not answer")
        heartbeat.beat()
        #expect(heartbeat.status(silentAfter: .seconds(30)) == .ok)
    }

    @Test func aPartRestingOnPurposeIsNotSilentUntilItsRestIsOver() {
        let heartbeat = Heartbeat("reconciliation with Apple")
        let now = ContinuousClock.now
        heartbeat.beat(restingFor: .seconds(3600))
        #expect(heartbeat.status(silentAfter: .seconds(30), at: now + .seconds(1800)) == .ok)
        #expect(heartbeat.status(silentAfter: .seconds(30), at: now + .seconds(3620)) == .ok)
        guard case .silent = heartbeat.status(silentAfter: .seconds(30), at: now + .seconds(3700)) else {
            Issue.record("not silent after its rest and the silence allowed")
            return
        }
    }

    @Test func aPartThatWaitsForAppleIsNeverSilentOnlyFailing() {
        let heartbeat = Heartbeat("reconciliation with Apple", checksSilence: false)
        let now = ContinuousClock.now
        #expect(heartbeat.status(silentAfter: .seconds(30), at: now + .seconds(86_400)) == .ok)
        heartbeat.failed(AppleAway())
        #expect(heartbeat.status(silentAfter: .seconds(30), at: now + .seconds(86_400)) != .ok)
    }
}
