import Foundation
import LedgerFormats

/// `UserTimeline` written as JSON by hand, in the shape its `Codable` conformance reads (dates in
/// milliseconds, nil fields left out). A rebuild writes one per user, and going through the
/// Encoder protocol cost four times what computing the timeline did (`ledger-bench rebuild`:
/// 4.1 CPU-seconds for 26,489 timelines). Tests hold it to the Codable shape: a timeline written
/// here decodes equal with `JSONDecoder`, and every stored property of each type is written.
package enum TimelineJSON {
    package static func bytes(_ timeline: UserTimeline) -> [UInt8] {
        var out: [UInt8] = []
        write(timeline, into: &out)
        return out
    }

    package static func write(_ timeline: UserTimeline, into out: inout [UInt8]) {
        var json = JSONWriter(bytes: out)
        out = [] // the writer holds the only reference: appending never copies the buffer
        json.object { json in
            json.field("userID", timeline.userID)
            json.array("periods", timeline.periods) { json, period in json.object { write(period, &$0) } }
            json.array("subscriptions", timeline.subscriptions) { json, subscription in json.object { write(subscription, &$0) } }
            json.array("purchases", timeline.purchases) { json, purchase in json.object { write(purchase, &$0) } }
            json.array("balanceEntries", timeline.balanceEntries) { json, entry in json.object { write(entry, &$0) } }
            json.field("consentRescindedAt", timeline.consentRescindedAt)
            if let purchase = timeline.appPurchase {
                json.key("appPurchase")
                json.object { json in
                    json.field("appTransactionID", purchase.appTransactionID)
                    json.field("environment", purchase.environment.rawValue)
                    json.field("originalApplicationVersion", purchase.originalApplicationVersion)
                    json.field("originalPurchaseDate", purchase.originalPurchaseDate)
                    json.field("originalPlatform", purchase.originalPlatform)
                }
            }
        }
        out = json.bytes
    }

    static func write(_ period: AccessPeriod, _ json: inout JSONWriter) {
        json.array("entitlements", period.entitlements) { json, name in json.value(name) }
        json.field("productID", period.productID)
        json.field("originalTransactionID", period.originalTransactionID)
        json.field("transactionID", period.transactionID)
        json.field("start", period.start)
        json.field("end", period.end)
        json.field("source", period.source.rawValue)
        json.field("willRenew", period.willRenew)
        json.field("billingRetry", period.billingRetry)
        json.field("gracePeriodEnd", period.gracePeriodEnd)
    }

    static func write(_ subscription: SubscriptionTimeline, _ json: inout JSONWriter) {
        json.field("originalTransactionID", subscription.originalTransactionID)
        json.field("productID", subscription.productID)
        json.field("accessEnd", subscription.accessEnd)
        json.field("revokedAt", subscription.revokedAt)
        json.field("gracePeriodEnd", subscription.gracePeriodEnd)
        json.field("billingRetry", subscription.billingRetry)
        json.field("willRenew", subscription.willRenew)
        json.field("pendingProductID", subscription.pendingProductID)
        json.field("expirationIntent", subscription.expirationIntent.map(Int64.init))
        json.field("billingPlanType", subscription.billingPlanType)
        json.field("commitmentExpiresAt", subscription.commitmentExpiresAt)
        json.field("offerType", subscription.offerType.map(Int64.init))
        json.field("offerIdentifier", subscription.offerIdentifier)
        json.field("store", subscription.store?.rawValue)
    }

    static func write(_ purchase: PurchaseSummary, _ json: inout JSONWriter) {
        json.field("transactionID", purchase.transactionID)
        json.field("originalTransactionID", purchase.originalTransactionID)
        json.field("productID", purchase.productID)
        json.field("type", purchase.type?.rawValue)
        json.field("purchaseDate", purchase.purchaseDate)
        json.field("quantity", Int64(purchase.quantity))
        json.field("revokedAt", purchase.revokedAt)
        json.field("store", purchase.store?.rawValue)
    }

    static func write(_ entry: BalanceEntry, _ json: inout JSONWriter) {
        json.field("kind", entry.kind.rawValue)
        json.field("currency", entry.currency)
        json.field("amount", entry.amount)
        json.field("at", entry.at)
        json.field("reference", entry.reference)
        json.field("expiresAt", entry.expiresAt)
        json.field("origin", entry.origin?.rawValue)
        json.field("reason", entry.reason)
        json.field("detail", entry.detail)
    }
}
