import Foundation
import LedgerBackground
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import Logging

/// The Merkle tree over the whole log, stored beside it (`ledger.proof_*`, schema/0029): extended
/// by one writer at a time as events commit — never rebuilt —, and asked for roots and proofs.
/// Leaves follow the log's order, the one every projection reads it in (`LogContent.after`);
/// each names its event's position, so a proof is asked for by position.
package struct ProofTree: Sendable {
    let pool: PostgresPool
    let batchSize: Int
    let logger: Logger

    package init(pool: PostgresPool, batchSize: Int = 2_000, logger: Logger) {
        self.pool = pool
        self.batchSize = batchSize
        self.logger = logger
    }

    // MARK: Extending

    /// The writer as a background part: a full batch is followed at once, else it looks again
    /// after `pollInterval` — so an event can be proven about a second after its commit.
    package func loop(heartbeat: Heartbeat, pollInterval: Duration = .seconds(1)) -> BackgroundLoop {
        let tree = self
        return .draining(batch: batchSize, every: pollInterval, reportingTo: heartbeat, logger: logger) { _ in try await tree.extend() }
    }

    /// Adds a leaf for each event committed since the tree's place, up to a batch, in one
    /// transaction that holds the tree's row: another server extending at the same time waits,
    /// then reads on from where this one stopped. Answers how many leaves it added.
    @discardableResult
    package func extend() async throws -> Int {
        let limit = batchSize
        return try await pool.withTransaction { try Self.extend(on: $0, limit: limit) }
    }

    /// Extends the tree over everything committed so far, as a command does before it signs or
    /// audits: batch after batch, and while events wait behind the fence (a transaction older
    /// than theirs still open anywhere in the cluster), for them, up to `patience`.
    package func catchUp(patience: Duration = .seconds(60)) async throws {
        let started = ContinuousClock.now
        while true {
            if try await extend() > 0 { continue }
            let held = try await pool.query(EventStore.heldBackSQL(after: "(SELECT tx_id, position FROM ledger.proof_tree)"))
            guard try held[0]["held"].bool(), ContinuousClock.now - started < patience else { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func extend(on connection: PostgresConnection, limit: Int) throws -> Int {
        let place = try connection.query("SELECT tx_id::text AS tx_id, position, size FROM ledger.proof_tree FOR UPDATE")[0]
        let bound = LogPosition(transactionID: try place["tx_id"].uint64(), position: try place["position"].int64())
        let entries = try LogContent.after(bound, limit: limit, on: connection)
        guard let last = entries.last else { return 0 }
        let size = try place["size"].int64()
        var appender = try MerkleAppender(size: size, edge: nodes(Set(MerkleTree.edge(size: size)), on: connection))
        var leaves: (index: [String], position: [String], salt: [String], commitment: [String]) = ([], [], [], [])
        var made: [(MerkleTree.Node, [UInt8])] = []
        for entry in entries {
            let salt = ProofLeaf.salt()
            let commitment = ProofLeaf.commitment(salt: salt, content: EventHash.content(entry.fields))
            leaves.index.append(String(appender.size))
            leaves.position.append(String(entry.place.position))
            leaves.salt.append(Hex.encode(salt))
            leaves.commitment.append(Hex.encode(commitment))
            // A leaf's own hash is not stored: it is recomputed from the leaf's row when read.
            made += appender.append(leafHash: ProofLeaf.hash(position: entry.place.position, commitment: commitment)).dropFirst()
        }
        _ = try connection.query(
            """
            INSERT INTO ledger.proof_leaves (leaf_index, position, salt, commitment)
            SELECT i, p, decode(s, 'hex'), decode(c, 'hex')
              FROM unnest($1::text[]::bigint[], $2::text[]::bigint[], $3::text[], $4::text[]) AS l(i, p, s, c)
            """,
            [
                PostgresTextArray(leaves.index), PostgresTextArray(leaves.position), PostgresTextArray(leaves.salt),
                PostgresTextArray(leaves.commitment),
            ])
        _ = try connection.query(
            """
            INSERT INTO ledger.proof_nodes (level, index, hash)
            SELECT l, i, decode(h, 'hex') FROM unnest($1::text[]::smallint[], $2::text[]::bigint[], $3::text[]) AS n(l, i, h)
            """,
            [
                PostgresTextArray(made.map { String($0.0.level) }), PostgresTextArray(made.map { String($0.0.index) }),
                PostgresTextArray(made.map { Hex.encode($0.1) }),
            ])
        _ = try connection.query(
            "UPDATE ledger.proof_tree SET tx_id = $1::text::xid8, position = $2, size = $3, updated_at = now()",
            [String(last.place.transactionID), last.place.position, appender.size])
        return entries.count
    }

    // MARK: Reading

    /// The tree's size and root now.
    package func head() async throws -> (size: Int64, root: [UInt8]) {
        try await pool.withConnection { connection in
            let size = try Self.size(on: connection)
            return (size, try Self.root(size: size, on: connection))
        }
    }

    /// The audit path of the event at `position` in the tree of `size` leaves (nil: as it stands).
    package func inclusion(position: Int64, size: Int64?) async throws -> Inclusion {
        // No transaction: a size read once, and the complete subtrees of any size up to it,
        // which never change.
        try await pool.withConnection { connection in
            let current = try Self.size(on: connection)
            let size = size ?? current
            try Self.check(size: size, current: current)
            guard
                let leaf = try connection.query(
                    "SELECT leaf_index FROM ledger.proof_leaves WHERE position = $1", [position]
                ).first.map({ try $0["leaf_index"].int64() })
            else {
                throw LedgerError(
                    .notInTree,
                    "no leaf for position \(position): no such event, or not in the tree yet (it follows the log within seconds)")
            }
            guard leaf < size else {
                throw LedgerError(
                    .invalidProofRequest, "position \(position) is leaf \(leaf), which a tree of \(size) leaves does not hold yet")
            }
            return try Self.answer(on: connection) { lookup in
                Inclusion(
                    position: position, leafIndex: leaf, treeSize: size, leafHash: try lookup(MerkleTree.Node(level: 0, index: leaf)),
                    auditPath: try MerkleTree.inclusionPath(leaf: leaf, size: size, lookup),
                    rootHash: try MerkleTree.root(size: size, lookup))
            }
        }
    }

    /// That the tree of `from` leaves is a prefix of the tree of `to` (nil: as it stands).
    package func consistency(from: Int64, to: Int64?) async throws -> Consistency {
        // No transaction: a size read once, and the complete subtrees of any size up to it,
        // which never change.
        try await pool.withConnection { connection in
            let current = try Self.size(on: connection)
            let to = to ?? current
            try Self.check(size: to, current: current)
            guard from >= 1, from <= to else {
                throw LedgerError(.invalidProofRequest, "from (\(from)) must be at least 1 and at most to (\(to))")
            }
            return try Self.answer(on: connection) { lookup in
                Consistency(
                    from: from, to: to, proof: try MerkleTree.consistencyProof(from: from, to: to, lookup),
                    fromRoot: try MerkleTree.root(size: from, lookup), toRoot: try MerkleTree.root(size: to, lookup))
            }
        }
    }

    package struct Inclusion: Sendable {
        package var position: Int64
        package var leafIndex: Int64
        package var treeSize: Int64
        package var leafHash: [UInt8]
        package var auditPath: [[UInt8]]
        package var rootHash: [UInt8]
    }

    package struct Consistency: Sendable {
        package var from: Int64
        package var to: Int64
        package var proof: [[UInt8]]
        package var fromRoot: [UInt8]
        package var toRoot: [UInt8]
    }

    static func size(on connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT size FROM ledger.proof_tree")[0]["size"].int64()
    }

    static func root(size: Int64, on connection: PostgresConnection) throws -> [UInt8] {
        try answer(on: connection) { try MerkleTree.root(size: size, $0) }
    }

    /// `compute` run once to learn the complete subtrees it reads, then again with them fetched
    /// in one round: the same code says what it needs and uses it, so the two cannot drift.
    static func answer<T>(on connection: PostgresConnection, _ compute: (MerkleTree.Lookup) throws -> T) throws -> T {
        let known = try nodes(MerkleTree.nodes { _ = try compute($0) }, on: connection)
        return try compute(lookup(known))
    }

    private static func check(size: Int64, current: Int64) throws {
        guard size >= 0, size <= current else {
            throw LedgerError(.invalidProofRequest, "tree_size \(size) is beyond the tree, which has \(current) leaves")
        }
    }

    /// The stored hashes of `wanted`: leaves' hashes recomputed from their rows, the others read.
    /// Each read is one query, levels and indexes as two lists, both index conditions on the
    /// primary key (a join with a list of pairs is planned as a scan of every node while the tree
    /// is small), the pairs not wanted left out here.
    static func nodes(_ wanted: Set<MerkleTree.Node>, on connection: PostgresConnection) throws -> [MerkleTree.Node: [UInt8]] {
        var found: [MerkleTree.Node: [UInt8]] = [:]
        let leaves = wanted.filter { $0.level == 0 }.map(\.index)
        if !leaves.isEmpty {
            let rows = try connection.query(
                "SELECT leaf_index, position, commitment FROM ledger.proof_leaves WHERE leaf_index = ANY($1::text[]::bigint[])",
                [PostgresTextArray(leaves.map(String.init))])
            for row in rows {
                found[MerkleTree.Node(level: 0, index: try row["leaf_index"].int64())] = ProofLeaf.hash(
                    position: try row["position"].int64(), commitment: try row["commitment"].bytes())
            }
        }
        let inner = wanted.filter { $0.level > 0 }
        guard !inner.isEmpty else { return found }
        let rows = try connection.query(
            "SELECT level, index, hash FROM ledger.proof_nodes WHERE level = ANY($1::text[]::smallint[]) AND index = ANY($2::text[]::bigint[])",
            [PostgresTextArray(Set(inner.map(\.level)).map(String.init)), PostgresTextArray(Set(inner.map(\.index)).map(String.init))])
        for row in rows {
            let node = MerkleTree.Node(level: Int(try row["level"].int64()), index: try row["index"].int64())
            if inner.contains(node) { found[node] = try row["hash"].bytes() }
        }
        return found
    }

    static func lookup(_ known: [MerkleTree.Node: [UInt8]]) -> MerkleTree.Lookup {
        { node in
            guard let hash = known[node] else { throw MerkleError.missingNode(node) }
            return hash
        }
    }
}
