import Foundation
import LedgerPostgres

/// Raw evidence kept content-addressed (`ledger.evidence`), so an auditor can re-verify what an
/// event was derived from. Storing the same bytes again is a no-op.
package struct EvidenceStore: Sendable {
    package enum Kind: String, Sendable {
        case signedTransaction = "signed_transaction", signedRenewalInfo = "signed_renewal_info",
            receipt, receiptAnswer = "receipt_answer",
            notificationV1 = "notification_v1", notificationV2 = "notification_v2",
            appTransaction = "app_transaction",
            googleSubscription = "google_subscription", googleProduct = "google_product", googleNotification = "google_notification"
    }

    /// One piece of evidence as text (a JWS, base64, JSON: all of it UTF-8), named by its digest.
    struct Item: Sendable {
        let body: String
        let kind: Kind
        let bundleID: String
        /// For a verifyReceipt answer, the digest of the receipt it answers.
        let answers: String?
        let digest: String

        init(body: String, kind: Kind, bundleID: String, answers: String? = nil) {
            self.body = body
            self.kind = kind
            self.bundleID = bundleID
            self.answers = answers
            self.digest = EvidenceDigest.of(Data(body.utf8))
        }
    }

    let pool: PostgresPool

    package init(pool: PostgresPool) { self.pool = pool }

    /// Stores `body` and returns its digest (`sha256:<hex>`).
    @discardableResult
    package func store(_ body: Data, kind: Kind, bundleID: String, answers: String? = nil) async throws -> String {
        let digest = EvidenceDigest.of(body)
        // Committed without waiting for its own WAL flush: the append that references it comes
        // after it in the same WAL and flushes both, so durable events never point at lost
        // evidence, and a request pays one disk flush instead of two. One pipelined round trip.
        let insert = RoundTrip([
            PipelinedStatement(
                """
                INSERT INTO ledger.evidence (digest, bundle_id, kind, body, answers) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (digest) DO NOTHING
                """, [digest, bundleID, kind.rawValue, PostgresBytes(Array(body)), answers])
        ])
        _ = try await pool.withConnection { connection in
            try connection.pipelinedTransaction { try $0.commit(with: insert, waitingForDisk: false) }
        }
        return digest
    }

    /// One statement storing many pieces of evidence (a group of requests), each digest once.
    /// A receipt's answer may come in the same statement as the receipt: its reference is
    /// checked at the end of the statement.
    static func insert(_ items: [Item]) -> PipelinedStatement {
        var seen: Set<String> = []
        var digests: [String] = [], bundles: [String] = [], kinds: [String] = [], bodies: [String] = [], answers: [String?] = []
        for item in items {
            let digest = item.digest
            guard seen.insert(digest).inserted else { continue }
            digests.append(digest)
            bundles.append(item.bundleID)
            kinds.append(item.kind.rawValue)
            bodies.append(item.body)
            answers.append(item.answers)
        }
        return PipelinedStatement(
            """
            INSERT INTO ledger.evidence (digest, bundle_id, kind, body, answers)
            SELECT d, b, k, convert_to(t, 'UTF8'), a FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS e(d, b, k, t, a)
            ON CONFLICT (digest) DO NOTHING
            """,
            [
                PostgresTextArray(digests), PostgresTextArray(bundles), PostgresTextArray(kinds), PostgresTextArray(bodies),
                PostgresNullableTextArray(answers),
            ])
    }

    /// The raw bytes behind a digest, for audits.
    package func body(of digest: String) async throws -> Data? {
        try await bodies(of: [digest])[digest]
    }

    /// The bytes behind a digest and what kind of evidence they are (nil for a kind this version
    /// does not name), for the console's evidence page.
    package func entry(of digest: String) async throws -> (kind: Kind?, body: Data)? {
        try await pool.query("SELECT kind, body FROM ledger.evidence WHERE digest = $1", [digest]).first.map {
            (Kind(rawValue: try $0["kind"].string()), Data(try $0["body"].bytes()))
        }
    }

    /// The raw bytes behind several digests, in one statement (a user page shows a whole timeline).
    package func bodies(of digests: [String]) async throws -> [String: Data] {
        guard !digests.isEmpty else { return [:] }
        var found: [String: Data] = [:]
        for row in try await pool.query(
            "SELECT digest, body FROM ledger.evidence WHERE digest = ANY($1::text[])", [PostgresTextArray(digests)])
        {
            found[try row["digest"].string()] = Data(try row["body"].bytes())
        }
        return found
    }

    /// The evidence behind `digests` as a subject-access export lists it: `digest`, `kind`,
    /// `received_at`, `body` and `shredded_at` (set once an erasure emptied it), oldest first.
    package static func held(_ digests: [String]) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT digest, kind, received_at, body, shredded_at FROM ledger.evidence WHERE digest = ANY($1::text[]) ORDER BY received_at, digest
            """, [PostgresTextArray(digests)])
    }

    /// The evidence behind `digests` not emptied yet, for an erasure to search: `digest`, `kind`,
    /// `body`, and for a verifyReceipt answer's receipt, the answer's `answered` digest and its
    /// `answered_body`.
    package static func unshredded(_ digests: [String]) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT v.digest, v.kind, v.body, a.digest AS answered, a.body AS answered_body
              FROM ledger.evidence v LEFT JOIN ledger.evidence a ON a.digest = v.answers
             WHERE v.digest = ANY($1::text[]) AND v.shredded_at IS NULL
            """, [PostgresTextArray(digests)])
    }
}
