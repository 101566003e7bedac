import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Legacy app receipts as the App Store made them — a PKCS#7 SignedData around an ASN.1 payload,
/// signed with RSA by a chain shaped like Apple's (a root standing in for Apple Inc. Root, an
/// intermediate with the WWDR marker, a leaf with the receipt-signing marker) — so `ledger
/// backfill` reads receipts for real. Apple encodes the container as BER with indefinite
/// lengths; the DER form, a chunked content and CMS signed attributes are there to test the
/// other shapes a reader must take. Never trusted in production.
package struct ReceiptAuthority: Sendable {
    package let root: Certificate
    package let intermediate: Certificate
    package let leaf: Certificate
    let leafKey: _RSA.Signing.PrivateKey

    /// One per process: RSA keys take a while to make, and every test may sign receipts.
    package static let shared: ReceiptAuthority = try! ReceiptAuthority()

    /// Valid `yearsBack` before `now` to `years` after it; the leaf only within `leafValidity`
    /// when given (Apple's receipt leaves expire, receipts made while they were valid stay good).
    package init(now: Date = Date(), yearsBack: Int = 10, years: Int = 10, leafValidity: ClosedRange<Date>? = nil) throws {
        let notBefore = now.addingTimeInterval(-Double(yearsBack) * 365 * 86_400)
        let notAfter = now.addingTimeInterval(Double(years) * 365 * 86_400)
        leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        (root, intermediate, leaf) = try TestCertificateAuthority.chain(
            names: ("Ledger Simulator Receipt Root", "Ledger Simulator Receipt WWDR", "Ledger Simulator Receipt Signing"),
            keys: (
                .init(try _RSA.Signing.PrivateKey(keySize: .bits2048)), .init(try _RSA.Signing.PrivateKey(keySize: .bits2048)),
                .init(leafKey)
            ),
            algorithm: .sha256WithRSAEncryption, validity: notBefore...notAfter, leafValidity: leafValidity)
    }

    /// The shapes a container can take.
    package struct Shape: Sendable {
        /// Indefinite lengths around the container, as Apple's receipts (else DER throughout).
        package var indefiniteLengths = true
        /// The payload as a constructed OCTET STRING of 1 KiB chunks (BER allows it).
        package var chunkedContent = false
        /// CMS signed attributes (content type and message digest), which Apple does not use.
        package var signedAttributes = false
        package init(indefiniteLengths: Bool = true, chunkedContent: Bool = false, signedAttributes: Bool = false) {
            self.indefiniteLengths = indefiniteLengths
            self.chunkedContent = chunkedContent
            self.signedAttributes = signedAttributes
        }
        package static let apple = Shape()
    }

    package var rootDER: Data { TestCertificateAuthority.der(root) }

    /// A receipt of `bundleID` holding `purchases` (its in-app entries), made at `created`, base64
    /// as an app sends it.
    package func receipt(
        bundleID: String, appVersion: String = "1.0", purchases: [SimulatedTransaction], created: Date = Date(),
        shape: Shape = .apple
    ) throws -> String {
        let payload = ReceiptPayload.encode(bundleID: bundleID, appVersion: appVersion, purchases: purchases, created: created)
        return Data(try container(payload, shape: shape)).base64EncodedString()
    }

    /// PKCS#7 SignedData of `payload` (RFC 5652 §5), one signer named by issuer and serial number.
    func container(_ payload: [UInt8], shape: Shape) throws -> [UInt8] {
        let sha256: [UInt8] = BER.sequence([BER.oid([2, 16, 840, 1, 101, 3, 4, 2, 1]), BER.null])
        let data: [UInt8] = BER.oid([1, 2, 840, 113549, 1, 7, 1])
        var signed = payload
        var attributes: [UInt8] = []
        if shape.signedAttributes {
            let set = BER.tlv(
                0x31,
                BER.sequence([BER.oid([1, 2, 840, 113549, 1, 9, 3]), BER.tlv(0x31, data)])
                    + BER.sequence([
                        BER.oid([1, 2, 840, 113549, 1, 9, 4]), BER.tlv(0x31, BER.tlv(0x04, Array(SHA256.hash(data: payload)))),
                    ]))
            signed = set
            attributes = [0xA0] + set.dropFirst() // the same SET, tagged [0] IMPLICIT
        }
        let signature = try leafKey.signature(for: SHA256.hash(data: signed), padding: .insecurePKCS1v1_5).rawRepresentation
        var issuer = DER.Serializer()
        try issuer.serialize(leaf.issuer)
        let signerInfo = BER.sequence([
            BER.integer(1),
            BER.sequence([issuer.serializedBytes, BER.tlv(0x02, Array(leaf.serialNumber.bytes))]),
            sha256, attributes,
            BER.sequence([BER.oid([1, 2, 840, 113549, 1, 1, 1]), BER.null]),
            BER.tlv(0x04, Array(signature)),
        ])
        let indefinite = shape.indefiniteLengths
        func wrap(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { indefinite ? BER.indefinite(tag, content) : BER.tlv(tag, content) }
        var content = BER.tlv(0x04, payload)
        if shape.chunkedContent {
            var chunks: [UInt8] = []
            for start in stride(from: 0, to: payload.count, by: 1024) {
                chunks += BER.tlv(0x04, Array(payload[start..<min(start + 1024, payload.count)]))
            }
            content = wrap(0x24, chunks)
        }
        var certificates: [UInt8] = []
        for certificate in [leaf, intermediate, root] { certificates += TestCertificateAuthority.der(certificate) }
        var signedData = BER.integer(1) + BER.tlv(0x31, sha256)
        signedData += wrap(0x30, data + wrap(0xA0, content))
        signedData += wrap(0xA0, certificates)
        signedData += BER.tlv(0x31, signerInfo)
        return wrap(0x30, BER.oid([1, 2, 840, 113549, 1, 7, 2]) + wrap(0xA0, wrap(0x30, signedData)))
    }
}

/// The receipt payload: a SET of (type, version, value) attributes, values themselves DER, with
/// Apple's attribute numbers; one type 17 attribute per in-app purchase.
enum ReceiptPayload {
    static func encode(bundleID: String, appVersion: String, purchases: [SimulatedTransaction], created: Date) -> [UInt8] {
        var attributes = [
            attribute(0, BER.utf8("ProductionSandbox")), attribute(2, BER.utf8(bundleID)), attribute(3, BER.utf8(appVersion)),
            attribute(12, BER.ia5(date(created))), attribute(19, BER.utf8("1.0")),
        ]
        for purchase in purchases {
            var fields = [
                attribute(1701, BER.integer(Int64(purchase.quantity))), attribute(1702, BER.utf8(purchase.productID)),
                attribute(1703, BER.utf8(purchase.transactionID)), attribute(1705, BER.utf8(purchase.originalTransactionID)),
                attribute(1704, BER.ia5(date(purchase.purchaseDate))),
                attribute(1706, BER.ia5(date(purchase.originalPurchaseDate ?? purchase.purchaseDate))),
                attribute(1708, BER.ia5(purchase.expiresDate.map(date) ?? "")),
            ]
            if let revoked = purchase.revocationDate { fields.append(attribute(1712, BER.ia5(date(revoked)))) }
            attributes.append(attribute(17, BER.tlv(0x31, fields.flatMap { $0 })))
        }
        return BER.tlv(0x31, attributes.flatMap { $0 })
    }

    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        BER.sequence([BER.integer(type), BER.integer(1), BER.tlv(0x04, value)])
    }

    static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

/// Just enough of an ASN.1 writer for receipts: definite (DER) and indefinite (BER) lengths.
enum BER {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            while count > 0 { length.insert(UInt8(count & 0xFF), at: 0); count >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }

    /// A constructed value of unknown length, ended by two zero bytes.
    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag | 0x20, 0x80] + content + [0, 0] }

    static func sequence(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static let null: [UInt8] = [0x05, 0x00]
    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }

    static func integer(_ value: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat { bytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 } while rest > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    static func oid(_ arcs: [UInt]) -> [UInt8] {
        var bytes = [UInt8(arcs[0] * 40 + arcs[1])]
        for arc in arcs.dropFirst(2) {
            var chunk = [UInt8(arc & 0x7F)]
            var rest = arc >> 7
            while rest > 0 { chunk.insert(UInt8(rest & 0x7F) | 0x80, at: 0); rest >>= 7 }
            bytes += chunk
        }
        return tlv(0x06, bytes)
    }
}
