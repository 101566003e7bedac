import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Promotional grants by support (scope `admin`): an entitlement given outside the App Store for
/// a while or until revoked, each audited with the key that gave or took it.
extension UsersController {
    @Sendable func grant(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.admin)
        let body = try await JSONBody.decode(Wire.GrantRequest.self, from: request, context: context)
        let expiresAt = try Self.expiry(of: body, from: Date())
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

    @Sendable func revokeGrant(_ request: Request, context: LedgerRequestContext) async throws -> Response {
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

    /// When a grant ends: a duration from `now`, an end time, or never (until revoked) — one of
    /// the first two at most.
    static func expiry(of body: Wire.GrantRequest, from now: Date) throws -> Date? {
        switch (body.duration, body.until) {
        case (let duration?, nil):
            guard let parsed = ISODuration(duration) else { throw LedgerError(.invalidDuration, "duration is ISO 8601, e.g. P7D") }
            return parsed.added(to: now)
        case (nil, let until?):
            guard let end = RFC3339.parse(until) else { throw LedgerError(.invalidTime, "until must be an RFC 3339 time") }
            return end
        case (nil, nil): return nil
        default: throw LedgerError(.invalidGrant, "give duration or until, not both")
        }
    }
}
