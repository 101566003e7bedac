/// Why a piece of Apple evidence was rejected. The `code` is stable: it is what API clients see.
public struct AppStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not a compact JWS, bad base64url or JSON, or over the size limit.
        public static let malformed = Code("malformed_evidence")
        public static let unsupportedAlgorithm = Code("unsupported_algorithm")
        /// No `x5c`, or not exactly leaf, intermediate and root.
        public static let missingCertificateChain = Code("missing_certificate_chain")
        /// The chain does not lead to a configured root, lacks Apple's marker OIDs, or was not
        /// valid at the payload's signedDate.
        public static let untrustedChain = Code("untrusted_chain")
        public static let invalidSignature = Code("invalid_signature")
        public static let bundleMismatch = Code("bundle_mismatch")
        public static let appMismatch = Code("app_apple_id_mismatch")
        public static let environmentNotAllowed = Code("environment_not_allowed")
        /// Apple says the receipt is not valid (21000–21003, 21010, or any other final status),
        /// or it is valid but for another app.
        public static let receiptInvalid = Code("receipt_invalid")
        /// Apple refused the app's shared secret (21004), or a V1 notification's password is wrong.
        public static let sharedSecretMismatch = Code("shared_secret_mismatch")
        /// Legacy evidence needs the app's shared secret and none is configured.
        public static let sharedSecretMissing = Code("shared_secret_not_configured")
        /// Apple could not be reached or kept failing (retryable statuses, timeouts, 5xx) within
        /// the retry budget: try again later.
        public static let appleUnavailable = Code("apple_unavailable")
        /// Apple refused the app's App Store Server API key (401): issuer id, key id or private
        /// key is wrong, or the key was revoked.
        public static let appleAPIUnauthorized = Code("apple_api_unauthorized")
        /// Asking Apple needs the app's App Store Server API key and none is configured.
        public static let appleAPINotConfigured = Code("app_store_server_api_not_configured")
        /// Apple knows no such transaction in the environments the app accepts.
        public static let appleTransactionNotFound = Code("apple_transaction_not_found")
        /// Apple refused the request itself (its errorCode and errorMessage are in the message).
        public static let appleAPIRefused = Code("apple_api_refused")
    }

    public var code: Code
    /// A human sentence; never contains the evidence itself.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
