import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerProofs

/// The log's integrity, for auditors (scope `read`): `GET /v1/ledger/digest` (the tree's size and
/// root, signed), `/v1/ledger/digest-keys` (the JWK Set that checks it), and RFC 9162 proofs —
/// `/v1/ledger/proofs/inclusion?position=&tree_size=` and `/v1/ledger/proofs/consistency?from=&to=`.
struct ProofsController {
    let proofs: ProofDesk

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/ledger/digest", use: digest)
        group.get("/ledger/digest-keys", use: keys)
        group.get("/ledger/proofs/inclusion", use: inclusion)
        group.get("/ledger/proofs/consistency", use: consistency)
    }

    struct InclusionBody: Encodable {
        var position: Int64
        var leaf_index: Int64
        var tree_size: Int64
        var leaf_hash: String
        var audit_path: [String]
        var root_hash: String
    }

    struct ConsistencyBody: Encodable {
        var from: Int64
        var to: Int64
        var proof: [String]
        var from_root_hash: String
        var to_root_hash: String
    }

    @Sendable func digest(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try Self.authorize(context)
        return JSONBody.response(bytes: Array(try await proofs.digest().json.utf8))
    }

    @Sendable func keys(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try Self.authorize(context)
        return JSONBody.response(bytes: Array(proofs.keySet.utf8))
    }

    @Sendable func inclusion(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try Self.authorize(context)
        let query = request.uri.queryParameters
        let position = try Self.number(query.get("position"), "position", required: true)!
        let size = try Self.number(query.get("tree_size"), "tree_size", required: false)
        let proof = try await proofs.tree.inclusion(position: position, size: size)
        return try JSONBody.response(
            InclusionBody(
                position: proof.position, leaf_index: proof.leafIndex, tree_size: proof.treeSize, leaf_hash: ProofDesk.hex(proof.leafHash),
                audit_path: proof.auditPath.map(ProofDesk.hex), root_hash: ProofDesk.hex(proof.rootHash)))
    }

    @Sendable func consistency(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try Self.authorize(context)
        let query = request.uri.queryParameters
        let from = try Self.number(query.get("from"), "from", required: true)!
        let to = try Self.number(query.get("to"), "to", required: false)
        let proof = try await proofs.tree.consistency(from: from, to: to)
        return try JSONBody.response(
            ConsistencyBody(
                from: proof.from, to: proof.to, proof: proof.proof.map(ProofDesk.hex), from_root_hash: ProofDesk.hex(proof.fromRoot),
                to_root_hash: ProofDesk.hex(proof.toRoot)))
    }

    private static func authorize(_ context: LedgerRequestContext) throws {
        guard let key = context.key, key.grants(.read) else { throw LedgerError(.insufficientScope, "proofs need a key with scope read") }
    }

    private static func number(_ text: String?, _ name: String, required: Bool) throws -> Int64? {
        guard let text else {
            if required { throw LedgerError(.invalidProofRequest, "\(name) is required: a whole number, 0 or more") }
            return nil
        }
        guard let value = Int64(text), value >= 0 else {
            throw LedgerError(.invalidProofRequest, "\(name) is a whole number, 0 or more (got \(text.prefix(40)))")
        }
        return value
    }
}
