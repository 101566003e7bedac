import Foundation
import LedgerCore
@_spi(FixedExpiryValidationTime) import X509

extension SignedDataVerifier {
    /// A base64 receipt larger than this is refused before decoding (Apple's receipts of the
    /// busiest subscribers are a few hundred kilobytes).
    package static let maximumReceiptSize = 4 * 1024 * 1024

    /// Reads a legacy app receipt locally, as Apple's migration guide says to instead of
    /// `verifyReceipt`: the PKCS#7 container parsed (indefinite-length BER too), the signer's
    /// signature checked over the payload, its chain — leaf with the receipt-signing marker,
    /// intermediate with the WWDR marker — to a configured root (Apple Inc. Root for Apple's
    /// receipts) as of the receipt's creation date (the chain's certificates have since expired;
    /// what matters is that they were valid when the receipt was made), and the receipt's bundle
    /// id that of the app. The ids it returns are leads to ask Apple about, not facts to record.
    package func verifyAppReceipt(_ base64: String, expecting expectation: Expectation) async throws -> AppReceipt {
        guard base64.utf8.count <= Self.maximumReceiptSize,
            let bytes = Data(base64Encoded: base64, options: .ignoreUnknownCharacters), !bytes.isEmpty
        else {
            throw LedgerError(.malformed, "the receipt is not base64, or is larger than \(Self.maximumReceiptSize) bytes")
        }
        let container: PKCS7SignedData
        do { container = try PKCS7SignedData(ber: Array(bytes)) } catch let error as BERReading.Malformed {
            throw LedgerError(.malformed, "the receipt is not a PKCS#7 container: \(error)")
        }
        guard
            let leaf = container.certificates.first(where: {
                $0.serialNumber == container.signer.serialNumber && $0.issuer == container.signer.issuer
            })
        else {
            throw LedgerError(.missingCertificateChain, "the receipt does not carry its signer's certificate")
        }
        guard
            leaf.publicKey.isValidSignature(
                container.signer.signature, for: try container.signer.signedBytes(content: container.content),
                signatureAlgorithm: container.signer.algorithm)
        else {
            throw LedgerError(.invalidSignature, "the receipt's signature does not match its content")
        }
        let receipt: AppReceipt
        do { receipt = try AppReceipt(payload: container.content) } catch let error as BERReading.Malformed {
            throw LedgerError(.malformed, "the receipt's payload cannot be read: \(error)")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: receipt.creationDate)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(container.certificates.filter { $0 != leaf }))
        guard case .validCertificate(let chain) = result, chain.count == 3 else {
            throw LedgerError(
                .untrustedChain, "the receipt's chain does not lead to a configured root, or was not valid when the receipt was made")
        }
        guard leaf.extensions[oid: Self.leafMarker] != nil, chain[1].extensions[oid: Self.intermediateMarker] != nil else {
            throw LedgerError(.untrustedChain, "the receipt's certificates lack Apple's receipt-signing marker extensions")
        }
        guard receipt.bundleID == expectation.bundleID else {
            throw LedgerError(.bundleMismatch, "the receipt is for another app than \(expectation.bundleID)")
        }
        return receipt
    }
}
