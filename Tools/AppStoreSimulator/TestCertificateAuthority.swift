import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate chain shaped like Apple's App Store signing chain — a self-signed root, an
/// intermediate carrying the WWDR marker extension, a leaf carrying the receipt-signing marker —
/// generated fresh, so tests and demos sign StoreKit 2 evidence the ledger verifies for real.
/// Point the ledger at `rootDER` (LEDGER_APPLE_ROOT_CERTIFICATES); never use it in production.
package struct TestCertificateAuthority: Sendable {
    package let root: Certificate
    package let intermediate: Certificate
    package let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey
    /// The ES256 header with its x5c, made once: three certificates in base64 per signature were
    /// the simulator's largest cost in the backfill benchmark (Apple signs on its own machines,
    /// the simulator on the ledger's cores).
    private var es256Header = ""

    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// Valid from `yearsBack` before `now` (so evidence signed in the past verifies) to `years`
    /// after it; markers can be left out to test their absence.
    package init(now: Date = Date(), yearsBack: Int = 5, years: Int = 10, intermediateMarker: Bool = true, leafMarker: Bool = true) throws {
        let notBefore = now.addingTimeInterval(-Double(yearsBack) * 365 * 86_400)
        let notAfter = now.addingTimeInterval(Double(years) * 365 * 86_400)
        leafKey = P256.Signing.PrivateKey()
        (root, intermediate, leaf) = try Self.chain(
            names: ("Ledger Simulator Root CA", "Ledger Simulator WWDR", "Ledger Simulator StoreKit Signing"),
            keys: (.init(P256.Signing.PrivateKey()), .init(P256.Signing.PrivateKey()), .init(leafKey)), algorithm: .ecdsaWithSHA256,
            validity: notBefore...notAfter, intermediateMarker: intermediateMarker, leafMarker: leafMarker)
        es256Header = try header(alg: "ES256")
    }

    private init(root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
        self.es256Header = (try? header(alg: "ES256")) ?? ""
    }

    /// Loads the chain saved by `save(to:)` from `folder`, or makes one and saves it there, so a
    /// simulator restarted against the same ledger keeps signing with the root it trusts.
    package static func persistent(in folder: URL) throws -> TestCertificateAuthority {
        let names = ["root.pem", "intermediate.pem", "leaf.pem", "leaf-key.pem"].map { folder.appendingPathComponent($0) }
        if names.allSatisfy({ FileManager.default.fileExists(atPath: $0.path) }) {
            let texts = try names.map { try String(contentsOf: $0, encoding: .utf8) }
            return TestCertificateAuthority(
                root: try Certificate(pemEncoded: texts[0]), intermediate: try Certificate(pemEncoded: texts[1]),
                leaf: try Certificate(pemEncoded: texts[2]), leafKey: try P256.Signing.PrivateKey(pemRepresentation: texts[3]))
        }
        let authority = try TestCertificateAuthority()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (certificate, url) in zip([authority.root, authority.intermediate, authority.leaf], names) {
            try certificate.serializeAsPEM().pemString.write(to: url, atomically: true, encoding: .utf8)
        }
        try authority.leafKey.pemRepresentation.write(to: names[3], atomically: true, encoding: .utf8)
        try authority.writeRoot(to: folder.appendingPathComponent("root.der").path)
        return authority
    }

    /// Root → intermediate → leaf shaped like Apple's chains: the intermediate carries the WWDR
    /// marker, the leaf the receipt-signing marker (either can be left out to test its absence).
    /// Shared by the StoreKit 2 chain (P-256) and the legacy receipt chain (RSA).
    static func chain(
        names: (root: String, intermediate: String, leaf: String),
        keys: (root: Certificate.PrivateKey, intermediate: Certificate.PrivateKey, leaf: Certificate.PrivateKey),
        algorithm: Certificate.SignatureAlgorithm, validity: ClosedRange<Date>, leafValidity: ClosedRange<Date>? = nil,
        intermediateMarker: Bool = true, leafMarker: Bool = true
    ) throws -> (Certificate, Certificate, Certificate) {
        let rootName = try DistinguishedName {
            CommonName(names.root); OrganizationName("App Store Simulator")
        }
        let intermediateName = try DistinguishedName {
            CommonName(names.intermediate); OrganizationName("App Store Simulator")
        }
        let leafName = try DistinguishedName {
            CommonName(names.leaf); OrganizationName("App Store Simulator")
        }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.root.publicKey,
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: rootName, subject: rootName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: keys.root)
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.intermediate.publicKey,
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: rootName, subject: intermediateName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if intermediateMarker { Self.marker(Self.intermediateMarker) }
            },
            issuerPrivateKey: keys.root)
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: keys.leaf.publicKey,
            notValidBefore: (leafValidity ?? validity).lowerBound, notValidAfter: (leafValidity ?? validity).upperBound,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: algorithm,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if leafMarker { Self.marker(Self.leafMarker) }
            },
            issuerPrivateKey: keys.intermediate)
        return (root, intermediate, leaf)
    }

    /// Apple's marker extensions hold an ASN.1 NULL.
    static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }

    package var rootDER: Data { Self.der(root) }

    /// Writes the root as DER to `path`, where LEDGER_APPLE_ROOT_CERTIFICATES can name it.
    package func writeRoot(to path: String) throws {
        try rootDER.write(to: URL(fileURLWithPath: path))
    }

    static func der(_ certificate: Certificate) -> Data {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }

    /// Signs `payload` as a compact JWS with Apple's header: ES256 and x5c [leaf, intermediate, root].
    package func sign(_ payload: [String: Any], alg: String = "ES256") throws -> String {
        let input =
            (alg == "ES256" && !es256Header.isEmpty ? es256Header : try header(alg: alg)) + "."
            + Self.base64URL(try JSONSerialization.data(withJSONObject: payload))
        let signature = try leafKey.signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// The JWS header segment: `alg` and the chain, leaf first.
    private func header(alg: String) throws -> String {
        let header: [String: Any] = ["alg": alg, "x5c": [leaf, intermediate, root].map { Self.der($0).base64EncodedString() }]
        return Self.base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys))
    }

    /// base64url without padding, mapped on the bytes (`replacingOccurrences` went through
    /// Foundation's string search three times per segment).
    static func base64URL(_ data: Data) -> String {
        let base64 = data.base64EncodedData()
        var bytes = [UInt8]()
        bytes.reserveCapacity(base64.count)
        for byte in base64 {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): break
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
