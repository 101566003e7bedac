import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore

/// `GET /v1/audit-log?after=&limit=` (admin): every admin action, oldest first, paged by position;
/// a key limited to one app sees that app's.
struct AuditController {
    let audit: AuditLog

    struct Entry: Encodable {
        var position: Int64
        var recorded_at: String
        var actor: String
        var key_id: String?
        var request_id: String
        var action: String
        var target: String
        var bundle_id: String?
        /// The resource before and after, as the API shows it (JSON text, secrets never).
        var before: String?
        var after: String?
    }

    struct Page: Encodable {
        var entries: [Entry]
        /// Pass as `after` for the next page; absent at the end.
        var next: Int64?
    }

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/audit-log", use: auditLog)
    }

    @Sendable func auditLog(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        guard let key = context.key, key.grants(.admin) else { throw LedgerError(.insufficientScope, "the audit log is admin's") }
        let after: Int64
        switch request.uri.queryParameters.get("after").map({ Int64($0) }) {
        case nil: after = 0
        case let position?? where position >= 0: after = position
        default: throw LedgerError(.invalidCursor, "after is the position of an entry, 0 or more")
        }
        let limit = try request.pageLimit()
        let entries = try await audit.page(after: after, limit: limit, bundleID: key.bundleID)
        return try JSONBody.response(
            Page(
                entries: entries.map {
                    Entry(
                        position: $0.position, recorded_at: RFC3339.string($0.recordedAt), actor: $0.actor,
                        key_id: $0.keyID?.uuidString.lowercased(), request_id: $0.requestID, action: $0.action, target: $0.target,
                        bundle_id: $0.bundleID, before: $0.before, after: $0.after)
                }, next: entries.count == limit ? entries.last?.position : nil))
    }
}
