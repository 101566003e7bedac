import Foundation
import LedgerEventStore
import LedgerFormats
import LedgerPostgres

extension ProofTree {
    /// Holds the tree's row for the rest of the caller's transaction: an erasure takes it before it
    /// rewrites, so the writer never commits a leaf (with its salt) for content the erasure is
    /// rewriting — it has either committed before, and the erasure forgets that salt, or it
    /// reads the rewritten content afterwards.
    package static func hold(on connection: PostgresConnection) throws {
        _ = try connection.query("SELECT 1 FROM ledger.proof_tree FOR UPDATE")
    }

    /// After an erasure rewrote events of `streams`: forgets the salt of every leaf whose event
    /// no longer matches its commitment — exactly the events the erasure changed. Their leaves stay
    /// (every digest signed before still verifies) and, saltless, can confirm no guess of what was
    /// erased; the other events of those streams can still be checked. Answers how many it forgot.
    @discardableResult
    package static func forgetRewritten(inStreams streams: [String], on connection: PostgresConnection) throws -> Int {
        let entries = try LogContent.inStreams(streams, on: connection)
        guard !entries.isEmpty else { return 0 }
        let leaves = try connection.query(
            "SELECT position, salt, commitment FROM ledger.proof_leaves WHERE position = ANY($1::text[]::bigint[]) AND salt IS NOT NULL",
            [PostgresTextArray(entries.map { String($0.place.position) })])
        let content = Dictionary(entries.map { ($0.place.position, EventHash.content($0.fields)) }) { first, _ in first }
        var forget: [String] = []
        for leaf in leaves {
            let position = try leaf["position"].int64()
            guard let bytes = content[position] else { continue }
            if ProofLeaf.commitment(salt: try leaf["salt"].bytes(), content: bytes) != (try leaf["commitment"].bytes()) {
                forget.append(String(position))
            }
        }
        guard !forget.isEmpty else { return 0 }
        _ = try connection.query(
            "UPDATE ledger.proof_leaves SET salt = NULL WHERE position = ANY($1::text[]::bigint[])", [PostgresTextArray(forget)])
        return forget.count
    }
}
