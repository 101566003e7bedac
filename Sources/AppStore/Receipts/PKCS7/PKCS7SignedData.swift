import Crypto
import LedgerCore
import SwiftASN1
import X509

/// A PKCS#7 (CMS) SignedData with its content attached: the container of a legacy app receipt.
/// Parsed, not trusted: `AppReceiptVerification` checks the signer and its chain.
///
/// Apple's receipts are BER with indefinite lengths, carry the signing chain in `certificates`
/// and one signer whose signature covers the content directly (no signed attributes); CMS
/// producers that add signed attributes are read too (RFC 5652 §5.4: the signature then covers
/// the attributes, and the attributes' message digest covers the content).
struct PKCS7SignedData {
    static let signedDataType: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataType: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]

    /// The signed bytes: the receipt payload.
    var content: [UInt8]
    var certificates: [Certificate]
    var signer: Signer

    struct Signer {
        var issuer: DistinguishedName
        var serialNumber: Certificate.SerialNumber
        var algorithm: Certificate.SignatureAlgorithm
        var signature: [UInt8]
        /// DER of the signed attributes re-tagged as a SET, when present: what the signature covers.
        var signedAttributes: [UInt8]?
        var messageDigest: [UInt8]?
    }

    typealias Malformed = BERReading.Malformed

    init(ber bytes: [UInt8]) throws {
        let root: ASN1Node
        do { root = try BER.parse(bytes) } catch { throw Malformed("not ASN.1 (BER)") }
        let contentInfo = try BERReading.children(root, "ContentInfo")
        guard contentInfo.count == 2, try BERReading.objectIdentifier(contentInfo[0], "contentType") == Self.signedDataType,
            contentInfo[1].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        else {
            throw Malformed("not a PKCS#7 SignedData")
        }
        let signedData = try BERReading.children(try BERReading.explicit(contentInfo[1], "content"), "SignedData")
        guard signedData.count >= 4 else { throw Malformed("SignedData is incomplete") }
        // version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos
        let encapsulated = try BERReading.children(signedData[2], "encapContentInfo")
        guard encapsulated.count == 2, try BERReading.objectIdentifier(encapsulated[0], "eContentType") == Self.dataType else {
            throw Malformed("the signed content is missing or not data")
        }
        content = try BERReading.octets(try BERReading.explicit(encapsulated[1], "eContent"), "eContent")
        certificates = try signedData.dropFirst(3).filter { $0.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) }
            .flatMap { try BERReading.children($0, "certificates") }
            .map { node in
                do { return try Certificate(derEncoded: Array(node.encodedBytes)) } catch {
                    throw Malformed("a certificate is not valid DER")
                }
            }
        guard let signerInfos = signedData.last, signerInfos.identifier == .set else { throw Malformed("no signerInfos") }
        let signers = try BERReading.children(signerInfos, "signerInfos")
        guard signers.count == 1 else { throw Malformed("\(signers.count) signers, not one") }
        signer = try Signer(signers[0])
    }
}

extension PKCS7SignedData.Signer {
    typealias Malformed = BERReading.Malformed

    init(_ node: ASN1Node) throws {
        // version, sid, digestAlgorithm, [0] signedAttrs?, signatureAlgorithm, signature, [1] unsignedAttrs?
        var fields = try BERReading.children(node, "SignerInfo")[...]
        guard fields.count >= 5 else { throw Malformed("SignerInfo is incomplete") }
        fields.removeFirst()
        let sid = try BERReading.children(fields.removeFirst(), "issuerAndSerialNumber")
        guard sid.count == 2, case .primitive(let serial) = sid[1].content else {
            throw Malformed("the signer is not named by issuer and serial number")
        }
        do { issuer = try DistinguishedName(derEncoded: sid[0]) } catch { throw Malformed("the signer's issuer is not a name") }
        serialNumber = Certificate.SerialNumber(bytes: serial)
        let digest = try Self.algorithm(fields.removeFirst(), "digestAlgorithm")
        let attributesTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        if fields.first?.identifier == attributesTag {
            let attributes = fields.removeFirst()
            signedAttributes = [0x31] + attributes.encodedBytes.dropFirst() // [0] IMPLICIT → SET
            messageDigest = try Self.messageDigest(in: attributes)
        }
        guard fields.count >= 2 else { throw Malformed("SignerInfo is incomplete") }
        algorithm = try Self.signatureAlgorithm(digest: digest, signature: try Self.algorithm(fields.removeFirst(), "signatureAlgorithm"))
        signature = try BERReading.octets(fields.removeFirst(), "signature")
    }

    private static func algorithm(_ node: ASN1Node, _ what: String) throws -> ASN1ObjectIdentifier {
        guard let first = try BERReading.children(node, what).first else { throw Malformed("\(what) is empty") }
        return try BERReading.objectIdentifier(first, what)
    }

    private static func messageDigest(in attributes: ASN1Node) throws -> [UInt8] {
        for attribute in try BERReading.children(attributes, "signedAttrs") {
            let parts = try BERReading.children(attribute, "attribute")
            guard parts.count == 2, try BERReading.objectIdentifier(parts[0], "attrType") == PKCS7SignedData.messageDigestAttribute else {
                continue
            }
            return try BERReading.octets(try BERReading.explicit(parts[1], "messageDigest"), "messageDigest")
        }
        throw Malformed("signed attributes without a message digest")
    }

    /// The digest algorithm and the signature algorithm as one X.509 algorithm: `rsaEncryption`
    /// takes its hash from the digest algorithm; the combined identifiers name their own.
    static func signatureAlgorithm(digest: ASN1ObjectIdentifier, signature: ASN1ObjectIdentifier) throws -> Certificate.SignatureAlgorithm {
        if signature == rsaEncryption, let algorithm = digests[digest] { return algorithm }
        if let algorithm = combined[signature] { return algorithm }
        throw LedgerError(.unsupportedAlgorithm, "the receipt is signed with \(signature) over \(digest), which the ledger does not verify")
    }

    private static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    /// Digest algorithm → RSA signature with it (for `rsaEncryption`).
    private static let digests: [ASN1ObjectIdentifier: Certificate.SignatureAlgorithm] = [
        [1, 3, 14, 3, 2, 26]: .sha1WithRSAEncryption, [2, 16, 840, 1, 101, 3, 4, 2, 1]: .sha256WithRSAEncryption,
        [2, 16, 840, 1, 101, 3, 4, 2, 2]: .sha384WithRSAEncryption, [2, 16, 840, 1, 101, 3, 4, 2, 3]: .sha512WithRSAEncryption,
    ]
    /// Signature algorithms that name their hash.
    private static let combined: [ASN1ObjectIdentifier: Certificate.SignatureAlgorithm] = [
        [1, 2, 840, 113549, 1, 1, 5]: .sha1WithRSAEncryption, [1, 2, 840, 113549, 1, 1, 11]: .sha256WithRSAEncryption,
        [1, 2, 840, 113549, 1, 1, 12]: .sha384WithRSAEncryption, [1, 2, 840, 113549, 1, 1, 13]: .sha512WithRSAEncryption,
        [1, 2, 840, 10045, 4, 3, 2]: .ecdsaWithSHA256, [1, 2, 840, 10045, 4, 3, 3]: .ecdsaWithSHA384,
    ]

    /// The bytes the signature covers, after checking the attributes' digest of `content`.
    func signedBytes(content: [UInt8]) throws -> [UInt8] {
        guard let signedAttributes else { return content }
        let digest: [UInt8] =
            switch algorithm {
            case .sha1WithRSAEncryption: Array(Insecure.SHA1.hash(data: content))
            case .sha384WithRSAEncryption, .ecdsaWithSHA384: Array(SHA384.hash(data: content))
            case .sha512WithRSAEncryption: Array(SHA512.hash(data: content))
            default: Array(SHA256.hash(data: content))
            }
        guard digest == messageDigest else {
            throw LedgerError(.invalidSignature, "the receipt's content does not match its signed digest")
        }
        return signedAttributes
    }
}
