import Foundation
import LedgerCore
import LedgerDomainTestSupport
import Testing

/// What a subscriber is to the retention rules (paid time, renewals, billing trouble, refunds),
/// and which rules hold for them: pure, so the endpoint and the console agree.
@Suite struct RetentionPolicyTests {
    static let loyal = RetentionRule(
        name: "loyal", when: .init(product: ["pro.monthly"], paidDaysAtLeast: 60),
        answer: .promotionalOffer(message: UUID(), offer: "loyal"))
    static let english = RetentionRule(name: "english", when: .init(locale: ["en"]), answer: .message(UUID()))
    static let retry = RetentionRule(name: "retry", when: .init(inBillingRetry: true), answer: .message(UUID()))
    static let settings = RetentionSettings(rules: [retry, loyal, english])

    @Test func paidTimeSkipsTheFreeTrialAndStopsAtARefund() {
        var scenario = Scenario()
        var trial = Scenario.transaction("t-1", product: "pro.monthly", at: day(0), expires: day(7))
        trial.offerDiscountType = "FREE_TRIAL"
        trial.price = 0
        scenario.record(.purchased(trial), at: day(0))
        scenario.record(.transactionClaimed(Claim(originalTransactionID: "t-1", userID: "alice")), at: day(0))
        scenario.renew("t-2", original: "t-1", "pro.monthly", at: day(7), expires: day(37))
        scenario.renew("t-3", original: "t-1", "pro.monthly", at: day(37), expires: day(67))
        let subject = RetentionSubject.of(
            scenario.ledger, userID: "alice", originalTransactionID: "t-1", productID: "pro.monthly", locale: "en-GB", now: day(50))
        #expect(subject.history == .init(paidDays: 43, renewals: 2, inBillingRetry: false, refundedBefore: false))
        #expect(RetentionPolicy.matching(Self.settings, subject).map(\.name) == ["english"], "43 paid days are not 60")

        scenario.refund("t-3", original: "t-1", at: day(45))
        let later = RetentionSubject.of(
            scenario.ledger, userID: "alice", originalTransactionID: "t-1", productID: "pro.monthly", locale: "fr-FR", now: day(90))
        #expect(later.history?.paidDays == 38 && later.history?.refundedBefore == true, "\(String(describing: later.history))")
        #expect(RetentionPolicy.matching(Self.settings, later).isEmpty)
    }

    @Test func billingTroubleAndLocalesAndAnUnknownSubscription() {
        var scenario = Scenario()
        scenario.buy("b-1", "pro.monthly", at: day(0), expires: day(70))
        scenario.renewalInfo("b-1", billingRetry: true, intent: 2, at: day(70))
        let subject = RetentionSubject.of(
            scenario.ledger, userID: "alice", originalTransactionID: "b-1", productID: "pro.monthly", locale: "en_US", now: day(75))
        #expect(subject.history?.inBillingRetry == true && subject.history?.paidDays == 70, "\(String(describing: subject.history))")
        #expect(RetentionPolicy.matching(Self.settings, subject).map(\.name) == ["retry", "loyal", "english"])
        // Nobody known owns it: only the rules about product and locale can hold.
        let stranger = RetentionSubject(productID: "pro.monthly", locale: "EN-us", history: nil)
        #expect(RetentionPolicy.matching(Self.settings, stranger).map(\.name) == ["english"])
    }

    @Test func rulesAreRefusedWhenTheyNameAnOfferTheProductDoesNotDeclare() {
        var declared = SampleCatalogue.monthly
        #expect(Self.settings.problem(catalogue: [declared])?.contains("declares no offer loyal") == true)
        declared.offers = ["loyal": OfferRule(eligible: .active)]
        #expect(Self.settings.problem(catalogue: [declared]) == nil)
        let twice = RetentionSettings(rules: [Self.english, Self.english])
        #expect(twice.problem(catalogue: []) == "rules[1].name english is used twice")
    }
}
