import Foundation
import LedgerPostgres

/// One admin action, as recorded.
package struct AuditEntry: Sendable, Equatable {
    package var position: Int64
    package var recordedAt: Date
    /// The key's name (or `ledger keys` for the command).
    package var actor: String
    package var keyID: UUID?
    package var requestID: String
    /// What was done: `app.configured`, `product.defined`, `webhook.deleted`, …
    package var action: String
    /// What it was done to, as a path: `com.example.game/products/pro.monthly`.
    package var target: String
    package var bundleID: String?
    /// The resource before and after, as JSON the API shows (secrets never among it).
    package var before: String?
    package var after: String?
}

/// Who changed the ledger's configuration, when, with which request, and from what to what
/// (`ledger.audit_log`, append-only like the event log). Written after the action succeeded: a
/// refused request changed nothing, so it is not an action.
package struct AuditLog: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) { self.pool = pool }

    /// The admin actions aimed at one user, for a subject-access export: `position`,
    /// `recorded_at`, `actor`, `action`, `target` and `after`, oldest first. Actions name a user
    /// in their target (`<bundle>/users/<user>/…`).
    package static func actions(aimedAt userID: String, bundleID: String) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT position, recorded_at, actor, action, target, after::text AS after FROM ledger.audit_log
             WHERE bundle_id = $1 AND starts_with(target, $1 || '/users/' || $2 || '/') ORDER BY position
            """, [bundleID, userID])
    }

    package func record(
        actor: String, keyID: UUID?, requestID: String, action: String, target: String, bundleID: String?, before: String?, after: String?
    ) async throws {
        try await pool.query(
            """
            INSERT INTO ledger.audit_log (actor, key_id, request_id, action, target, bundle_id, before, after)
            VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)
            """, [actor, keyID, requestID, action, target, bundleID, before, after])
    }

    /// A resource as the API shows it, for `before` and `after`: JSON with sorted keys.
    package static func json(_ value: (any Encodable)?) -> String? {
        guard let value else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Entries after `position`, oldest first; with `bundleID`, that app's only.
    package func page(after position: Int64, limit: Int, bundleID: String? = nil) async throws -> [AuditEntry] {
        try await pool.query(
            """
            SELECT position, recorded_at, actor, key_id::text AS key_id, request_id, action, target, bundle_id,
                   before::text AS before, after::text AS after
              FROM ledger.audit_log WHERE position > $1 AND ($3::text IS NULL OR bundle_id = $3)
             ORDER BY position LIMIT $2
            """, [position, limit, bundleID]
        ).map { row in
            AuditEntry(
                position: try row["position"].int64(), recordedAt: try row["recorded_at"].date(), actor: try row["actor"].string(),
                keyID: row["key_id"].text.flatMap(UUID.init(uuidString:)), requestID: try row["request_id"].string(),
                action: try row["action"].string(), target: try row["target"].string(), bundleID: row["bundle_id"].text,
                before: row["before"].text, after: row["after"].text)
        }
    }
}
