import Foundation
import GooglePlaySimulator
import LedgerCore
import LedgerTestSupport
import Testing

@testable import GooglePlay

/// Google away, rate-limiting or refusing the token: retried within the budget on a stepped
/// clock, `Retry-After` honoured, one token refresh after a 401, and each final refusal typed.
@Suite struct RetryAndRefreshTests {
    static let package = GoogleTestbed.packageName
    typealias Fault = SimulatedGooglePlay.Fault

    @Test func fiveHundredsAreRetriedWithBackoffUntilGoogleAnswers() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        google.simulator.inject(Fault(status: 503, pathContains: "subscriptionsv2", times: 1))
        google.simulator.inject(Fault(status: 500, pathContains: "subscriptionsv2", times: 1))
        #expect(try await google.client.subscription(package: Self.package, token: token).model.subscriptionState == .active)
        #expect(google.apiCalls().map(\.status) == [503, 500, 200])
        #expect(google.clock.slept.count == 2 && google.clock.slept.allSatisfy { $0 <= .milliseconds(20) })
    }

    @Test func aRateLimitIsWaitedOutAsRetryAfterSays() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseProduct(package: Self.package, productID: "coins")
        google.simulator.inject(Fault(status: 429, retryAfter: "7", pathContains: "productsv2"))
        _ = try await google.client.productV2(package: Self.package, token: token)
        #expect(google.clock.slept == [.seconds(7)])
    }

    @Test func aRetryAfterBeyondTheBudgetEndsTheCallAtOnceAsUnavailable() async throws {
        let google = try await GoogleTestbed(totalBudget: .seconds(20))
        defer { Task { await google.simulator.stop() } }
        google.simulator.inject(Fault(status: 429, retryAfter: "120"))
        let error = await #expect(throws: LedgerError.self) {
            try await google.client.productV2(package: Self.package, token: "abcdefghijk")
        }
        #expect(error?.code == .googleUnavailable && error?.kind == .unavailable && error?.retryAfter == 120)
        #expect(error?.message.contains("retry after 120 s") == true)
        #expect(google.clock.slept.isEmpty && google.apiCalls().count == 1)
    }

    @Test func googleDownForEveryAttemptIsUnavailable() async throws {
        let google = try await GoogleTestbed(maxAttempts: 3)
        defer { Task { await google.simulator.stop() } }
        google.simulator.inject(Fault(status: 502, times: 10))
        let error = await #expect(throws: LedgerError.self) {
            try await google.client.productV2(package: Self.package, token: "abcdefghijk")
        }
        #expect(error?.code == .googleUnavailable && error?.message.contains("HTTP 502 after 3 attempts") == true)
        #expect(google.apiCalls().count == 3 && (error?.retryAfter ?? 0) >= 1)
    }

    @Test func a401FetchesANewTokenOnceAndASecondIsFinal() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let token = google.simulator.purchaseSubscription(package: Self.package, productID: "premium_monthly")
        _ = try await google.client.subscription(package: Self.package, token: token)
        google.simulator.revokeAccessTokens()
        _ = try await google.client.subscription(package: Self.package, token: token)
        #expect(google.tokenCalls() == 2 && google.apiCalls().map(\.status) == [200, 401, 200])

        google.simulator.inject(Fault(status: 401, reason: "permissionDenied", times: 2))
        let error = await #expect(throws: LedgerError.self) { try await google.client.subscription(package: Self.package, token: token) }
        #expect(error?.code == .googleAPIUnauthorized && error?.message.contains("permissionDenied") == true)
        #expect(google.tokenCalls() == 3, "one refresh per call, not a loop")
        #expect(error?.message.contains("ya29.") == false, "the access token is never in a message")
    }

    @Test func a403IsFinalAtOnce() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        google.simulator.inject(Fault(status: 403, reason: "permissionDenied"))
        let error = await #expect(throws: LedgerError.self) {
            try await google.client.productV2(package: Self.package, token: "abcdefghij")
        }
        #expect(error?.code == .googleAPIUnauthorized && google.apiCalls().count == 1)
    }

    @Test func injected400404And410MapToTheirRefusals() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let cases: [(Fault, LedgerError.Code)] = [
            (Fault(status: 400, reason: "purchaseTokenDoesNotMatchPackageName"), .packageMismatch),
            (Fault(status: 400, reason: "invalidPurchaseState"), .invalidPurchaseState),
            (Fault(status: 400), .googleAPIRefused), (Fault(status: 404, reason: "purchaseTokenNotFound"), .googlePurchaseNotFound),
            (Fault(status: 410, reason: "purchaseTokenNoLongerValid"), .purchaseTokenExpired),
        ]
        for (fault, code) in cases {
            google.simulator.inject(fault)
            let error = await #expect(throws: LedgerError.self) {
                try await google.client.productV2(package: Self.package, token: "tok12345678")
            }
            #expect(error?.code == code, "HTTP \(fault.status) \(fault.reason ?? "")")
        }
        #expect(google.clock.slept.isEmpty)
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_772_370_000)
        #expect(GoogleRetryPlan.retryAfter("30", now: now) == .seconds(30))
        #expect(GoogleRetryPlan.retryAfter("Sun, 01 Mar 2026 13:01:00 GMT", now: now) == .seconds(60))
        #expect(GoogleRetryPlan.retryAfter("soon", now: now) == nil)
        var patience = Patience.googleDeveloperAPI
        (patience.maxAttempts, patience.totalBudget) = (3, .seconds(10))
        let plan = GoogleRetryPlan(patience: patience)
        #expect(
            plan.decide(after: .answered(status: 503, retryAfter: "2"), attempts: 1, elapsed: .zero, now: now) == .retry(after: .seconds(2))
        )
        #expect(
            plan.decide(after: .answered(status: 503, retryAfter: "2"), attempts: 3, elapsed: .zero, now: now) == .stop(wait: .seconds(2)))
        #expect(
            plan.decide(after: .answered(status: 503, retryAfter: "2"), attempts: 1, elapsed: .seconds(9), now: now)
                == .stop(wait: .seconds(2)))
        if case .retry = plan.decide(after: .answered(status: 404, retryAfter: nil), attempts: 1, elapsed: .zero, now: now) {
            Issue.record("a 404 is final")
        }
    }
}
