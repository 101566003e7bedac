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

    /// 32 bytes from the system's generator, one salt per leaf.
    package static func salt() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
