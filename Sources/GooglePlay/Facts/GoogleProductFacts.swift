import Foundation
import LedgerCore

/// A one-time purchase as Google answered for it (`productsv2`), turned into the domain's facts:
/// the purchase once paid, and the refund Google's state shows (all of it when the purchase is
/// cancelled after being paid; the refunded share when fewer items are refundable than were bought).
/// Pure, as `GoogleSubscriptionFacts` is.
package typealias GoogleProductFacts = GooglePurchaseAnswer<ProductPurchaseV2>

extension GooglePurchaseAnswer where Model == ProductPurchaseV2 {
    package var environment: AppleEnvironment { answer.testPurchaseContext == nil ? .production : .sandbox }
    package var state: String? { answer.purchaseStateContext?.purchaseState }
    package var isPending: Bool { state == "PENDING" || (state == nil && answer.purchaseCompletionTime == nil) }
    package var isAcknowledged: Bool { answer.acknowledgementState == .acknowledged }
    package var item: ProductPurchaseV2.LineItem? { answer.productLineItem?.first }
    package var productIDs: [String] { (answer.productLineItem ?? []).map(\.productId) }
    package var quantity: Int { max(item?.productOfferDetails?.quantity ?? 1, 1) }
    package var isConsumed: Bool { item?.productOfferDetails?.consumptionState == "CONSUMPTION_STATE_CONSUMED" }
    package var accountToken: UUID? { GooglePurchaseKey.accountToken(answer.obfuscatedExternalAccountId) }

    /// The order's id: what its transaction and its refunds are recorded under.
    package var transactionID: String { answer.orderId ?? key }

    /// The facts this answer states; none while the payment is pending or was never made.
    /// `refunded` is the share of it already recorded as refunded (100000 for all of it): Google's
    /// answer shows a refund every time it is asked, and the books take it once. `recorded`: the
    /// purchase is in the books already (a cancelled purchase's answer may no longer say when it
    /// was paid, and its refund still counts).
    package func events(refunded: Int = 0, recorded: Bool = false, refundedAt: Date? = nil) -> [LedgerEvent] {
        guard let item, !isPending else { return [] }
        let id = transactionID
        var events: [LedgerEvent] = []
        if let paid = answer.purchaseCompletionTime.flatMap(RFC3339.parse) {
            events.append(
                .purchased(
                    TransactionFacts(
                        environment: environment, transactionID: id, originalTransactionID: key, productID: item.productId,
                        purchaseDate: paid, originalPurchaseDate: paid, quantity: quantity, storefront: answer.regionCode,
                        appAccountToken: accountToken, offerIdentifier: item.productOfferDetails?.offerId, signedDate: answeredAt,
                        store: .googlePlay)))
        } else if !recorded {
            return [] // never paid as far as the books know: nothing to refund
        }
        let refundable = item.productOfferDetails?.refundableQuantity
        let share = state == "CANCELLED" ? 100_000 : refundable.map { (quantity - min(max($0, 0), quantity)) * 100_000 / quantity } ?? 0
        // Each refund fact is the share it adds, as Apple's prorated refunds are.
        if share > refunded {
            events.append(refund(id, percentage: share == 100_000 && refunded == 0 ? nil : share - refunded, at: refundedAt ?? answeredAt))
        }
        return events
    }

    /// A refund Google's answer shows, dated when Google voided it where the caller knows (a
    /// voided purchase's notification or list entry), else when Google answered.
    private func refund(_ transactionID: String, percentage: Int?, at date: Date) -> LedgerEvent {
        .refunded(
            RevocationFacts(
                environment: environment, transactionID: transactionID, originalTransactionID: key, revocationDate: date,
                kind: percentage == nil ? .refundFull : .refundProrated, percentage: percentage, signedDate: answeredAt,
                store: .googlePlay))
    }
}
