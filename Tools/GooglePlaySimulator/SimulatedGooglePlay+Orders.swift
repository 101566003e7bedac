import Foundation
import Hummingbird
import Synchronization

extension SimulatedGooglePlay {
    /// `voidedpurchases.list`: rows voided from `startTime` (ms) to `endTime`, one-time products
    /// only unless `type=1`, partial refunds only when asked, `maxResults` a page, continued by
    /// `token` (which makes the time filters moot, as at Google). An empty page is `{}`.
    func voidedPage(_ packageName: String, _ query: Parameters) throws(GoogleError) -> [String: Any] {
        let type = query.get("type").flatMap { Int($0) } ?? 0
        guard [0, 1].contains(type) else { throw .invalidValue }
        let partial = query.get("includeQuantityBasedPartialRefund") == "true"
        let maxResults = query.get("maxResults").flatMap { Int($0) } ?? 1000
        guard (1...1000).contains(maxResults) else { throw .invalidValue }
        let start = query.get("startTime").flatMap { Double($0) }.map { Date(timeIntervalSince1970: $0 / 1000) } ?? .distantPast
        let end = query.get("endTime").flatMap { Double($0) }.map { Date(timeIntervalSince1970: $0 / 1000) } ?? .distantFuture
        var offset = 0
        var matching: (SimulatedVoided) -> Bool = { $0.voided >= start && $0.voided <= end }
        if let token = query.get("token") {
            guard token.hasPrefix("p"), let value = Int(token.dropFirst()) else { throw .invalidValue }
            offset = value
            matching = { _ in true }
        }
        let rows = state.withLock { $0.voided }.filter {
            $0.packageName == packageName && (type == 1 || !$0.isSubscription) && (partial || $0.quantity == nil) && matching($0)
        }.sorted { $0.voided < $1.voided }
        let page = rows.dropFirst(offset).prefix(maxResults)
        guard !page.isEmpty else { return [:] }
        var answer: [String: Any] = [
            "voidedPurchases": page.map { $0.json() },
            "pageInfo": ["totalResults": rows.count, "resultPerPage": maxResults, "startIndex": offset],
        ]
        if offset + page.count < rows.count { answer["tokenPagination"] = ["nextPageToken": "p\(offset + page.count)"] }
        return answer
    }

    /// `orders.refund` and `orders.reviewrefund`, recorded for tests to see. A refund with
    /// `revoke=true` of a one-time order also voids the purchase.
    func orderAction(
        _ verb: String, orderID: String, _ packageName: String, query: Parameters, _ fields: [String: Any]
    ) throws(GoogleError) -> [String: Any] {
        let known = state.withLock { state in
            state.products.values.contains { $0.orderID == orderID && $0.packageName == packageName }
                || state.subscriptions.values.contains { $0.orderIDs.contains(orderID) && $0.packageName == packageName }
        }
        guard known else { throw GoogleError(status: 404, reason: "notFound", message: "The order was not found.") }
        switch verb {
        case "refund":
            let revoke = query.get("revoke") == "true"
            state.withLock { $0.refunds.append(RefundRecord(orderID: orderID, revoke: revoke)) }
            if revoke, let token = state.withLock({ $0.products.values.first { $0.orderID == orderID }?.token }) {
                refundProduct(token, reason: 0, source: 1)
            }
            return [:]
        case "reviewrefund":
            guard fields["pendingRefundToken"] is String, let preference = fields["refundPreference"] as? String,
                ["APPROVE", "DECLINE", "NEUTRAL"].contains(preference)
            else { throw .invalidValue }
            state.withLock { $0.reviews.append(ReviewRecord(orderID: orderID, body: fields.mapValues { "\($0)" })) }
            return [:]
        default:
            throw GoogleError(status: 404, reason: "notFound", message: "No such method in the simulator.")
        }
    }
}
