import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// What an admin session does from a user's page: promotional grants given and revoked, a
/// subscription's renewal date extended at Apple. Each is a form post, recorded in the audit
/// log as the API records its own, and answered with the user's page again.
extension ConsoleController {
    /// A grant for a number of days, the way support thinks of one.
    @Sendable func grant(_ request: Request, context: Context) async throws -> Response {
        try await act(request, context) { session, form, bundleID, userID in
            let days = Int(form["days"] ?? "") ?? 0
            guard (1...3650).contains(days) else { return "days is 1–3650" }
            let grant = try await console.actions.grant(
                bundleID: bundleID, userID: userID, entitlement: form["entitlement"] ?? "",
                expiresAt: Date().addingTimeInterval(Double(days) * 86_400), reason: form["reason"] ?? "",
                grantID: nil, actor: session.keyName)
            try await audit(
                context, session, "grant.created", target: "\(bundleID)/users/\(userID)/grants/\(grant.grantID)", bundleID: bundleID,
                after: ["entitlement": grant.entitlement, "days": String(days), "reason": grant.reason])
            return nil
        }
    }

    @Sendable func revokeGrant(_ request: Request, context: Context) async throws -> Response {
        let grantID = try Self.parameter("grant_id", context)
        return try await act(request, context) { session, form, bundleID, userID in
            try await console.actions.revokeGrant(
                bundleID: bundleID, userID: userID, grantID: grantID, reason: form["reason"] ?? "",
                actor: session.keyName)
            try await audit(
                context, session, "grant.revoked", target: "\(bundleID)/users/\(userID)/grants/\(grantID)", bundleID: bundleID,
                after: ["reason": form["reason"] ?? ""])
            return nil
        }
    }

    @Sendable func extend(_ request: Request, context: Context) async throws -> Response {
        let original = try Self.parameter("original", context)
        return try await act(request, context) { session, form, bundleID, _ in
            guard let days = Int(form["days"] ?? ""), let reason = Int(form["reason"] ?? "") else { return "days and reason are numbers" }
            // The form's own request id: sending the same form twice extends once.
            let requestID = form["request_id"] ?? UUID().uuidString
            _ = try await console.lookups.extend(
                bundleID: bundleID, originalTransactionID: original, days: days, reasonCode: reason,
                requestID: requestID, actor: session.keyName)
            try await audit(
                context, session, "subscription.extended", target: "\(bundleID)/subscriptions/\(original)", bundleID: bundleID,
                after: ["days": String(days), "reason_code": String(reason), "request_id": requestID])
            return "Extended \(original) by \(days) days at Apple."
        }
    }

    /// A form post that acts (admin, the session's CSRF token), then back to the user page.
    func act(
        _ request: Request, _ context: Context,
        _ body: (ConsoleSessions.Session, Form, String, String) async throws -> String?
    ) async throws -> Response {
        guard let token = Self.token(request), let session = try await console.sessions.session(token) else {
            return render(
                "signin", Frame(title: "Sign in", error: "Your session ended. Sign in again."), session: nil, status: .unauthorized)
        }
        let form = try await Form(request, context)
        guard let sent = form["csrf"], sent == session.csrf else {
            return render(
                "signin", Frame(title: "Refused", error: "This form is stale or was not sent from the console (CSRF token)."),
                session: session,
                status: .forbidden)
        }
        guard session.may(.admin) else {
            return render(
                "signin", Frame(title: "Refused", error: "This key may look but not act (it lacks the admin scope)."), session: session,
                status: .forbidden)
        }
        let bundleID = try Self.parameter("bundle_id", context), userID = try Self.parameter("user_id", context)
        guard session.covers(bundleID) else {
            return render(
                "signin", Frame(title: "Refused", error: "This key is limited to another app."), session: session, status: .forbidden)
        }
        var location = "/console/apps/\(Self.path(bundleID))/users/\(Self.path(userID))"
        do {
            if let problem = try await body(session, form, bundleID, userID) { location += "?message=" + Self.path(problem) }
        } catch let error as LedgerError {
            location += "?message=" + Self.path(error.message)
        }
        return Response(status: .seeOther, headers: [.location: location])
    }

    /// Records an action the console made, as the API records its own.
    func audit(
        _ context: Context, _ session: ConsoleSessions.Session, _ action: String, target: String, bundleID: String, after: [String: String]
    )
        async throws
    {
        try await console.audit.record(
            actor: session.keyName, keyID: nil, requestID: context.requestID, action: action, target: target, bundleID: bundleID,
            before: nil,
            after: AuditLog.json(after))
    }
}
