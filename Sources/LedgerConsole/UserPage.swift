import Foundation
import LedgerCore
import LedgerIngestion
import LedgerProjections

/// The user page's content: every entitlement with the sentence that explains it, balances (debt
/// as such), subscriptions, purchases, what was transferred away, the promotional grants, and the
/// timeline newest first, each fact linking to its evidence (decoded on a page of its own, so a
/// user with a thousand events is not a page of megabytes).
struct UserPage {
    struct Row: Sendable { var name: String; var sentence: String; var active: Bool; var product: String; var source: String }
    struct Balance: Sendable {
        var currency: String; var amount: Int64; var debt: Bool
        /// The lots with something left, in the order spends draw on them: "20 of 50 from grant:event-1, until 4 Dec 2026".
        var lots: [String]
    }
    struct Subscription: Sendable {
        var original: String; var product: String; var status: String; var expires: String; var renews: String
        /// "App Store" or "Google Play".
        var store: String
        /// "monthly, committed until 3 Mar 2027", or "—" for an ordinary subscription.
        var plan: String
        /// "win-back offer spring-25", or "".
        var offer: String
        /// Apple extends no revoked subscription, and only Apple's: no form is offered for others.
        var extendable = true
        /// The extension form's request id: one per page shown, so a form sent twice extends once.
        var requestID = UUID().uuidString.lowercased()
    }
    struct Purchase: Sendable { var transaction: String; var product: String; var store: String; var date: String; var revoked: String }

    /// A store as support names it.
    static func storeName(_ store: Store) -> String { store == .googlePlay ? "Google Play" : "App Store" }
    struct Grant: Sendable { var grantID: String; var entitlement: String; var until: String; var reason: String }

    var entitlements: [Row] = []
    var balances: [Balance] = []
    var subscriptions: [Subscription] = []
    var purchases: [Purchase] = []
    var transferred: [String] = []
    var grants: [Grant] = []
    /// Set when a parent or guardian withdrew consent for the app: support must see it first.
    var consent: String?
    /// The timeline's rows, as dictionaries: a template reads them without reflection (a thousand rows).
    var events: [[String: String]] = []

    static func build(state: UserState, trail: [RecordedFact], userID: String, evidenceLink: String) -> UserPage {
        var page = UserPage()
        var revocations: [String: (at: Date, refund: Bool)] = [:] // original transaction → why it was taken back
        var grants: [String: PromotionalGrant] = [:]
        for fact in trail where fact.occurredAt <= state.asOf {
            switch fact.event {
            case .refunded(let r): revocations[r.originalTransactionID] = (r.revocationDate, true)
            case .revoked(let r): revocations[r.originalTransactionID] = (r.revocationDate, false)
            case .refundReversed(let r): revocations[r.originalTransactionID] = nil
            case .promotionalGranted(let g): grants[g.grantID] = g
            case .promotionalRevoked(let r): grants[r.grantID] = nil
            case .ownershipTransferred(let t) where t.fromUserID == userID:
                page.transferred.append("\(t.originalTransactionID): " + Explanation.transferred(to: t.toUserID, at: fact.recordedAt))
            default: break
            }
        }
        for (name, entitlement) in state.entitlements.sorted(by: { $0.key < $1.key }) {
            let subscription = state.subscriptions.first { $0.originalTransactionID == entitlement.originalTransactionID }
            let revoked = entitlement.active ? nil : entitlement.originalTransactionID.flatMap { revocations[$0] }
            page.entitlements.append(
                Row(
                    name: name,
                    sentence: Explanation.sentence(for: entitlement, at: state.asOf, subscription: subscription, revoked: revoked),
                    active: entitlement.active, product: entitlement.productID, source: entitlement.ownership.rawValue))
        }
        let wallet = Wallet.replayed(state.balanceEntries, until: state.asOf)
        page.balances = state.balances.sorted { $0.key < $1.key }.map { currency, amount in
            let open = wallet.openLots(of: currency)
            return Balance(
                currency: currency, amount: amount, debt: amount < 0,
                lots: open.map { lot in
                    "\(lot.remaining) of \(lot.granted) from \(lot.reference)"
                        + (lot.expiresAt.map { ", until \(Explanation.day($0))" } ?? "")
                })
        }
        page.subscriptions = state.subscriptions.map {
            Subscription(
                original: $0.originalTransactionID, product: $0.productID,
                status: $0.status.rawValue.replacingOccurrences(of: "_", with: " "),
                expires: $0.expiresAt.map(Explanation.day) ?? "—", renews: $0.willRenew.map { $0 ? "yes" : "no" } ?? "—",
                store: Self.storeName($0.store), plan: Explanation.plan($0.billingPlanType, committedUntil: $0.commitmentExpiresAt),
                offer: Explanation.offer(type: $0.offerType, id: $0.offerIdentifier),
                extendable: $0.status != .revoked && $0.store == .appStore)
        }
        page.consent = state.consentRescindedAt.map(Explanation.consentRescinded)
        page.purchases = state.purchases.map {
            Purchase(
                transaction: $0.transactionID, product: $0.productID, store: Self.storeName($0.store ?? .appStore),
                date: Explanation.day($0.purchaseDate),
                revoked: $0.revokedAt.map(Explanation.day) ?? "")
        }
        page.grants = grants.values.sorted { $0.grantID < $1.grantID }.map {
            Grant(
                grantID: $0.grantID, entitlement: $0.entitlement, until: $0.expiresAt.map(Explanation.day) ?? "until revoked",
                reason: $0.reason)
        }
        page.events = trail.reversed().map { fact in
            var row = [
                "position": String(fact.sequence), "type": fact.event.typeName, "occurred": RFC3339.string(fact.occurredAt),
                "recorded": RFC3339.string(fact.recordedAt), "summary": summary(fact.event),
            ]
            if let evidence = fact.evidence { row["evidence"] = evidenceLink + evidence }
            return row
        }
        return page
    }

    /// What a fact says, in a line.
    static func summary(_ event: LedgerEvent) -> String {
        switch event {
        case .purchased(let t), .restored(let t), .renewed(let t), .recovered(let t):
            return "\(t.productID), transaction \(t.transactionID)" + (t.expiresDate.map { ", until \(RFC3339.string($0))" } ?? "")
                + (t.price.map { ", \(Double($0) / 1000) \(t.currency ?? "")" } ?? "")
        case .autoRenewChanged(let r), .renewalPreferenceChanged(let r), .renewalFailed(let r), .expired(let r):
            return "\(r.originalTransactionID): will renew \(r.willAutoRenew ? "yes" : "no"), next \(r.autoRenewProductID)"
                + (r.isInBillingRetry ? ", billing retry" : "")
                + (r.gracePeriodExpiresDate.map { ", grace until \(RFC3339.string($0))" } ?? "")
        case .refunded(let r), .revoked(let r):
            return "transaction \(r.transactionID) (\(r.kind.rawValue)) at \(RFC3339.string(r.revocationDate))"
        case .refundReversed(let r): return "transaction \(r.transactionID): the refund reversed"
        case .transactionClaimed(let c): return "\(c.originalTransactionID) claimed by \(c.userID)"
        case .ownershipTransferred(let t):
            return "\(t.originalTransactionID) from \(t.fromUserID) to \(t.toUserID)" + (t.reason.map { " (\($0))" } ?? "")
        case .balanceMoved(let m):
            return m.amount >= 0
                ? "\(m.amount) \(m.currency) moved in from \(m.counterpartUserID) (\(m.reason))"
                : "\(-m.amount) \(m.currency) moved out to \(m.counterpartUserID) (\(m.reason))"
        case .consumed(let c):
            return "spent \(c.amount) \(c.currency) (\(c.idempotencyKey))" + (c.reason.map { " on \($0)" } ?? "")
                + (c.reference.map { ", \($0)" } ?? "")
        case .currencyGranted(let g):
            return "\(g.amount) \(g.currency) granted: \(g.reason)" + (g.expiresAt.map { ", until \(RFC3339.string($0))" } ?? "")
                + (g.actor.map { ", by \($0)" } ?? "")
        case .spendReversed(let r): return "spend \(r.idempotencyKey) reversed: \(r.reason)" + (r.actor.map { ", by \($0)" } ?? "")
        case .promotionalGranted(let g):
            return "\(g.entitlement) granted \(g.expiresAt.map { "until \(RFC3339.string($0))" } ?? "until revoked"): \(g.reason)"
                + (g.actor.map { ", by \($0)" } ?? "")
        case .promotionalRevoked(let r): return "grant \(r.grantID) revoked: \(r.reason)" + (r.actor.map { ", by \($0)" } ?? "")
        case .appleNotificationReceived(let n): return "\(n.notificationType) from Apple"
        case .consumptionInformationSent: return "consumption information sent to Apple"
        case .appTransactionRecorded(let a):
            return "the app bought on an Apple account: version \(a.originalApplicationVersion ?? "?")"
                + (a.originalPurchaseDate.map { ", \(RFC3339.string($0))" } ?? "")
                + (a.appTransactionID.map { ", app transaction \($0)" } ?? "")
        case .offerSigned(let o):
            let what =
                o.kind == .introductoryEligibility
                ? "introductory offer eligibility (\(o.eligible == true ? "eligible" : "not eligible"))"
                : "offer \(o.offerID ?? "?")" + (o.kind == .promotionalOfferLegacy ? " (legacy signature)" : "")
            return "signed \(what) for \(o.productID): \(o.reason)"
        case .retentionDecided(let r):
            let shown =
                switch r.answer {
                case "alternate_product": "a switch to \(r.alternateProductID ?? "?")"
                case "promotional_offer": "offer \(r.offerID ?? "?")"
                default: "a message"
                }
            return "about to cancel \(r.productID): Apple was told to show \(shown) (message \(r.messageID.lowercased()), "
                + (r.rule.map { "rule \"\($0)\"" } ?? "the default") + ")"
                + (r.skipped.isEmpty ? "" : "; passed over: " + r.skipped.joined(separator: "; "))
        case .userErased(let e):
            return
                "identifiers erased by \(e.actor): \(e.eventsRewritten) events rewritten, \(e.tokens) tokens replaced, \(e.evidenceShredded) pieces of evidence shredded"
        case .renewalExtended(let e):
            return "renewal date of \(e.originalTransactionID) extended at Apple by \(e.days) days (reason \(e.reasonCode)), by \(e.actor)"
        case .massRenewalExtensionRequested(let m):
            return "every active subscriber of \(m.productID) extended by \(m.days) days (request \(m.requestID)), by \(m.actor)"
        case .appAccountTokenSent(let t):
            return "appAccountToken \(t.appAccountToken.uuidString.lowercased()) set at Apple on \(t.originalTransactionID)"
        case .consentRescinded(let c):
            return
                "a parent or guardian withdrew consent for the app (app transaction \(c.appTransactionID)); nothing revoked, the app decides"
        case .appConfigured, .productConfigured, .currencyConfigured: return "app configuration"
        }
    }

    /// Evidence as people read it: a JWS's payload decoded (and the notification's signed parts
    /// inside it), JSON indented; anything else as stored.
    static func readable(_ body: Data) -> String {
        let text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let payload = jwsPayload(text) { return "JWS (verified when recorded), payload:\n" + pretty(payload) }
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let signed = object["signedPayload"] as? String,
            let payload = jwsPayload(signed)
        {
            return "App Store Server Notification V2 (verified when recorded), payload:\n" + pretty(payload)
        }
        return pretty(body)
    }

    static func jwsPayload(_ text: String) -> Data? {
        let parts = text.split(separator: ".")
        guard parts.count == 3, !text.contains(" "), !text.hasPrefix("{") else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func pretty(_ data: Data) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: data),
            let again = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else {
            return String(decoding: data, as: UTF8.self)
        }
        return String(decoding: again, as: UTF8.self)
    }
}
