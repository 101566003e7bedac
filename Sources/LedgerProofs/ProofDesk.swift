import Foundation
import LedgerCore
import LedgerPostgres

/// What the API answers about the log's integrity: signed digests of the tree as it stands, the
/// key set they verify with, and proofs against any size the tree has had.
package struct ProofDesk: Sendable {
    package let tree: ProofTree
    /// Nil when the server has no `LEDGER_DIGEST_KEY_FILE`: proofs are answered, digests are not.
    package let key: DigestKey?

    package init(tree: ProofTree, key: DigestKey?) {
        self.tree = tree
        self.key = key
    }

    /// The tree's size and root now, signed.
    package func digest(at now: Date = Date()) async throws -> Digest {
        guard let key else {
            throw LedgerError(
                .digestKeyNotConfigured,
                "this server signs no digests: set LEDGER_DIGEST_KEY_FILE to a key made by `ledger digest-key generate`")
        }
        let head = try await tree.head()
        return try key.sign(treeSize: head.size, root: head.root, at: now)
    }

    /// `{"keys": […]}`: the digest key's public half, or none.
    package var keySet: String { DigestPublicKey.keySet(key.map { [$0.publicKey] } ?? []) }

    /// Lower-case hex, as proofs spell hashes.
    package static func hex(_ hash: [UInt8]) -> String { Hex.encode(hash) }
}
