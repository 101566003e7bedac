import Crypto
import Foundation
import LedgerPostgres

/// `sha256:<hex>` of raw evidence: its address in `ledger.evidence`.
enum EvidenceDigest {
    static func of(_ body: Data) -> String {
        "sha256:" + Hex.encode(SHA256.hash(data: body)) // String(format:) per byte showed in an ingestion profile
    }
}
