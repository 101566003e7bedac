import Crypto
import Foundation

/// The Merkle tree hash of RFC 9162 (section 2.1) over the log's leaves, and its proofs. Pure: the
/// complete subtrees come from a lookup, so the same code answers from stored nodes, from a batch
/// in memory, or from a recording lookup that only learns which nodes an answer will need (one
/// query fetches them all).
package enum MerkleTree {
    /// A complete subtree: leaves `[index·2^level, (index+1)·2^level)`.
    package struct Node: Hashable, Sendable, Comparable {
        package var level: Int
        package var index: Int64

        package init(level: Int, index: Int64) {
            self.level = level
            self.index = index
        }

        package static func < (a: Node, b: Node) -> Bool { (a.level, a.index) < (b.level, b.index) }
    }

    package typealias Lookup = (Node) throws -> [UInt8]

    /// SHA-256 of the empty string: the root of a tree with no leaves.
    package static let emptyRoot = Array(SHA256.hash(data: [UInt8]()))

    /// `SHA-256(0x00 ‖ data)`.
    package static func leafHash(_ data: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: [0x00])
        hasher.update(data: data)
        return Array(hasher.finalize())
    }

    /// `SHA-256(0x01 ‖ left ‖ right)`.
    package static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: [0x01])
        hasher.update(data: left)
        hasher.update(data: right)
        return Array(hasher.finalize())
    }

    /// The largest power of two smaller than `n` (n > 1): where RFC 9162 splits a tree.
    static func split(_ n: Int64) -> Int64 {
        var k: Int64 = 1
        while k << 1 < n { k <<= 1 }
        return k
    }

    /// MTH(D[from:to]), for ranges of the RFC's recursion (a left part always starts aligned to
    /// its size), complete subtrees taken from `lookup`.
    package static func hash(from a: Int64, to b: Int64, _ lookup: Lookup) throws -> [UInt8] {
        let size = b - a
        precondition(size > 0)
        if size & (size - 1) == 0, a % size == 0 { return try lookup(Node(level: size.trailingZeroBitCount, index: a / size)) }
        let k = split(size)
        return nodeHash(try hash(from: a, to: a + k, lookup), try hash(from: a + k, to: b, lookup))
    }

    /// The root of the first `size` leaves.
    package static func root(size: Int64, _ lookup: Lookup) throws -> [UInt8] {
        size == 0 ? emptyRoot : try hash(from: 0, to: size, lookup)
    }

    /// PATH(m, D[0:n]) of RFC 9162 2.1.3.1: the audit path of leaf `m` in the tree of `n` leaves.
    package static func inclusionPath(leaf m: Int64, size n: Int64, _ lookup: Lookup) throws -> [[UInt8]] {
        precondition(m >= 0 && m < n)
        return try path(m, from: 0, to: n, lookup)
    }

    private static func path(_ m: Int64, from a: Int64, to b: Int64, _ lookup: Lookup) throws -> [[UInt8]] {
        let n = b - a
        if n == 1 { return [] }
        let k = split(n)
        if m < k { return try path(m, from: a, to: a + k, lookup) + [hash(from: a + k, to: b, lookup)] }
        return try path(m - k, from: a + k, to: b, lookup) + [hash(from: a, to: a + k, lookup)]
    }

    /// PROOF(m, D[0:n]) of RFC 9162 2.1.4.1: that the tree of `m` leaves is a prefix of the tree
    /// of `n` (0 < m ≤ n; empty when m == n).
    package static func consistencyProof(from m: Int64, to n: Int64, _ lookup: Lookup) throws -> [[UInt8]] {
        precondition(m > 0 && m <= n)
        return try subproof(m, from: 0, to: n, complete: true, lookup)
    }

    private static func subproof(_ m: Int64, from a: Int64, to b: Int64, complete: Bool, _ lookup: Lookup) throws -> [[UInt8]] {
        let n = b - a
        if m == n { return complete ? [] : [try hash(from: a, to: b, lookup)] }
        let k = split(n)
        if m <= k { return try subproof(m, from: a, to: a + k, complete: complete, lookup) + [hash(from: a + k, to: b, lookup)] }
        return try subproof(m - k, from: a + k, to: b, complete: false, lookup) + [hash(from: a, to: a + k, lookup)]
    }

    /// The complete subtrees an answer reads: `answer` run once against a lookup that records.
    package static func nodes(readBy answer: (@escaping Lookup) throws -> Void) rethrows -> Set<Node> {
        var needed = Set<Node>()
        try answer { node in
            needed.insert(node)
            return emptyRoot
        }
        return needed
    }

    /// The right edge of a tree of `size` leaves: one complete subtree per bit set in `size`,
    /// each the node a new leaf's hashes combine with. Their hashes are what an appender keeps.
    package static func edge(size: Int64) -> [Node] {
        (0..<63).filter { size >> $0 & 1 == 1 }.map { Node(level: $0, index: (size >> $0) - 1) }
    }
}

/// Appends leaves to a tree whose right edge it holds: each leaf gives its own node and every
/// complete subtree it closes, which is all an appender has to store (RFC 9162's tree is never
/// rebuilt, only extended).
package struct MerkleAppender: Sendable {
    package private(set) var size: Int64
    /// The edge's hashes by level (levels of the bits set in `size`).
    private var edge: [Int: [UInt8]]

    package init(size: Int64, edge: [MerkleTree.Node: [UInt8]]) throws {
        self.size = size
        self.edge = [:]
        for node in MerkleTree.edge(size: size) {
            guard let hash = edge[node] else { throw MerkleError.missingNode(node) }
            self.edge[node.level] = hash
        }
    }

    /// Adds one leaf; answers the nodes it completed, the leaf's own first.
    package mutating func append(leafHash: [UInt8]) -> [(MerkleTree.Node, [UInt8])] {
        var made = [(MerkleTree.Node(level: 0, index: size), leafHash)]
        var carry = leafHash
        var level = 0
        while size >> level & 1 == 1, let left = edge.removeValue(forKey: level) {
            carry = MerkleTree.nodeHash(left, carry)
            level += 1
            made.append((MerkleTree.Node(level: level, index: size >> level), carry))
        }
        edge[level] = carry
        size += 1
        return made
    }

    /// The root of the tree as it stands: the edge folded from its lowest level up.
    package var root: [UInt8] {
        var root: [UInt8]?
        for level in edge.keys.sorted() {
            root = root.map { MerkleTree.nodeHash(edge[level]!, $0) } ?? edge[level]!
        }
        return root ?? MerkleTree.emptyRoot
    }
}

package enum MerkleError: Error, CustomStringConvertible, Equatable {
    case missingNode(MerkleTree.Node)

    package var description: String {
        switch self {
        case .missingNode(let node):
            "the proof tree lacks its node at level \(node.level), index \(node.index): it was altered or only partly restored"
        }
    }
}
