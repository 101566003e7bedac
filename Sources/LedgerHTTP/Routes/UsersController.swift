import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerPrivacy
import LedgerProjections

/// What a user owns (now or as of an instant), why (the audit trail), and what the app and
/// support do to them (consumptions, promotional grants).
struct UsersController {
    let directory: AppDirectory
    let reader: UserStateReader
    let actions: UserActions
    let audit: AuditLog
    let merges: AccountMerges
    let subjectAccess: SubjectAccess
    let erasures: UserErasures

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/apps/:bundle_id/users/:user_id", use: state)
        group.get("/apps/:bundle_id/users/:user_id/events", use: events)
        group.post("/apps/:bundle_id/users/:user_id/merge", use: merge)
        group.get("/apps/:bundle_id/users/:user_id/export", use: export)
        group.delete("/apps/:bundle_id/users/:user_id", use: erase)
        group.post("/apps/:bundle_id/users/:user_id/consumptions", use: consume)
        group.post("/apps/:bundle_id/users/:user_id/consumptions/:idempotency_key/reverse", use: reverseSpend)
        group.post("/apps/:bundle_id/users/:user_id/currencies/:code/grants", use: grantCurrency)
        group.get("/apps/:bundle_id/users/:user_id/currencies/:code/history", use: currencyHistory)
        group.post("/apps/:bundle_id/users/:user_id/grants", use: grant)
        group.post("/apps/:bundle_id/users/:user_id/grants/:grant_id/revoke", use: revokeGrant)
    }

    /// The user's state now, or as of `at` and/or `known_at`.
    @Sendable func state(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.read)
        _ = try await directory.app(bundleID)
        let written = try PositionMiddleware<LedgerRequestContext>.readAfter(request)
        let (at, knownAt) = try UsersController.instants(request)
        if at == nil && knownAt == nil {
            return JSONBody.response(
                bytes: Wire.userState(try await reader.currentState(bundleID: bundleID, userID: userID, atLeast: written)))
        }
        // A past knowledge time alone asks what the live answer was then: `at` defaults to it.
        let now = Date()
        let instant = at ?? knownAt ?? now
        let state = try await reader.state(bundleID: bundleID, userID: userID, at: instant, knownAt: knownAt, atLeast: written)
        return JSONBody.response(bytes: Wire.userState(state, knownAt: knownAt ?? now))
    }

    /// The facts behind the user's state (the audit trail), a page after a cursor.
    @Sendable func events(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.read)
        _ = try await directory.app(bundleID)
        let after = try request.cursor(), limit = try request.pageLimit()
        let trail = try await reader.auditTrail(
            bundleID: bundleID, userID: userID, knownAt: try Self.instants(request).knownAt,
            atLeast: PositionMiddleware<LedgerRequestContext>.readAfter(request)
        ).filter { $0.sequence > after }
        let page = try trail.prefix(limit).map { fact in
            Wire.AuditEvent(
                position: fact.sequence, type: fact.event.typeName, occurred_at: RFC3339.string(fact.occurredAt),
                recorded_at: RFC3339.string(fact.recordedAt), data: JSONFragment(try fact.event.encodedData()), evidence: fact.evidence)
        }
        let next = trail.count > limit ? page.last.map { String($0.position) } : nil
        return try JSONBody.response(Wire.AuditPage(events: page, next: next))
    }

    /// `at` (valid time) and `known_at` (knowledge time) of a read, each RFC 3339 or a date; a
    /// knowledge time in the future is "now" (nothing more is known yet), so it is refused as a typo.
    static func instants(_ request: Request) throws -> (at: Date?, knownAt: Date?) {
        (try request.instant("at"), try request.knownAt())
    }
}
