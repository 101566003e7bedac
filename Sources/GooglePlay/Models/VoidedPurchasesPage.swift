/// One page of `purchases.voidedpurchases.list`, oldest first. An empty page may come as `{}`
/// (proto3 JSON leaves empty lists out) or with an empty list; both read as no purchases.
package struct VoidedPurchasesPage: Decodable, Sendable {
    package var pageInfo: PageInfo?
    package var tokenPagination: TokenPagination?
    package var voidedPurchases: [VoidedPurchase]

    package struct PageInfo: Decodable, Sendable {
        package var totalResults: Int?
        package var resultPerPage: Int?
        package var startIndex: Int?
    }

    package struct TokenPagination: Decodable, Sendable {
        package var nextPageToken: String?
        package var previousPageToken: String?
    }

    enum Keys: String, CodingKey { case pageInfo, tokenPagination, voidedPurchases }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        pageInfo = try container.decodeIfPresent(PageInfo.self, forKey: .pageInfo)
        tokenPagination = try container.decodeIfPresent(TokenPagination.self, forKey: .tokenPagination)
        voidedPurchases = try container.decodeIfPresent([VoidedPurchase].self, forKey: .voidedPurchases) ?? []
    }

    package var nextPageToken: String? { tokenPagination?.nextPageToken.flatMap { $0.isEmpty ? nil : $0 } }
}

/// A refunded, charged-back or revoked purchase. Subscriptions' renewals share a token, so with
/// `type=1` a row is told apart by `orderId`. A final full refund carries no `voidedQuantity`.
package struct VoidedPurchase: Decodable, Sendable {
    package var kind: String?
    package var purchaseToken: String
    package var purchaseTimeMillis: Int64Text?
    package var voidedTimeMillis: Int64Text?
    package var orderId: String?
    /// 0 user, 1 developer, 2 Google.
    package var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental, 5 fraud, 6 friendly fraud,
    /// 7 chargeback, 8 unacknowledged purchase.
    package var voidedReason: Int?
    package var voidedQuantity: Int?
}
