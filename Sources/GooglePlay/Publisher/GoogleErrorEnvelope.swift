import Foundation

/// Google's error body: `{"error": {"code", "message", "errors": [{"domain", "reason", …}],
/// "status"?}}`. The first reason says what went wrong (`purchaseTokenDoesNotMatchPackageName`,
/// `invalidPurchaseState`…); the newer format adds a `status` such as `FAILED_PRECONDITION`.
package struct GoogleErrorEnvelope: Decodable, Sendable {
    package var error: Body

    package struct Body: Decodable, Sendable {
        package var code: Int?
        package var message: String?
        package var errors: [Item]?
        package var status: String?
    }

    package struct Item: Decodable, Sendable {
        package var domain: String?
        package var reason: String?
        package var message: String?
        package var location: String?
        package var locationType: String?
    }

    package var reason: String? { error.errors?.first?.reason }

    /// Google's own sentence, cut short: it names no secret, and a proxy's page is not Google's.
    package var message: String? { (error.message ?? error.errors?.first?.message).map { String($0.prefix(200)) } }

    package static func decode(_ body: Data) -> GoogleErrorEnvelope? {
        try? JSONDecoder().decode(GoogleErrorEnvelope.self, from: body)
    }
}

/// The OAuth token endpoint's refusal (RFC 6749 §5.2): `{"error": "invalid_grant",
/// "error_description": "Invalid JWT Signature."}`. Match on `error`: Google words the same
/// failure more than one way.
package struct OAuthErrorBody: Decodable, Sendable {
    package var error: String
    package var errorDescription: String?

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }

    package static func decode(_ body: Data) -> OAuthErrorBody? {
        try? JSONDecoder().decode(OAuthErrorBody.self, from: body)
    }
}
