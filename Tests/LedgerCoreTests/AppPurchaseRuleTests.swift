import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// What buying the app itself grants, by the app's rule: early buyers of a paid app keep its
/// entitlements for life after it went free.
@Suite struct AppPurchaseRuleTests {
    @Test(arguments: [
        ("1.4", "2.0", ComparisonResult.orderedAscending), ("1.10", "1.9", .orderedDescending), ("2", "2.0", .orderedSame),
        ("2.0.1", "2.0", .orderedDescending), ("104", "200", .orderedAscending), ("1.0b", "1.0c", .orderedAscending),
    ])
    func versionsCompareAsNumbersPartByPart(_ a: String, _ b: String, _ expected: ComparisonResult) {
        #expect(AppPurchaseRule.compare(a, b) == expected)
    }

    func purchase(_ user: String, version: String?, at date: Date) -> LedgerEvent {
        .appTransactionRecorded(
            AppTransactionFacts(
                userID: user, appTransactionID: "a-\(user)", environment: .production,
                originalApplicationVersion: version, originalPurchaseDate: date))
    }

    @Test func earlyBuyersHoldTheRulesEntitlementsFromWhenTheyBoughtAndOthersOnlyTheirAppPurchase() {
        var s = Scenario()
        s.record(
            .appConfigured(
                AppSettings(
                    appPurchase: AppPurchaseRule(
                        entitlements: ["premium"], originallyBeforeVersion: "2.0",
                        originallyPurchasedBefore: day(100)))), at: day(-50))
        s.record(purchase("early", version: "1.4", at: day(10)), at: day(10))
        s.record(purchase("dated", version: "3.0", at: day(50)), at: day(60))
        s.record(purchase("late", version: "3.0", at: day(150)), at: day(150))
        #expect(s.state("early", at: day(9)).entitlements["premium"] == nil, "not before buying the app")
        let early = s.state("early", at: day(200))
        #expect(early.entitlements["premium"]?.active == true && early.entitlements["premium"]?.ownership == .appPurchase)
        #expect(early.entitlements["premium"]?.since == day(10) && early.entitlements["premium"]?.expiresAt == nil)
        #expect(
            Explanation.sentence(for: early.entitlements["premium"]!, at: day(200), subscription: nil, revoked: nil)
                == "active, lifetime: bought the app, version 1.4, on \(Explanation.day(day(10)))")
        #expect(s.state("dated", at: day(200)).entitlements["premium"]?.active == true, "bought before the date, a later version")
        let late = s.state("late", at: day(200))
        #expect(
            late.entitlements["premium"] == nil && late.appPurchase?.originalApplicationVersion == "3.0",
            "the purchase is shown, grants nothing")
    }

    @Test func withoutARuleTheAppPurchaseGrantsNothingAndIsShown() {
        var s = Scenario()
        s.record(purchase("u", version: "1.0", at: day(1)), at: day(1))
        #expect(s.state("u", at: day(2)).entitlements.isEmpty && s.state("u", at: day(2)).appPurchase?.appTransactionID == "a-u")
    }
}
