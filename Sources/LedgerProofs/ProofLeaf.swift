import Crypto
import Foundation

/// What a leaf of the proof tree holds: the event's position and a keyed commitment to its chain
/// content. Keyed, so a leaf whose salt an erasure forgot says nothing about what was erased —
/// a plain hash of the content would confirm a guessed user id — while a leaf with its salt lets
/// anyone recompute it from the event as stored and see whether the event changed.
///
///     commitment = HMAC-SHA-256(key: salt[32], content)      content: EventHash's bytes after prev_hash
///     leaf hash  = SHA-256(0x00 ‖ i64 position (big-endian) ‖ commitment[32])
package enum ProofLeaf {
    package static func commitment(salt: [UInt8], content: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: salt)))
    }

    package static func hash(position: Int64, commitment: [UInt8]) -> [UInt8] {
        var data: [UInt8] = []
        withUnsafeBytes(of: position.bigEndian) { data += $0 }
        return MerkleTree.leafHash(data + commitment)
    }

    /// 32 random bytes, one salt per leaf, from BoringSSL's generator (seeded by the system):
    /// asked of the system byte by byte, the salts of a busy second cost 32 system calls a leaf.
    package static func salt() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }
}
