import Foundation
import LedgerCore
import NIOHTTP1

extension AndroidPublisherClient {
    /// What `voidedpurchases.list` is asked for. Google looks back 30 days at most, filters on
    /// when a purchase became voided, and lists one-time products only unless `type` is 1.
    package struct VoidedQuery: Sendable {
        package var startTime: Date?
        package var endTime: Date?
        /// 0: one-time products only (Google's default); 1: subscriptions too.
        package var type: Int
        package var includeQuantityBasedPartialRefund: Bool
        /// Rows per page, 1000 at most.
        package var maxResults: Int?

        package init(
            startTime: Date? = nil, endTime: Date? = nil, type: Int = 1, includeQuantityBasedPartialRefund: Bool = true,
            maxResults: Int? = nil
        ) {
            self.startTime = startTime
            self.endTime = endTime
            self.type = type
            self.includeQuantityBasedPartialRefund = includeQuantityBasedPartialRefund
            self.maxResults = maxResults
        }
    }

    /// How a chargeback under review is answered (`orders.reviewrefund`); Google keeps only the first answer.
    package struct RefundReview: Sendable {
        package enum Preference: String, Sendable { case approve = "APPROVE", decline = "DECLINE", neutral = "NEUTRAL" }
        package var pendingRefundToken: String
        package var preference: Preference
        package var sampleContentProvided: Bool?
        /// How much was used, 0–100000 milliunits of a percent.
        package var consumptionPercentageMilliunits: Int?

        package init(
            pendingRefundToken: String, preference: Preference, sampleContentProvided: Bool? = nil,
            consumptionPercentageMilliunits: Int? = nil
        ) {
            self.pendingRefundToken = pendingRefundToken
            self.preference = preference
            self.sampleContentProvided = sampleContentProvided
            self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
        }
    }

    /// Every page of `purchases.voidedpurchases.list`, followed by `nextPageToken` to the end,
    /// each kept with its bytes. `maximumPages` stops a loop should Google hand a token back forever.
    package func voidedPurchases(
        package packageName: String, _ query: VoidedQuery, maximumPages: Int = 1000
    ) async throws(LedgerError) -> [GoogleEvidence<VoidedPurchasesPage>] {
        var pages: [GoogleEvidence<VoidedPurchasesPage>] = []
        var next: String?
        repeat {
            var parameters: [(String, String)] = [("type", "\(query.type)")]
            if query.includeQuantityBasedPartialRefund { parameters.append(("includeQuantityBasedPartialRefund", "true")) }
            if let max = query.maxResults { parameters.append(("maxResults", "\(max)")) }
            if let next {
                parameters.append(("token", next))
            } else {
                if let start = query.startTime { parameters.append(("startTime", "\(Self.millis(start))")) }
                if let end = query.endTime { parameters.append(("endTime", "\(Self.millis(end))")) }
            }
            let body = try await send(
                .GET, package: packageName, ["purchases", "voidedpurchases"], query: parameters, endpoint: "GET purchases/voidedpurchases")
            let page = try GoogleEvidence<VoidedPurchasesPage>.decode(body, as: "Google's voided purchases page")
            pages.append(page)
            next = page.model.nextPageToken
        } while next != nil && pages.count < maximumPages
        return pages
    }

    /// `orders.refund`: the order is refunded; with `revoke`, its entitlement is taken back too.
    package func refundOrder(package packageName: String, orderID: String, revoke: Bool) async throws(LedgerError) {
        _ = try await send(
            .POST, package: packageName, ["orders", orderID], action: "refund", query: [("revoke", revoke ? "true" : "false")],
            endpoint: "POST orders/{orderId}:refund")
    }

    /// `orders.reviewrefund`: the developer's view on a chargeback, within 24 hours of its notification.
    package func reviewRefund(package packageName: String, orderID: String, _ review: RefundReview) async throws(LedgerError) {
        var body: [String: Any] = ["pendingRefundToken": review.pendingRefundToken, "refundPreference": review.preference.rawValue]
        if let sample = review.sampleContentProvided { body["sampleContentProvided"] = sample }
        if let used = review.consumptionPercentageMilliunits { body["consumptionPercentageMilliunits"] = used }
        _ = try await send(
            .POST, package: packageName, ["orders", orderID], action: "reviewrefund", body: body,
            endpoint: "POST orders/{orderId}:reviewrefund")
    }

    static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
