import Foundation
import LedgerCore

/// A subscription as Google answered for it (`subscriptionsv2.get`), turned into the facts the
/// domain already knows: a transaction per paid order, the renewal state, and — when this
/// purchase took the place of another — the end of the other one. Pure: the caller fetched the
/// answer and says what the ledger already knows of the purchase.
///
/// Google answers with the state now, not with a history: which order is new, and when its
/// period began, are read against the orders already recorded (`known`).
package typealias GoogleSubscriptionFacts = GooglePurchaseAnswer<SubscriptionPurchaseV2>

extension GooglePurchaseAnswer where Model == SubscriptionPurchaseV2 {
    package var environment: AppleEnvironment { answer.testPurchase == nil ? .production : .sandbox }
    package var isPending: Bool {
        answer.subscriptionState == .pending || answer.subscriptionState == .pendingPurchaseCanceled || answer.startTime == nil
    }
    package var isAcknowledged: Bool { answer.acknowledgementState == .acknowledged }
    package var productIDs: [String] { (answer.lineItems ?? []).map(\.productId) }
    /// The app's account the purchase was made on. A resubscription made in the Play Store names
    /// none until acknowledged, but names the account of the purchase it continues.
    package var accountToken: UUID? {
        GooglePurchaseKey.accountToken(
            answer.externalAccountIdentifiers?.obfuscatedExternalAccountId
                ?? answer.outOfAppPurchaseContext?.expiredExternalAccountIdentifiers?.obfuscatedExternalAccountId)
    }
    /// The key of the expired purchase a Play Store resubscription continues (its lineage).
    package var continues: String? { answer.outOfAppPurchaseContext?.expiredPurchaseToken.map(GooglePurchaseKey.of(token:)) }

    /// The facts this answer states. `known` is the purchase's transactions as recorded (latest
    /// statement of each); a pending purchase states none: nothing is paid, nothing is granted.
    package func events(known: [TransactionFacts]) -> [LedgerEvent] {
        guard !isPending, let start = answer.startTime.flatMap(RFC3339.parse) else { return [] }
        var events: [LedgerEvent] = []
        let items = answer.lineItems ?? []
        for item in items {
            guard let transaction = transaction(item, start: start, bundle: items.count > 1, known: known) else { continue }
            events.append(transaction.transactionID.contains("..") ? .renewed(transaction) : .purchased(transaction))
        }
        if let renewal = renewal(items.first) {
            switch answer.subscriptionState {
            case .expired?: events.append(.expired(renewal))
            case .inGracePeriod?, .onHold?: events.append(.renewalFailed(renewal))
            default: events.append(.autoRenewChanged(renewal))
            }
        }
        if let linked = answer.linkedPurchaseToken, !linked.isEmpty {
            events.append(Self.replacement(of: linked, by: key, at: start, environment: environment, answeredAt: answeredAt))
        }
        return events
    }

    /// The end of the purchase `token` names, taken over by `newKey` at `date`: access to the old
    /// one ends then and never returns.
    package static func replacement(
        of token: String, by newKey: String, at date: Date, environment: AppleEnvironment, answeredAt: Date
    ) -> LedgerEvent {
        let old = GooglePurchaseKey.of(token: token)
        return .revoked(
            RevocationFacts(
                environment: environment, transactionID: old, originalTransactionID: old, revocationDate: date, kind: .replaced,
                signedDate: answeredAt, store: .googlePlay, replacedBy: newKey))
    }

    /// The line item's current order as a transaction. Google names renewals `<first order>..N`;
    /// a new order's period starts where the latest recorded one ended (Google renews at the
    /// expiry, and a recovery from account hold is a later start the expiry then reflects), the
    /// first order's at the subscription's start.
    private func transaction(
        _ item: SubscriptionPurchaseV2.LineItem, start: Date, bundle: Bool, known: [TransactionFacts]
    ) -> TransactionFacts? {
        guard let expiry = item.expiryTime.flatMap(RFC3339.parse) else { return nil }
        let order = item.latestSuccessfulOrderId ?? answer.latestOrderId
        var id = order ?? key + ":" + RFC3339.string(start)
        if bundle { id += "/" + item.productId }
        let previous = known.filter { $0.productID == item.productId && $0.transactionID != id }.max { $0.purchaseDate < $1.purchaseDate }
        let purchaseDate: Date
        if let same = known.first(where: { $0.transactionID == id }) {
            purchaseDate = same.purchaseDate
        } else if id.contains(".."), let previousEnd = previous?.expiresDate, previousEnd < expiry {
            purchaseDate = max(previousEnd, start)
        } else {
            purchaseDate = start
        }
        let phase = item.offerPhase
        let free = phase?.freeTrial != nil
        let price = item.autoRenewingPlan?.recurringPrice
        return TransactionFacts(
            environment: environment, transactionID: id, originalTransactionID: key, productID: item.productId,
            purchaseDate: purchaseDate, originalPurchaseDate: start, expiresDate: expiry,
            price: free ? 0 : (phase?.introductoryPrice == nil ? price.map(Self.milliunits) : nil), currency: price?.currencyCode,
            storefront: answer.regionCode, webOrderLineItemID: nil, appAccountToken: accountToken,
            offerType: free || phase?.introductoryPrice != nil ? 1 : (item.offerDetails?.offerId == nil ? nil : 2),
            offerIdentifier: item.offerDetails?.offerId,
            offerDiscountType: free ? "FREE_TRIAL" : (phase?.introductoryPrice != nil ? "PAY_AS_YOU_GO" : nil),
            billingPlanType: item.offerDetails?.basePlanId, signedDate: answeredAt, store: .googlePlay)
    }

    /// The renewal state: whether it renews, billing trouble, a pause, why it ended.
    private func renewal(_ item: SubscriptionPurchaseV2.LineItem?) -> RenewalFacts? {
        guard let item else { return nil }
        let state = answer.subscriptionState
        let retrying = state == .inGracePeriod || state == .onHold
        return RenewalFacts(
            environment: environment, originalTransactionID: key, productID: item.productId,
            willAutoRenew: item.autoRenewingPlan?.autoRenewEnabled ?? false, expirationIntent: expirationIntent, isInBillingRetry: retrying,
            gracePeriodExpiresDate: state == .inGracePeriod ? item.expiryTime.flatMap(RFC3339.parse) : nil,
            renewalBillingPlanType: item.offerDetails?.basePlanId, signedDate: answeredAt, store: .googlePlay,
            pausedUntil: state == .paused ? answer.pausedStateContext?.autoResumeTime.flatMap(RFC3339.parse) : nil)
    }

    /// Why it ended, in Apple's `expirationIntent` numbers: 1 the user, 2 billing, 5 the developer
    /// (a replacement is no intent: the purchase goes on under another token).
    private var expirationIntent: Int? {
        guard let ended = answer.canceledStateContext else { return nil }
        if ended.userInitiatedCancellation != nil { return 1 }
        if ended.systemInitiatedCancellation != nil { return 2 }
        if ended.developerInitiatedCancellation != nil { return 5 }
        return nil
    }

    /// Google's `Money` in milliunits, as the ledger keeps Apple's prices.
    package static func milliunits(_ money: Money) -> Int64 { money.units * 1000 + Int64(money.nanos) / 1_000_000 }
}
