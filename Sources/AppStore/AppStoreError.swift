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
