import Foundation

/// Who may receive one of a product's offers (a promotional or win-back offer set up in App Store
/// Connect), declared in the catalogue and decided from the user's history — across every Apple
/// account the user bought with, which Apple cannot see.
package struct OfferRule: Codable, Sendable, Equatable {
    package enum Eligible: String, Codable, Sendable, CaseIterable {
        /// Everybody.
        case anyone
        /// Never held any of the product's entitlements.
        case new
        /// Holds one of them now.
        case active
        /// Held one, holds none now, and has not for at least `lapsedFor`.
        case lapsed
    }
    package var eligible: Eligible
    /// For `lapsed`: how long without (nil: any time at all).
    package var lapsedFor: ISODuration?

    package init(eligible: Eligible, lapsedFor: ISODuration? = nil) {
        self.eligible = eligible
        self.lapsedFor = lapsedFor
    }

    enum CodingKeys: String, CodingKey { case eligible, lapsedFor = "lapsed_for" }
}

/// An offer decision and the sentence that explains it (what a 409 `not_eligible` says).
package struct OfferDecision: Sendable, Equatable {
    package var eligible: Bool
    package var reason: String
}

/// Decides offers from a user's timeline: pure, so the console, the API and tests agree.
package enum OfferEligibility {
    /// Whether `timeline`'s user may receive an offer under `rule` for a product unlocking
    /// `entitlements`, at `now`. Only access actually had counts (a refunded period ends at its refund).
    package static func decide(_ rule: OfferRule, entitlements: [String], timeline: UserTimeline, now: Date) -> OfferDecision {
        let wanted = Set(entitlements)
        let periods = timeline.periods.filter { $0.start <= now && !wanted.isDisjoint(with: $0.entitlements) }
        let holding = periods.contains { $0.isActive(at: now) }
        let names = entitlements.sorted().joined(separator: ", ")
        switch rule.eligible {
        case .anyone:
            return OfferDecision(eligible: true, reason: "the offer is for anyone")
        case .new:
            return periods.isEmpty
                ? OfferDecision(eligible: true, reason: "never held \(names)")
                : OfferDecision(
                    eligible: false,
                    reason:
                        "the offer is for new customers; the user has held \(names) since \(Explanation.day(periods.map(\.start).min()!))")
        case .active:
            return holding
                ? OfferDecision(eligible: true, reason: "holds \(names) now")
                : OfferDecision(eligible: false, reason: "the offer is for active subscribers; the user holds none of \(names) now")
        case .lapsed:
            if holding { return OfferDecision(eligible: false, reason: "the offer is for lapsed customers; the user holds \(names) now") }
            guard let ended = periods.compactMap(\.effectiveEnd).max() else {
                return OfferDecision(eligible: false, reason: "the offer is for lapsed customers; the user never held \(names)")
            }
            if let wait = rule.lapsedFor, wait.added(to: ended) > now {
                return OfferDecision(
                    eligible: false,
                    reason:
                        "the offer is for customers lapsed for \(wait); the user's access ended \(Explanation.day(ended)), eligible from \(Explanation.day(wait.added(to: ended)))"
                )
            }
            return OfferDecision(eligible: true, reason: "lapsed since \(Explanation.day(ended))")
        }
    }

    /// Introductory-offer eligibility across every Apple account the user bought with: eligible
    /// when the user never held any of the product's entitlements.
    package static func introductory(entitlements: [String], timeline: UserTimeline, now: Date) -> OfferDecision {
        decide(OfferRule(eligible: .new), entitlements: entitlements, timeline: timeline, now: now)
    }
}
