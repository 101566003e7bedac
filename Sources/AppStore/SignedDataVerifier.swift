import Crypto
import Foundation
import LedgerCore
import LedgerFormats
import LedgerTracing
import SwiftASN1
import Synchronization
import Tracing
@_spi(FixedExpiryValidationTime) import X509

/// What a piece of signed data must be for one app.
package struct Expectation: Sendable {
    package enum Kind: Sendable {
        case transaction, renewalInfo, notification, appTransaction
        /// Apple's realtime retention request: it names the app by its Apple app id only.
        case realtimeRequest
    }
    package var bundleID: String
    /// Environments the app accepts (Xcode and LocalTesting only when listed, never with Production).
    package var environments: Set<AppleEnvironment>
    /// Required for Production notifications; checked whenever both sides have one.
    package var appAppleID: Int64?

    /// Xcode's self-signed StoreKit testing data is considered only for an app that lists Xcode or
    /// LocalTesting and not Production.
    var acceptsLocalTesting: Bool {
        !environments.contains(.production) && !environments.isDisjoint(with: [.xcode, .localTesting])
    }

    package init(bundleID: String, environments: Set<AppleEnvironment>, appAppleID: Int64? = nil) {
        self.bundleID = bundleID
        self.environments = environments
        self.appAppleID = appAppleID
    }
}

/// A verified JWS: its decoded payload, and the instant Apple signed it.
package struct VerifiedPayload: Sendable {
    package var payload: Data
    /// The payload parsed, once: its claims and its fields are read from this.
    package var tree: JSONTree
    package var signedDate: Date
    package var environment: AppleEnvironment
}

/// Verifies StoreKit 2 transactions, renewal info and App Store Server Notifications V2 the way
/// Apple's own server libraries do, against roots from configuration only.
///
/// Validated chains are cached with the window in which every certificate of the chain is valid,
/// so repeated evidence from the same leaf costs one ES256 check and the cache can never accept a
/// payload signed outside that window.
package final class SignedDataVerifier: Sendable {
    /// Apple's marker extensions: the WWDR intermediate and the App Store receipt-signing leaf.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Evidence larger than this is refused before any parsing.
    package static let maximumSize = 64 * 1024

    let roots: [Certificate]
    /// JWS header segment → the leaf's key and the window in which the whole chain is valid.
    private let cache = Mutex<[String: CachedChain]>([:])

    struct CachedChain {
        var key: P256.Signing.PublicKey
        var window: ClosedRange<Date>
    }

    package init(roots: [Certificate]) {
        self.roots = roots
    }

    package func verify(_ jws: String, as kind: Expectation.Kind, expecting expectation: Expectation) async throws -> VerifiedPayload {
        try await Spans.child("verify \(kind)") { span in
            let verified = try await verifyUntraced(jws, as: kind, expecting: expectation)
            span?.attributes["apple.environment"] = verified.environment.rawValue
            return verified
        }
    }

    private func verifyUntraced(
        _ jws: String, as kind: Expectation.Kind, expecting expectation: Expectation
    ) async throws -> VerifiedPayload {
        guard jws.utf8.count <= Self.maximumSize else { throw LedgerError(.malformed, "signed data is over \(Self.maximumSize) bytes") }
        // Split on the UTF-8 bytes: splitting the String by Characters was a tenth of the time.
        let bytes = jws.utf8
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = bytes[bytes.index(after: firstDot)...].firstIndex(of: UInt8(ascii: ".")),
            !bytes[bytes.index(after: secondDot)...].contains(UInt8(ascii: "."))
        else {
            throw LedgerError(.malformed, "not a compact JWS of three base64url parts with a JSON payload")
        }
        let parts = [jws[..<firstDot], jws[bytes.index(after: firstDot)..<secondDot], jws[bytes.index(after: secondDot)...]]
        // The payload is parsed once, by the ledger's own parser: its claims here, its fields by
        // the caller (`SignedFields`). JSONDecoder for the claims and JSONSerialization for the
        // fields parsed each 1.5 KB payload twice, ~3 % of ingestion's CPU.
        guard let payload = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let tree = try? JSONTree.parse(payload), case .object = tree,
            let decoded = try? StorageDecoder.decode(ClaimsPayload.self, from: tree)
        else {
            throw LedgerError(.malformed, "not a compact JWS of three base64url parts with a JSON payload")
        }
        let claims = try Claims(decoded, tree: tree, kind: kind)
        // The header segment is signed, so the same segment means the same algorithm and chain:
        // a chain seen before (and valid at this signedDate) skips decoding the header at all.
        let headerSegment = String(parts[0])
        let key: P256.Signing.PublicKey
        var localTesting = false
        if let cached = cache.withLock({ $0[headerSegment] }), cached.window.contains(claims.signedDate) {
            key = cached.key
        } else {
            guard let headerData = Base64URL.decode(parts[0]),
                let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
            else {
                throw LedgerError(.malformed, "the JWS header is not a JSON object")
            }
            guard header["alg"] as? String == "ES256" else { throw LedgerError(.unsupportedAlgorithm, "only ES256 is accepted") }
            guard let x5c = header["x5c"] as? [String] else {
                throw LedgerError(.missingCertificateChain, "the header must carry exactly three x5c certificates")
            }
            if x5c.count == 1, expectation.acceptsLocalTesting {
                key = try Self.localTestingKey(x5c[0])
                localTesting = true
            } else {
                guard x5c.count == 3 else {
                    throw LedgerError(.missingCertificateChain, "the header must carry exactly three x5c certificates")
                }
                key = try await validatedKey(x5c, at: claims.signedDate, cacheKey: headerSegment)
            }
        }

        guard signature.count == 64,
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data(jws.utf8[..<parts[1].endIndex]))
        else {
            throw LedgerError(.invalidSignature, "the ES256 signature does not match the leaf certificate")
        }
        let environment = try claims.check(against: expectation, kind: kind)
        if localTesting, environment != .xcode, environment != .localTesting {
            throw LedgerError(.untrustedChain, "a self-signed StoreKit testing certificate can only vouch for Xcode or LocalTesting data")
        }
        return VerifiedPayload(payload: payload, tree: tree, signedDate: claims.signedDate, environment: environment)
    }

    /// Xcode's StoreKit testing signs with one self-signed certificate: there is no chain to a
    /// root, so it proves nothing about Apple — accepted only for an app that lists Xcode or
    /// LocalTesting (never beside Production), and only for data of those environments.
    private static func localTestingKey(_ base64: String) throws -> P256.Signing.PublicKey {
        guard let der = Base64URL.decode(Substring(base64)), let certificate = try? Certificate(derEncoded: Array(der)),
            let key = P256.Signing.PublicKey(certificate.publicKey)
        else {
            throw LedgerError(.missingCertificateChain, "the x5c certificate is not a valid P-256 certificate")
        }
        return key
    }

    /// Leaf → intermediate → a configured root (never `x5c[2]`), Apple's marker OIDs, valid at
    /// `date`; returns the leaf's signing key and remembers it under `cacheKey` for the chain's window.
    private func validatedKey(_ x5c: [String], at date: Date, cacheKey: String) async throws -> P256.Signing.PublicKey {
        guard let leafDER = Base64URL.decode(Substring(x5c[0])), let intermediateDER = Base64URL.decode(Substring(x5c[1])),
            let leaf = try? Certificate(derEncoded: Array(leafDER)),
            let intermediate = try? Certificate(derEncoded: Array(intermediateDER))
        else {
            throw LedgerError(.missingCertificateChain, "an x5c certificate is not valid DER")
        }
        guard intermediate.extensions[oid: Self.intermediateMarker] != nil, leaf.extensions[oid: Self.leafMarker] != nil else {
            throw LedgerError(.untrustedChain, "the certificates lack Apple's App Store marker extensions")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(fixedExpiryValidationTime: date) }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result, chain.count == 3, chain[1] == intermediate,
            let key = P256.Signing.PublicKey(leaf.publicKey)
        else {
            throw LedgerError(.untrustedChain, "the chain does not lead to a configured root, or was not valid when signed")
        }
        let notBefore = chain.map(\.notValidBefore).max()!
        let notAfter = chain.map(\.notValidAfter).min()!
        if notBefore <= notAfter { cache.withLock { $0[cacheKey] = CachedChain(key: key, window: notBefore...notAfter) } }
        return key
    }
}

/// The few fields of a payload that identify it, decoded without building the whole object.
struct ClaimsPayload: Decodable {
    struct Scope: Decodable {
        var environment: String?
        var bundleId: String?
        var appAppleId: Int64?
        /// An external purchase token names no environment: a sandbox token's id says `SANDBOX`.
        var externalPurchaseId: String?
    }
    var signedDate: Double?
    var environment: String?
    var bundleId: String?
    var appAppleId: Int64?
    /// A notification's app is in whichever of these it carries (exactly one).
    var data: Scope?
    var summary: Scope?
    var externalPurchaseToken: Scope?
    var appData: Scope?
    /// An AppTransaction's environment and signing instant.
    var receiptType: String?
    var receiptCreationDate: Double?
}

/// The identifying claims of a payload, wherever its kind keeps them.
struct Claims {
    /// When Apple signed it: the instant the chain must have been valid. Like Apple's libraries,
    /// "now" when the payload does not say (the chain is then checked as of today).
    var signedDate: Date
    var environment: AppleEnvironment?
    var bundleID: String?
    var appAppleID: Int64?

    /// 9999-12-31T23:59:59Z in milliseconds: the last instant an X.509 time can name.
    static let latestSigningDate: Double = 253_402_300_799_000

    init(_ payload: ClaimsPayload, tree: JSONTree, kind: Expectation.Kind) throws {
        var signed = payload.signedDate
        let scope: ClaimsPayload.Scope
        switch kind {
        case .notification:
            scope = try Self.notificationScope(payload, tree: tree)
        case .appTransaction:
            // An AppTransaction is "signed" when its receipt was created, and says its environment as receiptType.
            signed = payload.receiptCreationDate ?? payload.signedDate
            scope = .init(environment: payload.receiptType, bundleId: payload.bundleId, appAppleId: payload.appAppleId)
        case .transaction, .renewalInfo, .realtimeRequest:
            scope = .init(environment: payload.environment, bundleId: payload.bundleId, appAppleId: payload.appAppleId)
        }
        // The payload is not yet verified here, and its date decides which chain is checked: a
        // date no certificate can be valid at (not finite, or past year 9999, which X.509 times
        // cannot hold) is refused before it reaches the chain check, where it would trap.
        if let milliseconds = signed, !(milliseconds.isFinite && (0...Self.latestSigningDate).contains(milliseconds)) {
            throw LedgerError(.malformed, "signedDate is not a time in milliseconds since 1970 that a certificate could be valid at")
        }
        self.signedDate = signed.map { Date(timeIntervalSince1970: $0 / 1000) } ?? Date()
        self.environment = scope.environment.flatMap(AppleEnvironment.init(rawValue:))
        self.bundleID = scope.bundleId
        self.appAppleID = scope.appAppleId
    }

    /// A notification names its app in exactly one of `data`, `summary`, `externalPurchaseToken`
    /// and `appData`. A body with none of them is a shape Apple added since: its app is the one
    /// object member that names a `bundleId`, so next year's notifications are checked, not lost.
    static func notificationScope(_ payload: ClaimsPayload, tree: JSONTree) throws -> ClaimsPayload.Scope {
        let known =
            [payload.data, payload.summary, payload.appData].compactMap { $0 }
            + [payload.externalPurchaseToken.map(Self.tokenScope)].compactMap { $0 }
        if known.count > 1 {
            throw LedgerError(.malformed, "the notification carries more than one of data, summary, externalPurchaseToken and appData")
        }
        if let scope = known.first { return scope }
        guard case .object(let members) = tree else { return .init() }
        let scopes = members.compactMap { _, value -> ClaimsPayload.Scope? in
            guard case .object(let inner) = value, inner.contains(where: { $0.0 == "bundleId" }) else { return nil }
            return try? StorageDecoder.decode(ClaimsPayload.Scope.self, from: value)
        }
        if scopes.count > 1 { throw LedgerError(.malformed, "the notification names its app in more than one place") }
        return scopes.first ?? .init()
    }

    /// An external purchase token's environment, as Apple's libraries read it: its id starts with
    /// `SANDBOX` in the sandbox.
    static func tokenScope(_ token: ClaimsPayload.Scope) -> ClaimsPayload.Scope {
        var scope = token
        scope.environment =
            (token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false)
            ? AppleEnvironment.sandbox.rawValue : AppleEnvironment.production.rawValue
        return scope
    }

    /// App identity first, then environment, as Apple's libraries order them. Returns the environment.
    func check(against expectation: Expectation, kind: Expectation.Kind) throws -> AppleEnvironment {
        if kind != .realtimeRequest, kind != .renewalInfo || bundleID != nil {
            guard bundleID == expectation.bundleID else {
                throw LedgerError(.bundleMismatch, "signed for another app than \(expectation.bundleID)")
            }
        }
        guard let environment, expectation.environments.contains(environment) else {
            throw LedgerError(.environmentNotAllowed, "\(environment?.rawValue ?? "unnamed") environment is not accepted for this app")
        }
        if kind == .notification || kind == .appTransaction || kind == .realtimeRequest {
            if environment == .production, expectation.appAppleID == nil || appAppleID != expectation.appAppleID {
                throw LedgerError(
                    .appMismatch, "Production notifications, app transactions and realtime requests must carry this app's Apple app id")
            }
            if let expected = expectation.appAppleID, let actual = appAppleID, actual != expected {
                throw LedgerError(.appMismatch, "signed for Apple app id \(actual), not \(expected)")
            }
        }
        return environment
    }
}
