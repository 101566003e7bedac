import LedgerCore
import NIOHTTP1

extension AndroidPublisherClient {
    /// How a subscription is revoked: all of it refunded, the unused time refunded, or one item.
    package enum Revocation: Sendable, Equatable {
        case fullRefund, proratedRefund
        case itemBasedRefund(productID: String)

        var body: [String: Any] {
            switch self {
            case .fullRefund: ["revocationContext": ["fullRefund": [String: Any]()]]
            case .proratedRefund: ["revocationContext": ["proratedRefund": [String: Any]()]]
            case .itemBasedRefund(let product): ["revocationContext": ["itemBasedRefund": ["productId": product]]]
            }
        }
    }

    /// Who asked for the cancellation: the user (renewals stop) or the developer (payments stop).
    package enum CancellationType: String, Sendable {
        case userRequestedStopRenewals = "USER_REQUESTED_STOP_RENEWALS"
        case developerRequestedStopPayments = "DEVELOPER_REQUESTED_STOP_PAYMENTS"
    }

    /// `subscriptionsv2.defer`'s answer: each item's new expiry.
    package struct DeferredExpiry: Decodable, Sendable {
        package var itemExpiryTimeDetails: [Item]?
        package struct Item: Decodable, Sendable {
            package var productId: String?
            package var expiryTime: String?
        }
    }

    /// `purchases.subscriptionsv2.get`: the subscription as Google knows it now.
    package func subscription(
        package packageName: String, token: String
    ) async throws(LedgerError) -> GoogleEvidence<
        SubscriptionPurchaseV2
    > {
        let body = try await send(
            .GET, package: packageName, ["purchases", "subscriptionsv2", "tokens", token], token: token,
            endpoint: "GET purchases/subscriptionsv2/tokens/{token}")
        return try .decode(body, as: "Google's subscription purchase")
    }

    /// `subscriptionsv2.revoke`: access ends now, with the refund asked for.
    package func revokeSubscription(package packageName: String, token: String, _ revocation: Revocation) async throws(LedgerError) {
        _ = try await send(
            .POST, package: packageName, ["purchases", "subscriptionsv2", "tokens", token], action: "revoke", body: revocation.body,
            token: token, endpoint: "POST purchases/subscriptionsv2/tokens/{token}:revoke")
    }

    /// `subscriptionsv2.cancel`: renewals stop; access runs to the expiry.
    package func cancelSubscription(package packageName: String, token: String, _ type: CancellationType) async throws(LedgerError) {
        _ = try await send(
            .POST, package: packageName, ["purchases", "subscriptionsv2", "tokens", token], action: "cancel",
            body: ["cancellationContext": ["cancellationType": type.rawValue]], token: token,
            endpoint: "POST purchases/subscriptionsv2/tokens/{token}:cancel")
    }

    /// `subscriptionsv2.defer`: the next charge moves `by` later. `etag` is the one the purchase was
    /// read with, so a deferral never applies to a state the caller has not seen.
    package func deferSubscription(
        package packageName: String, token: String, etag: String, by duration: Duration, validateOnly: Bool = false
    ) async throws(LedgerError) -> GoogleEvidence<DeferredExpiry> {
        let context: [String: Any] = [
            "etag": etag, "deferDuration": "\(duration.components.seconds)s", "validateOnly": validateOnly,
        ]
        let body = try await send(
            .POST, package: packageName, ["purchases", "subscriptionsv2", "tokens", token], action: "defer",
            body: ["deferralContext": context], token: token, endpoint: "POST purchases/subscriptionsv2/tokens/{token}:defer")
        return try .decode(body, as: "Google's deferral answer")
    }

    /// `purchases.subscriptions.acknowledge` (there is no v2 one): within three days of payment,
    /// or Google refunds and revokes the purchase.
    package func acknowledgeSubscription(
        package packageName: String, subscriptionID: String, token: String, developerPayload: String? = nil,
        obfuscatedAccountID: String? = nil
    ) async throws(LedgerError) {
        var body: [String: Any] = [:]
        if let developerPayload { body["developerPayload"] = developerPayload }
        if let obfuscatedAccountID { body["externalAccountIds"] = ["obfuscatedAccountId": obfuscatedAccountID] }
        _ = try await send(
            .POST, package: packageName, ["purchases", "subscriptions", subscriptionID, "tokens", token], action: "acknowledge",
            body: body, token: token, endpoint: "POST purchases/subscriptions/{productId}/tokens/{token}:acknowledge")
    }
}
