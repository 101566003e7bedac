/// Why a piece of Apple evidence was rejected. The `code` is stable: it is what API clients see.
package struct AppStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// Not a compact JWS, bad base64url or JSON, or over the size limit.
        package static let malformed = Code("malformed_evidence")
        package static let unsupportedAlgorithm = Code("unsupported_algorithm")
        /// No `x5c`, or not exactly leaf, intermediate and root.
        package static let missingCertificateChain = Code("missing_certificate_chain")
        /// The chain does not lead to a configured root, lacks Apple's marker OIDs, or was not
        /// valid at the payload's signedDate.
        package static let untrustedChain = Code("untrusted_chain")
        package static let invalidSignature = Code("invalid_signature")
        package static let bundleMismatch = Code("bundle_mismatch")
        package static let appMismatch = Code("app_apple_id_mismatch")
        package static let environmentNotAllowed = Code("environment_not_allowed")
        /// Apple says the receipt is not valid (21000–21003, 21010, or any other final status),
        /// or it is valid but for another app.
        package static let receiptInvalid = Code("receipt_invalid")
        /// Apple refused the app's shared secret (21004), or a V1 notification's password is wrong.
        package static let sharedSecretMismatch = Code("shared_secret_mismatch")
        /// Legacy evidence needs the app's shared secret and none is configured.
        package static let sharedSecretMissing = Code("shared_secret_not_configured")
        /// Apple could not be reached or kept failing (retryable statuses, timeouts, 5xx) within
        /// the retry budget: try again later.
        package static let appleUnavailable = Code("apple_unavailable")
        /// Apple refused the app's App Store Server API key (401): issuer id, key id or private
        /// key is wrong, or the key was revoked.
        package static let appleAPIUnauthorized = Code("apple_api_unauthorized")
        /// Asking Apple needs the app's App Store Server API key and none is configured.
        package static let appleAPINotConfigured = Code("app_store_server_api_not_configured")
        /// Apple knows no such transaction in the environments the app accepts.
        package static let appleTransactionNotFound = Code("apple_transaction_not_found")
        /// Apple knows the customer but no purchase of the app itself on their account (4040019).
        package static let appleAppTransactionNotFound = Code("apple_app_transaction_not_found")
        /// Apple refused the request itself (its errorCode and errorMessage are in the message).
        package static let appleAPIRefused = Code("apple_api_refused")
        /// Apple's refusals a caller can act on, by Apple's errorCode: the subscription's state
        /// does not allow an extension (4030004), it had its extensions already (4030005), a
        /// family-shared purchase cannot be acted on (4030007, 4000185), the token is no UUID
        /// (4000183), the id is not an original transaction id (4000187).
        package static let extensionIneligible = Code("subscription_extension_ineligible")
        package static let extensionLimitReached = Code("extension_limit_reached")
        package static let familySharedNotSupported = Code("family_shared_not_supported")
        package static let invalidAppAccountToken = Code("invalid_app_account_token")
        package static let notOriginalTransactionID = Code("not_original_transaction_id")

        /// Apple's errorCodes that have a code of their own here.
        package static let byAppleErrorCode: [Int: Code] = [
            4_030_004: extensionIneligible, 4_030_005: extensionLimitReached, 4_030_007: familySharedNotSupported,
            4_000_185: familySharedNotSupported, 4_000_183: invalidAppAccountToken, 4_000_187: notOriginalTransactionID,
        ]
    }

    package var code: Code
    /// A human sentence; never contains the evidence itself.
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code): \(message)" }
}
