import Foundation
import HTTPTypes
import Hummingbird
import LedgerAccess
import LedgerCore

/// Signing in and out, and what every page and action asks of a request: its session and the
/// parameters of its path.
extension ConsoleController {
    /// Failed sign-ins count against the client's address as wrong API keys do
    /// (`FailureThrottle.gate`).
    @Sendable func signIn(_ request: Request, context: Context) async throws -> Response {
        let form = try await Form(request, context)
        let secret = form["key"] ?? ""
        let throttle = console.throttle
        let address = throttle.clientAddress(
            connection: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!])
        if case .wait(let seconds) = await throttle.gate(secret, from: address, keys: console.sessions.keys) {
            var page = render(
                "signin", Frame(title: "Sign in", error: "Too many failed sign-ins from this address. Try again in \(seconds) s."),
                session: nil,
                status: .tooManyRequests)
            page.headers[.retryAfter] = String(seconds)
            return page
        }
        guard let (token, _) = try await console.sessions.signIn(with: secret) else {
            throttle.recordFailure(from: address)
            return render(
                "signin", Frame(title: "Sign in", error: "That key is unknown, revoked, or lacks the read scope."), session: nil,
                status: .unauthorized)
        }
        let forwarded = request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
        let secure = forwarded || request.uri.scheme == .https
        var response = Response(status: .seeOther, headers: [.location: "/console"])
        response.headers[.setCookie] = "\(Self.cookie)=\(token); Path=/console; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
        return response
    }

    /// Ends the session when the form carries its CSRF token (a cross-site form cannot sign anyone
    /// out); the cookie is cleared either way.
    @Sendable func signOut(_ request: Request, context: Context) async throws -> Response {
        let form = try await Form(request, context)
        if let token = Self.token(request), let session = try await console.sessions.session(token), form["csrf"] == session.csrf {
            try await console.sessions.signOut(token)
        }
        var response = Response(status: .seeOther, headers: [.location: "/console/sign-in"])
        response.headers[.setCookie] = "\(Self.cookie)=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0"
        return response
    }

    /// A page for a signed-in session; otherwise the sign-in page.
    func page(_ request: Request, _ body: (ConsoleSessions.Session) async throws -> Response) async throws -> Response {
        guard let token = Self.token(request), let session = try await console.sessions.session(token) else {
            return render(
                "signin", Frame(title: "Sign in", error: Self.token(request) == nil ? nil : "Your session ended. Sign in again."),
                session: nil, status: .unauthorized)
        }
        do {
            return try await body(session)
        } catch let error as ConsolePageError {
            return render("signin", Frame(title: "Not allowed", error: error.message), session: session, status: error.status)
        }
    }

    static func token(_ request: Request) -> String? {
        request.cookies[cookie]?.value
    }

    /// A path parameter, percent-decoded (links encode user ids, which may hold anything).
    static func parameter(_ name: String, _ context: Context) throws -> String {
        let raw = try context.parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    /// The route's app, once the session's key covers it.
    func coveredApp(_ context: Context, _ session: ConsoleSessions.Session) throws -> String {
        let bundleID = try Self.parameter("bundle_id", context)
        guard session.covers(bundleID) else { throw ConsolePageError(status: .forbidden, message: "This key is limited to another app.") }
        return bundleID
    }
}
