import AppStore
import Foundation
import LedgerCore
import NIOHTTP1

/// Apple's endpoints that act on a customer's subscriptions and account on the app's behalf:
/// renewal-date extensions (one subscription, or every active subscriber of a product) and the
/// appAccountToken Apple keeps on a purchase.

extension AppStoreServerAPIClient {
    /// Extend a Subscription Renewal Date: `days` (1–90) for `reasonCode` (0 undeclared,
    /// 1 customer satisfaction, 2 other, 3 service issue or outage); `requestID` makes a retry
    /// the same request at Apple.
    package func extendRenewalDate(
        originalTransactionID: String, days: Int, reasonCode: Int, requestID: String,
        in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> RenewalExtensionResult {
        let body = try JSONSerialization.data(
            withJSONObject: ["extendByDays": days, "extendReasonCode": reasonCode, "requestIdentifier": requestID],
            options: .sortedKeys)
        return try await decoded(
            RenewalExtensionResult.self, .PUT,
            "/inApps/v1/subscriptions/extend/" + Self.segment(originalTransactionID, "an original transaction id"),
            body: body, in: environment, as: credentials)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of `productID` (in
    /// `storefronts`, ISO 3166-1 alpha-3; all when empty). Apple works through them in the
    /// background and answers at once with the request's id.
    package func extendForAllActiveSubscribers(
        productID: String, days: Int, reasonCode: Int, requestID: String, storefronts: [String],
        in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> String {
        var request: [String: Any] = [
            "productId": productID, "extendByDays": days, "extendReasonCode": reasonCode, "requestIdentifier": requestID,
        ]
        if !storefronts.isEmpty { request["storefrontCountryCodes"] = storefronts }
        return try await decoded(
            MassExtensionAccepted.self, .POST, "/inApps/v1/subscriptions/extend/mass",
            body: try JSONSerialization.data(withJSONObject: request, options: .sortedKeys), in: environment, as: credentials
        ).requestIdentifier
    }

    /// Get Status of Subscription Renewal Date Extensions: how far a mass extension got.
    package func massExtensionStatus(
        productID: String, requestID: String, in environment: AppleEnvironment,
        as credentials: ServerAPICredentials
    ) async throws -> MassExtensionStatus {
        try await decoded(
            MassExtensionStatus.self, .GET,
            "/inApps/v1/subscriptions/extend/mass/" + Self.segment(productID, "a product id") + "/"
                + Self.segment(requestID, "a request id"), in: environment, as: credentials)
    }

    /// Set App Account Token: Apple keeps `token` on the purchase, so its later notifications and
    /// transactions — purchases made outside the app included — carry it.
    package func setAppAccountToken(
        _ token: UUID, originalTransactionID: String, in environment: AppleEnvironment,
        as credentials: ServerAPICredentials
    ) async throws {
        let body = try JSONSerialization.data(withJSONObject: ["appAccountToken": token.uuidString.lowercased()])
        _ = try await send(
            .PUT, "/inApps/v1/transactions/" + Self.segment(originalTransactionID, "an original transaction id") + "/appAccountToken",
            body: body, in: environment, as: credentials, expecting: [200, 202, 204])
    }
}

/// Apple's answer to a single extension.
package struct RenewalExtensionResult: Decodable, Sendable {
    package var originalTransactionId: String?
    package var webOrderLineItemId: String?
    package var success: Bool?
    /// When the new renewal date takes effect (milliseconds).
    package var effectiveDate: Double?
}

struct MassExtensionAccepted: Decodable { var requestIdentifier: String }

/// Apple's progress of a mass extension.
package struct MassExtensionStatus: Decodable, Sendable {
    package var requestIdentifier: String?
    package var complete: Bool?
    package var completeDate: Double?
    package var succeededCount: Int64?
    package var failedCount: Int64?
}
