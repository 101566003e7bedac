import Crypto
import Foundation
import LedgerPostgres

/// Event ids derived from what the event says, so that the same evidence arriving twice (Apple's
/// retries, an app posting again, a client retrying after a timeout) appends nothing new.
enum StableID {
    static func make(_ parts: String...) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(parts.joined(separator: "\u{1F}").utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5 (name-based, SHA)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}

/// `sha256:<hex>` of raw evidence: its address in `ledger.evidence`.
enum EvidenceDigest {
    static func of(_ body: Data) -> String {
        "sha256:" + Hex.encode(SHA256.hash(data: body))  // String(format:) per byte showed in an ingestion profile
    }
}
