import Foundation
import LedgerPostgres

/// Raw evidence kept content-addressed (`ledger.evidence`), so an auditor can re-verify what an
/// event was derived from. Storing the same bytes again is a no-op.
public struct EvidenceStore: Sendable {
    public enum Kind: String, Sendable { case signedTransaction = "signed_transaction", receipt, receiptAnswer = "receipt_answer",
                                          notificationV1 = "notification_v1", notificationV2 = "notification_v2" }
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// Stores `body` and returns its digest (`sha256:<hex>`).
    @discardableResult
    public func store(_ body: Data, kind: Kind, bundleID: String, answers: String? = nil) async throws -> String {
        let digest = EvidenceDigest.of(body)
        // Committed without waiting for its own WAL flush: the append that references it comes
        // after it in the same WAL and flushes both, so durable events never point at lost
        // evidence, and a request pays one disk flush instead of two. One pipelined round trip.
        let statements = [
            PipelinedStatement("SELECT set_config('synchronous_commit', 'off', true)"),
            PipelinedStatement("""
                INSERT INTO ledger.evidence (digest, bundle_id, kind, body, answers) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (digest) DO NOTHING
                """, [digest, bundleID, kind.rawValue, PostgresBytes(Array(body)), answers]),
        ]
        _ = try await pool.withConnection { try $0.pipeline(statements, transaction: true) }
        return digest
    }

    /// The raw bytes behind a digest, for audits.
    public func body(of digest: String) async throws -> Data? {
        try await pool.query("SELECT body FROM ledger.evidence WHERE digest = $1", [digest]).first.map { Data(try $0["body"].bytes()) }
    }
}
