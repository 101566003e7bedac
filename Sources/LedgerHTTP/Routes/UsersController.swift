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
        group.get("/apps/:bundle_id/users/:user_id") { request, context in
            let (bundleID, userID) = try context.appAndUser(.read)
            _ = try await directory.app(bundleID)
            let written = try PositionMiddleware<LedgerRequestContext>.readAfter(request)
            let (at, knownAt) = try UsersController.instants(request)
            if at == nil && knownAt == nil {
                return JSONBody.response(bytes: Wire.userState(try await reader.currentState(bundleID: bundleID, userID: userID, atLeast: written)))
            }
            // A past knowledge time alone asks what the live answer was then: `at` defaults to it.
            let now = Date()
            let instant = at ?? knownAt ?? now
            let state = try await reader.state(bundleID: bundleID, userID: userID, at: instant, knownAt: knownAt, atLeast: written)
            return JSONBody.response(bytes: Wire.userState(state, knownAt: knownAt ?? now))
        }
        group.get("/apps/:bundle_id/users/:user_id/events") { request, context in
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
        group.post("/apps/:bundle_id/users/:user_id/merge") { request, context in
            let (bundleID, userID) = try context.appAndUser(.ingest)
            let body = try await JSONBody.decode(Wire.MergeRequest.self, from: request, context: context)
            return JSONBody.response(bytes: Wire.userState(try await merges.merge(bundleID: bundleID, into: userID, from: body.from)))
        }
        // Everything held about the user (a subject-access request): admin, as it includes the
        // raw evidence and the admin actions aimed at them.
        group.get("/apps/:bundle_id/users/:user_id/export") { _, context in
            let (bundleID, userID) = try context.appAndUser(.admin)
            _ = try await directory.app(bundleID)
            return JSONBody.response(bytes: try await subjectAccess.export(bundleID: bundleID, userID: userID))
        }
        // Erasure of the user's identifiers (the books stay, under a pseudonym): admin, audited
        // under the pseudonym — the id is what is being erased.
        group.delete("/apps/:bundle_id/users/:user_id") { _, context in
            let (bundleID, userID) = try context.appAndUser(.admin)
            _ = try await directory.app(bundleID)
            try Identifier.erasedUserID.check(userID)
            let report = try await erasures.erase(bundleID: bundleID, userID: userID, actor: context.key?.name ?? "admin")
            let answer = Wire.Erasure(report)
            try await context.audit(audit, "user.erased", target: "\(bundleID)/users/\(report.pseudonym)", bundleID: bundleID, after: answer)
            return try JSONBody.response(answer)
        }
        group.post("/apps/:bundle_id/users/:user_id/consumptions") { request, context in
            let (bundleID, userID) = try context.appAndUser(.ingest)
            let body = try await JSONBody.decode(Wire.ConsumptionRequest.self, from: request, context: context)
            let result = try await actions.consume(
                bundleID: bundleID, userID: userID, currency: body.currency, amount: body.amount,
                idempotencyKey: body.idempotency_key)
            return try JSONBody.response(Wire.ConsumptionResponse(balance: result.balance, currency: body.currency, replayed: result.replayed))
        }
        group.post("/apps/:bundle_id/users/:user_id/grants") { request, context in
            let (bundleID, userID) = try context.appAndUser(.admin)
            let body = try await JSONBody.decode(Wire.GrantRequest.self, from: request, context: context)
            let now = Date()
            var expiresAt: Date?
            switch (body.duration, body.until) {
            case (let duration?, nil):
                guard let parsed = ISODuration(duration) else { throw LedgerError(.invalidDuration, "duration is ISO 8601, e.g. P7D") }
                expiresAt = parsed.added(to: now)
            case (nil, let until?):
                guard let end = RFC3339.parse(until) else { throw LedgerError(.invalidTime, "until must be an RFC 3339 time") }
                expiresAt = end
            case (nil, nil): expiresAt = nil
            default: throw LedgerError(.invalidGrant, "give duration or until, not both")
            }
            let grant = try await actions.grant(
                bundleID: bundleID, userID: userID, entitlement: body.entitlement, expiresAt: expiresAt,
                reason: body.reason, grantID: body.grant_id, actor: context.key?.name)
            let answer = Wire.GrantBody(
                grant_id: grant.grantID, user_id: grant.userID, entitlement: grant.entitlement,
                starts_at: RFC3339.string(grant.startsAt), expires_at: grant.expiresAt.map(RFC3339.string),
                reason: grant.reason)
            try await context.audit(
                audit, "grant.created", target: "\(bundleID)/users/\(userID)/grants/\(grant.grantID)", bundleID: bundleID, after: answer)
            return try JSONBody.response(answer, status: .created)
        }
        group.post("/apps/:bundle_id/users/:user_id/grants/:grant_id/revoke") { request, context in
            let (bundleID, userID) = try context.appAndUser(.admin)
            let grantID = try context.parameters.require("grant_id")
            let body = try await JSONBody.decode(Wire.RevokeRequest.self, from: request, context: context)
            let reason = body.reason ?? "revoked by support"
            try await actions.revokeGrant(bundleID: bundleID, userID: userID, grantID: grantID, reason: reason, actor: context.key?.name)
            struct Revoked: Encodable { var grant_id: String; var reason: String }
            try await context.audit(
                audit, "grant.revoked", target: "\(bundleID)/users/\(userID)/grants/\(grantID)", bundleID: bundleID,
                after: Revoked(grant_id: grantID, reason: reason))
            struct Answer: Encodable { var grant_id: String; var status: String }
            return try JSONBody.response(Answer(grant_id: grantID, status: "revoked"))
        }
    }

    /// `at` (valid time) and `known_at` (knowledge time) of a read, each RFC 3339 or a date; a
    /// knowledge time in the future is "now" (nothing more is known yet), so it is refused as a typo.
    static func instants(_ request: Request) throws -> (at: Date?, knownAt: Date?) {
        (try request.instant("at"), try request.knownAt())
    }
}
