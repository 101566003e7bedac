import Foundation

/// Google's evidence as support reads it: the fields that decided what the ledger recorded, one
/// line each, above the whole answer. Tokens are shown by their first eight characters only — the
/// whole answer below them is the evidence; a summary line is for finding one's way.
package enum GoogleEvidenceSummary {
    package typealias Line = (field: String, value: String)

    /// A subscriptionsv2 answer's lines; nil when `raw` is not one.
    package static func subscription(_ raw: Data) -> [Line]? {
        guard let answer = try? JSONDecoder().decode(SubscriptionPurchaseV2.self, from: raw), answer.lineItems != nil else { return nil }
        var lines: [Line] = [
            ("state", answer.subscriptionState?.rawValue ?? "not stated"),
            ("acknowledgement", answer.acknowledgementState?.rawValue ?? "not stated"),
        ]
        if let start = answer.startTime { lines.append(("started", start)) }
        for item in answer.lineItems ?? [] {
            let plan = [item.offerDetails?.basePlanId, item.offerDetails?.offerId].compactMap { $0 }.joined(separator: " / ")
            lines.append(("product", item.productId + (plan.isEmpty ? "" : " (\(plan))")))
            if let expiry = item.expiryTime { lines.append(("expires", expiry)) }
            if let renews = item.autoRenewingPlan?.autoRenewEnabled { lines.append(("auto-renew", renews ? "on" : "off")) }
            if let order = item.latestSuccessfulOrderId { lines.append(("latest order", order)) }
        }
        if let order = answer.latestOrderId { lines.append(("latest order", order)) }
        if let resume = answer.pausedStateContext?.autoResumeTime { lines.append(("resumes", resume)) }
        if let linked = answer.linkedPurchaseToken { lines.append(("replaces the purchase", shown(linked))) }
        if let earlier = answer.outOfAppPurchaseContext?.expiredPurchaseToken { lines.append(("continues the purchase", shown(earlier))) }
        if let account = answer.externalAccountIdentifiers?.obfuscatedExternalAccountId { lines.append(("account id", account)) }
        if let region = answer.regionCode { lines.append(("region", region)) }
        if answer.testPurchase != nil { lines.append(("test purchase", "yes (a license tester's)")) }
        return dedup(lines)
    }

    /// A one-time purchase's answer (productsv2, or products v1); nil when `raw` is neither.
    package static func product(_ raw: Data) -> [Line]? {
        if let answer = try? JSONDecoder().decode(ProductPurchaseV2.self, from: raw), let items = answer.productLineItem {
            var lines: [Line] = [
                ("state", answer.purchaseStateContext?.purchaseState ?? "not stated"),
                ("acknowledgement", answer.acknowledgementState?.rawValue ?? "not stated"),
            ]
            for item in items {
                lines.append(("product", item.productId))
                if let quantity = item.productOfferDetails?.quantity { lines.append(("quantity", String(quantity))) }
                if let refundable = item.productOfferDetails?.refundableQuantity {
                    lines.append(("refundable quantity", String(refundable)))
                }
                if let consumption = item.productOfferDetails?.consumptionState { lines.append(("consumption", consumption)) }
            }
            if let paid = answer.purchaseCompletionTime { lines.append(("paid", paid)) }
            if let order = answer.orderId { lines.append(("order", order)) }
            if let account = answer.obfuscatedExternalAccountId { lines.append(("account id", account)) }
            if let region = answer.regionCode { lines.append(("region", region)) }
            if answer.testPurchaseContext != nil { lines.append(("test purchase", "yes (a license tester's)")) }
            return lines
        }
        guard let answer = try? JSONDecoder().decode(ProductPurchase.self, from: raw), answer.purchaseState != nil else { return nil }
        let states = [0: "purchased", 1: "canceled", 2: "pending"]
        var lines: [Line] = [
            ("state", answer.purchaseState.map { states[$0] ?? String($0) } ?? "not stated"),
            ("acknowledgement", answer.isAcknowledged ? "acknowledged" : "pending"),
            ("consumption", answer.consumptionState == 1 ? "consumed" : "not consumed"),
        ]
        if let product = answer.productId { lines.append(("product", product)) }
        if let quantity = answer.quantity { lines.append(("quantity", String(quantity))) }
        if let order = answer.orderId { lines.append(("order", order)) }
        if let account = answer.obfuscatedExternalAccountId { lines.append(("account id", account)) }
        return lines
    }

    /// A real-time developer notification's lines (the message's data, decoded when received).
    package static func notification(_ raw: Data) -> [Line]? {
        guard let notification = try? JSONDecoder().decode(DeveloperNotification.self, from: raw) else { return nil }
        var lines: [Line] = [("package", notification.packageName)]
        let sent = Date(timeIntervalSince1970: Double(notification.eventTimeMillis) / 1000)
        lines.append(("sent", sent.formatted(.iso8601)))
        switch notification.kind {
        case .subscription(let body):
            lines.append(("type", "\(body.notificationType) (\(body.notificationType.rawValue))"))
        case .oneTimeProduct(let body):
            let names = [1: "ONE_TIME_PRODUCT_PURCHASED", 2: "ONE_TIME_PRODUCT_CANCELED"]
            lines.append(("type", "\(names[body.notificationType] ?? "unknown") (\(body.notificationType))"))
            if let sku = body.sku { lines.append(("product", sku)) }
        case .voidedPurchase(let body):
            lines.append(
                (
                    "type",
                    body.refundType == 2 ? "voided purchase: a partial refund by quantity" : "voided purchase: refunded or charged back"
                ))
            if let order = body.orderId { lines.append(("order", order)) }
        case .pendingRefundReview(let body):
            lines.append(("type", "pending refund review (answered with orders.reviewrefund when the app's policy allows)"))
            if let order = body.orderId { lines.append(("order", order)) }
        case .test:
            lines.append(("type", "test notification (from Play Console)"))
        case .unknown(let fields):
            lines.append(("type", "not known to this version: " + fields.joined(separator: ", ")))
        }
        if let token = notification.purchaseToken { lines.append(("purchase", shown(token))) }
        return lines
    }

    static func shown(_ token: String) -> String { token.prefix(8) + "…" }

    /// A line said twice (the latest order of the only line item and of the whole) once.
    static func dedup(_ lines: [Line]) -> [Line] {
        var seen: Set<String> = []
        return lines.filter { seen.insert($0.field + "\u{1F}" + $0.value).inserted }
    }
}
