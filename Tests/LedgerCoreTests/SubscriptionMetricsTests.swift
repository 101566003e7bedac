import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// The finance metrics' rules, on small histories read as a calendar.
@Suite struct SubscriptionMetricsTests {
    func series(_ scenario: Scenario, _ original: String, from: Double, through: Double) -> [String] {
        let facts = scenario.facts.filter { $0.event.originalTransactionID == original }
        return SubscriptionMetrics.daily(
            SubscriptionMetrics.contributions(of: facts, originalTransactionID: original), from: day(from), through: day(through)
        )
        .map { "\(Int(($0.day.timeIntervalSince(day(0)) / 86_400).rounded())) \($0.kind.rawValue) \($0.dimension) \($0.value)" }
    }

    @Test func aMonthlySubscriptionIsNewActiveRenewedAndChurnsWhereItEnds() {
        var s = Scenario()
        s.buy("t1", "pro.monthly", at: day(0.5), expires: day(30.5))
        s.renew("t2", original: "t1", "pro.monthly", at: day(30.5), expires: day(60.5))
        let all = series(s, "t1", from: 0, through: 62)
        #expect(all.contains("0 new pro.monthly 1") && all.contains("0 revenue EUR 4990") && all.contains("0 active pro.monthly 1"))
        #expect(
            all.contains("30 renewed pro.monthly 1") && all.contains("59 active pro.monthly 1") && !all.contains("60 active pro.monthly 1"),
            "active on each day whose end it covers")
        #expect(all.contains("60 churned pro.monthly 1") && all.filter { $0.contains("churned") }.count == 1)
        #expect(all.contains("15 mrr EUR 4990"))
    }

    @Test func aRefundEndsAccessThereCountsAndAReversalCountsBack() {
        var s = Scenario()
        s.buy("t1", "pro.yearly", at: day(0.5), expires: day(365.5))
        s.refund("t1", at: day(10.5))
        let refunded = series(s, "t1", from: 0, through: 20)
        #expect(
            refunded.contains("10 refunds EUR 1") && refunded.contains("10 refunded_amount EUR 4990")
                && refunded.contains("10 churned pro.yearly 1"))
        #expect(refunded.contains("9 active pro.yearly 1") && !refunded.contains("10 active pro.yearly 1"))
        #expect(refunded.contains("5 mrr EUR 415"), "a yearly plan counts a twelfth a month")
        s.record(.refundReversed(RefundReversal(transactionID: "t1", originalTransactionID: "t1", signedDate: day(12.5))), at: day(12.5))
        let reversed = series(s, "t1", from: 0, through: 20)
        #expect(
            reversed.contains("12 refunds EUR -1") && reversed.contains("15 active pro.yearly 1")
                && !reversed.contains { $0.contains("churned") && $0.hasPrefix("10 ") })
    }

    @Test func aFreeTrialFollowedByAPaidPeriodIsConverted() {
        var s = Scenario()
        var trial = Scenario.transaction("t1", product: "pro.monthly", at: day(0.5), expires: day(7.5))
        trial.offerType = 1
        trial.price = 0
        s.record(.purchased(trial), at: day(0.5))
        s.renew("t2", original: "t1", "pro.monthly", at: day(7.5), expires: day(37.5))
        let all = series(s, "t1", from: 0, through: 10)
        #expect(
            all.contains("7 trials_converted pro.monthly 1") && all.contains("7 renewed pro.monthly 1")
                && all.contains("0 new pro.monthly 1"))
        #expect(!all.contains { $0.hasPrefix("0 revenue") }, "a free trial earns nothing")
    }

    @Test func consumablesAreRevenueButNoSubscription() {
        var s = Scenario()
        s.buy("c1", "coins.100", at: day(1.5))
        #expect(series(s, "c1", from: 0, through: 3) == ["1 revenue EUR 4990"])
    }
}
