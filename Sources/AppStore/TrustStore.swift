import Crypto
import Foundation
import SwiftASN1
import X509

/// The roots Apple's signed data must chain to, from configuration only.
///
/// Like Apple's own server libraries, the repository ships no Apple root: operators download it
/// from Apple (see docs/apple-roots.md) and point `LEDGER_APPLE_ROOT_CERTIFICATES` at it, so an
/// added or rotated root needs no release. Each root is recognised by its SHA-256 fingerprint, so
/// the server can say at start-up which roots are Apple's — a test root in production is a mistake
/// worth a warning.
package struct TrustStore: Sendable {
    /// Apple Root CA - G3, the root of every App Store JWS.
    package static let appleRootCAG3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
    /// Apple Inc. Root, the root of legacy PKCS#7 app receipts (read locally by `ledger backfill`).
    package static let appleIncRootFingerprint = "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"

    package struct Root: Sendable {
        package var path: String
        package var certificate: Certificate
        /// SHA-256 of the DER, lower-case hex.
        package var fingerprint: String
        package var isAppleRootCAG3: Bool { fingerprint == TrustStore.appleRootCAG3Fingerprint }
        package var isAppleIncRoot: Bool { fingerprint == TrustStore.appleIncRootFingerprint }
        /// One of Apple's roots (either), as opposed to a test or simulator root.
        package var isApples: Bool { isAppleRootCAG3 || isAppleIncRoot }
    }

    package var roots: [Root]

    package init(roots: [Root]) { self.roots = roots }

    package enum LoadError: Error, CustomStringConvertible {
        case notConfigured
        case unreadable(path: String)
        case notACertificate(path: String)
        package var description: String {
            switch self {
            case .notConfigured:
                "LEDGER_APPLE_ROOT_CERTIFICATES is not set: download Apple Root CA - G3 (docs/apple-roots.md) and list its path"
            case .unreadable(let path): "cannot read root certificate \(path)"
            case .notACertificate(let path): "\(path) is not a DER or PEM certificate"
            }
        }
    }

    /// Loads a comma-separated list of DER or PEM files.
    package static func load(paths list: String) throws -> TrustStore {
        let paths = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !paths.isEmpty else { throw LoadError.notConfigured }
        return TrustStore(
            roots: try paths.map { path in
                guard let data = FileManager.default.contents(atPath: path) else { throw LoadError.unreadable(path: path) }
                let der: [UInt8]
                if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                    guard let certificate = try? Certificate(pemEncoded: text) else { throw LoadError.notACertificate(path: path) }
                    var serializer = DER.Serializer()
                    try serializer.serialize(certificate)
                    der = serializer.serializedBytes
                } else {
                    der = Array(data)
                }
                guard let certificate = try? Certificate(derEncoded: der) else { throw LoadError.notACertificate(path: path) }
                return Root(
                    path: path, certificate: certificate, fingerprint: SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined())
            })
    }

    /// Lines for the start-up log: which configured roots are Apple's.
    package var summary: [String] {
        roots.map { root in
            root.isAppleRootCAG3
                ? "trusting Apple Root CA - G3 (\(root.path))"
                : root.isAppleIncRoot
                    ? "trusting Apple Inc. Root for legacy receipts (\(root.path))"
                    : "trusting a root that is NOT Apple's (\(root.path), sha256 \(root.fingerprint)): only for tests and the local simulator"
        }
    }

    package var hasNonAppleRoot: Bool { roots.contains { !$0.isApples } }

    package func verifier() -> SignedDataVerifier { SignedDataVerifier(roots: roots.map(\.certificate)) }
}
