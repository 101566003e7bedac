import Foundation

/// One sentence that says why an entitlement is what it is, for support staff: "active until
/// 3 Dec 2026, renews", "in grace period until …, billing problem", "ended 12 Nov 2026: refunded".
package enum Explanation {
    /// `subscription`: the subscription behind the entitlement, if any; `revocation`: why its
    /// transaction was taken back, if it was (refund or family sharing).
    package static func sentence(
        for entitlement: Entitlement, at instant: Date, subscription: SubscriptionSummary?,
        revoked: (at: Date, refund: Bool)?
    ) -> String {
        let end = entitlement.expiresAt.map(day)
        if entitlement.active {
            if let grace = entitlement.gracePeriodExpiresAt, grace > instant, entitlement.expiresAt.map({ $0 <= instant }) ?? false {
                return "in grace period until \(day(grace)), billing problem: Apple is retrying the charge"
            }
            let source: String
            switch entitlement.ownership {
            case .promotional: source = ", a promotional grant"
            case .familyShared: source = ", shared by a family member"
            case .purchased: source = ""
            case .appPurchase:
                return
                    "active, lifetime: bought the app, version \(entitlement.productID.dropFirst("app:".count)), on \(day(entitlement.since))"
            }
            guard let end else { return "active, lifetime\(source)" }
            switch entitlement.willRenew {
            case true?: return "active until \(end), renews\(source)"
            case false?: return "active until \(end), will not renew (auto-renew is off)\(source)"
            case nil: return "active until \(end)\(source)"
            }
        }
        if let revoked {
            return "ended \(day(revoked.at)): " + (revoked.refund ? "refunded" : "family sharing revoked")
        }
        if subscription?.status == .billingRetry {
            return "ended \(end ?? "?"): billing problem, Apple is still retrying the charge"
        }
        if entitlement.ownership == .promotional { return "ended \(end ?? "?"): the promotional grant ran out or was revoked" }
        if subscription?.willRenew == false || subscription?.expirationIntent == 1 {
            return "ended \(end ?? "?"): expired, auto-renew was off"
        }
        return "ended \(end ?? "?"): expired"
    }

    /// "owned by another user since …: transferred on restore", for a purchase the user gave up.
    package static func transferred(to user: String, at instant: Date) -> String {
        "owned by another user (\(user)) since \(day(instant)): transferred on restore"
    }

    /// "consent withdrawn on 3 Dec 2026 …": what support reads above a child's entitlements.
    package static func consentRescinded(at date: Date) -> String {
        "A parent or guardian withdrew consent for this app on \(day(date)) (Apple's RESCIND_CONSENT). "
            + "Nothing was revoked: what the app does about it is the app's decision."
    }

    /// A subscription's billing plan: "monthly, committed until 3 Mar 2027", or "—".
    package static func plan(_ billingPlanType: String?, committedUntil: Date?) -> String {
        guard let billingPlanType else { return committedUntil.map { "committed until \(day($0))" } ?? "—" }
        return billingPlanType.lowercased().replacingOccurrences(of: "_", with: " ")
            + (committedUntil.map { ", committed until \(day($0))" } ?? "")
    }

    /// Apple's offer kinds by their number (1 introductory, 2 promotional, 3 offer code, 4 win-back).
    package static func offer(type: Int?, id: String?) -> String {
        guard let type else { return "" }
        let kinds = [1: "introductory offer", 2: "promotional offer", 3: "offer code", 4: "win-back offer"]
        return (kinds[type] ?? "offer type \(type)") + (id.map { " \($0)" } ?? "")
    }

    /// What a notification about the app (not one purchase) says, in a line.
    package static func notice(_ notification: AppleNotification) -> String {
        if let summary = notification.summary {
            let storefronts =
                summary.storefrontCountryCodes.isEmpty ? "every storefront" : summary.storefrontCountryCodes.joined(separator: ", ")
            return "extension \(summary.requestIdentifier) of \(summary.productID ?? "a product") in \(storefronts): "
                + "\(summary.succeededCount.map(String.init) ?? "?") extended, \(summary.failedCount.map(String.init) ?? "?") failed"
        }
        if let token = notification.externalPurchaseToken {
            return "external purchase token \(token.externalPurchaseID)" + (token.tokenCreationDate.map { ", created \(day($0))" } ?? "")
        }
        if let appTransaction = notification.appTransactionID {
            return "consent withdrawn for app transaction \(appTransaction)"
        }
        return ""
    }

    /// "3 Dec 2026" in UTC.
    package static func day(_ date: Date) -> String {
        let parts = RFC3339.string(date).prefix(10).split(separator: "-")
        guard parts.count == 3, let month = Int(parts[1]), let dayOfMonth = Int(parts[2]) else {
            return String(RFC3339.string(date).prefix(10))
        }
        let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(dayOfMonth) \(names[month - 1]) \(parts[0])"
    }
}
