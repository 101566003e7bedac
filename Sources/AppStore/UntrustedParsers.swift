import Foundation
import LedgerCore
import LedgerFormats

/// The parsers that read bytes an attacker may choose, each reachable on its own: behind a
/// signature check, a parser is reached only with bytes someone signed, so the fuzzers
/// (`Tools/Fuzz`) and their regression tests drive these directly to reach every branch.
package enum UntrustedParsers {
    /// A legacy app receipt's bytes: the PKCS#7 container (BER, indefinite lengths), then its
    /// content as Apple's receipt payload with its in-app purchases.
    package static func receipt(_ bytes: [UInt8]) throws {
        let container = try PKCS7SignedData(ber: bytes)
        _ = try? container.signer.signedBytes(content: container.content)
        _ = try AppReceipt(payload: container.content)
    }

    /// A receipt payload on its own (the SET of attributes inside the container).
    package static func receiptPayload(_ bytes: [UInt8]) throws {
        _ = try AppReceipt(payload: bytes)
    }

    /// A signed payload's JSON, as the decoders read it once its signature is checked.
    package static func signedPayload(_ data: Data) throws {
        let tree = try JSONTree.parse(data)
        _ = try? DecodedTransaction(tree, environment: .sandbox, signedDate: Date(timeIntervalSince1970: 0))
        _ = try? DecodedRenewal(tree, environment: .sandbox, signedDate: Date(timeIntervalSince1970: 0))
        _ = try? DecodedAppTransaction(tree, environment: .sandbox, signedDate: Date(timeIntervalSince1970: 0))
    }
}
