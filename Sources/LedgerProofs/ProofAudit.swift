import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres

/// `ledger audit --digest old.json`: whether today's log extends a digest signed before, checked
/// from the events themselves rather than from the tree's stored nodes. Every leaf is recomputed
/// from its event as stored (with its salt), the root over the digest's first leaves compared
/// with the digest's root, the root over all of them with the stored tree's; the first event that
/// does not match its leaf is named. A superuser who rewrote an event and its stream's chain
/// passes `ledger verify` and fails here; one who also rewrote the leaves and nodes changes the
/// root, and the digest kept outside the database says so.
package struct ProofAudit: Sendable {
    let pool: PostgresPool
    let pageSize: Int

    package init(pool: PostgresPool, pageSize: Int = 5_000) {
        self.pool = pool
        self.pageSize = pageSize
    }

    package struct Report: Sendable {
        package var digestSize: Int64
        package var treeSize: Int64
        package var leavesChecked: Int64 = 0
        /// Leaves whose salt an erasure forgot: taken as stored, their events' streams re-chained by a recorded erasure.
        package var leavesErased: Int64 = 0
        /// The first event that does not match its leaf, or a leaf with no event.
        package var firstBroken: String?
        /// Whether the first `digestSize` leaves, recomputed, have the digest's root.
        package var extendsDigest = false
        /// Whether all the leaves, recomputed, have the stored tree's root.
        package var matchesStoredTree = false

        package var passed: Bool { firstBroken == nil && extendsDigest && matchesStoredTree }
    }

    /// Checks the log against `digest`, signed by one of `keys`.
    package func audit(_ digest: Digest, keys: [DigestPublicKey]) async throws -> Report {
        try DigestPublicKey.verify(digest, with: keys)
        guard let digestRoot = Hex.decode(digest.rootHash), digestRoot.count == 32 else {
            throw LedgerError(.malformed, "the digest's root_hash is not 64 hex digits")
        }
        let pageSize = self.pageSize
        // One snapshot for the whole read, so a tree extended meanwhile is not half seen.
        return try await pool.withTransaction { connection in
            _ = try connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return try Self.audit(digest, root: digestRoot, pageSize: pageSize, on: connection)
        }
    }

    private static func audit(_ digest: Digest, root digestRoot: [UInt8], pageSize: Int, on connection: PostgresConnection) throws -> Report
    {
        let size = try ProofTree.size(on: connection)
        var report = Report(digestSize: digest.treeSize, treeSize: size)
        guard digest.treeSize <= size else {
            report.firstBroken = "the tree has \(size) leaves, fewer than the digest's \(digest.treeSize): leaves were removed"
            return report
        }
        let erasedStreams = try Self.erasedStreams(on: connection)
        var appender = try MerkleAppender(size: 0, edge: [:])
        if digest.treeSize == 0 { report.extendsDigest = digestRoot == MerkleTree.emptyRoot }
        var next: Int64 = 0
        while next < size {
            let leaves = try connection.query(
                "SELECT leaf_index, position, salt, commitment FROM ledger.proof_leaves WHERE leaf_index >= $1 ORDER BY leaf_index LIMIT $2",
                [next, pageSize])
            guard !leaves.isEmpty else { break }
            let events = try LogContent.at(try leaves.map { try $0["position"].int64() }, on: connection)
            for leaf in leaves {
                let index = try leaf["leaf_index"].int64()
                let position = try leaf["position"].int64()
                guard index == appender.size else {
                    report.firstBroken = report.firstBroken ?? "leaf \(appender.size) is missing"
                    return report
                }
                var commitment = try leaf["commitment"].bytes()
                if let event = events[position] {
                    if leaf["salt"].isNull {
                        if erasedStreams.contains(event.fields.stream) {
                            report.leavesErased += 1
                        } else if report.firstBroken == nil {
                            report.firstBroken =
                                "\(Self.name(event)) has lost its leaf's salt, and no recorded erasure re-chained \(event.fields.stream)"
                        }
                    } else {
                        let recomputed = ProofLeaf.commitment(salt: try leaf["salt"].bytes(), content: EventHash.content(event.fields))
                        if recomputed != commitment, report.firstBroken == nil {
                            report.firstBroken =
                                "\(Self.name(event)) does not match leaf \(index): it changed after the tree committed to it"
                        }
                        commitment = recomputed
                    }
                } else if report.firstBroken == nil {
                    report.firstBroken = "leaf \(index) commits to position \(position), which holds no event any more"
                }
                _ = appender.append(leafHash: ProofLeaf.hash(position: position, commitment: commitment))
                report.leavesChecked += 1
                if appender.size == digest.treeSize { report.extendsDigest = appender.root == digestRoot }
            }
            next = appender.size
        }
        let storedRoot = try ProofTree.root(size: size, on: connection)
        report.matchesStoredTree = appender.size == size && appender.root == storedRoot
        return report
    }

    /// "position 12 (stream user:…, version 3, event 4f…)".
    private static func name(_ entry: LogContent.Entry) -> String {
        "position \(entry.place.position) (stream \(entry.fields.stream), version \(entry.fields.version), event \(entry.fields.eventID.uuidString.lowercased()))"
    }

    /// The streams recorded erasures re-chained, as named after the erasure.
    private static func erasedStreams(on connection: PostgresConnection) throws -> Set<String> {
        try Set(
            LogContent.data(ofType: LedgerEventType.userErased.rawValue, on: connection).flatMap {
                ((try? StorageDecoder.decode(UserErasure.self, from: $0))?.rechained ?? []).map(\.stream)
            })
    }
}
