import Foundation
import LedgerCore
import Testing

@testable import AppStoreServerAPI

/// The retry rules, with no network: what the client does after each kind of answer.
@Suite struct RetryPlanTests {
    let plan = RetryPlan(
        configuration: ServerAPIConfiguration(
            patience: Patience(
                maxAttempts: 4, backoffBase: .milliseconds(100), backoffCap: .seconds(1), totalBudget: .seconds(30),
                requestTimeout: .seconds(30))))
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// The largest wait backoff allows, so the bounds below are exact.
    let ceiling: (ClosedRange<Int>) -> Int = { $0.upperBound }

    @Test func aRateLimitWaitsForRetryAfterGivenAsApplesMillisecondTimestamp() {
        let resetsAt = Int64(now.timeIntervalSince1970 * 1000) + 2_500
        let decision = plan.decide(
            after: .answered(status: 429, retryAfter: String(resetsAt), errorCode: 4_290_000), attempts: 1,
            elapsed: .zero, now: now, random: ceiling)
        #expect(decision == .retry(after: .milliseconds(2_500)))
    }

    @Test func aRateLimitWaitsForRetryAfterGivenInSeconds() {
        let decision = plan.decide(
            after: .answered(status: 429, retryAfter: "3", errorCode: nil), attempts: 1, elapsed: .zero, now: now, random: ceiling)
        #expect(decision == .retry(after: .seconds(3)))
    }

    @Test func aRateLimitWithoutRetryAfterBacksOff() {
        let decision = plan.decide(
            after: .answered(status: 429, retryAfter: nil, errorCode: nil), attempts: 2, elapsed: .zero, now: now, random: ceiling)
        #expect(decision == .retry(after: .milliseconds(200)))
    }

    @Test func aRetryAfterReachingPastTheBudgetStopsAtOnce() {
        let decision = plan.decide(after: .answered(status: 429, retryAfter: "31", errorCode: nil), attempts: 1, elapsed: .zero, now: now)
        #expect(decision == .stop)
    }

    @Test func serverErrorsAndTransportFailuresBackOffWithJitterUnderTheCap() {
        for attempts in 1...3 {
            let bound = min(1000, 100 << (attempts - 1))
            for outcome in [RetryPlan.Outcome.answered(status: 503, retryAfter: nil, errorCode: nil), .transportFailed] {
                guard case .retry(let wait) = plan.decide(after: outcome, attempts: attempts, elapsed: .zero, now: now) else {
                    Issue.record("\(outcome) after \(attempts) attempts should be retried"); continue
                }
                #expect(wait >= .zero && wait <= .milliseconds(bound))
            }
        }
    }

    @Test func applesRetryableCodesAreRetriedAndOtherRefusalsAreFinal() {
        #expect(
            plan.decide(after: .answered(status: 404, retryAfter: nil, errorCode: 4_040_006), attempts: 1, elapsed: .zero, now: now)
                != .stop)
        #expect(
            plan.decide(after: .answered(status: 404, retryAfter: nil, errorCode: 4_040_010), attempts: 1, elapsed: .zero, now: now)
                == .stop)
        #expect(plan.decide(after: .answered(status: 401, retryAfter: nil, errorCode: nil), attempts: 1, elapsed: .zero, now: now) == .stop)
        #expect(
            plan.decide(after: .answered(status: 400, retryAfter: nil, errorCode: 4_000_006), attempts: 1, elapsed: .zero, now: now)
                == .stop)
    }

    @Test func noRequestIsTriedMoreThanMaxAttemptsOrPastTheBudget() {
        #expect(plan.decide(after: .transportFailed, attempts: 4, elapsed: .zero, now: now) == .stop)
        #expect(plan.decide(after: .transportFailed, attempts: 1, elapsed: .seconds(30), now: now) == .stop)
    }

    @Test func aRetryAfterAlreadyPastWaitsNothingAndGarbageIsIgnored() {
        let past = String(Int64(now.timeIntervalSince1970 * 1000) - 10_000)
        #expect(RetryPlan.retryAfter(past, now: now) == .zero)
        #expect(RetryPlan.retryAfter("soon", now: now) == nil)
        #expect(RetryPlan.retryAfter("-3", now: now) == nil)
    }
}
