import Foundation
import HTTPTypes
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerProjections
import Mustache

/// The console under `/console`: pages for support and finance, rendered on the server from
/// Mustache templates (which escape every value they insert), charts drawn as SVG, no script.
/// Signed in with an API key exchanged for a session cookie; every form carries the session's
/// CSRF token; `read` looks, `admin` acts, and actions are recorded with the key's name.
package struct ConsoleController<Context: ConsoleRequestContext>: Sendable {
    let console: ConsoleContext
    let templates: MustacheLibrary
    static var cookie: String { "ledger_console" }

    package init(console: ConsoleContext) throws {
        self.console = console
        var library = MustacheLibrary()
        for name in ["header", "footer", "findbox", "signin", "apps", "app", "find", "user", "metrics", "evidence", "audit"] {
            guard let url = Bundle.module.url(forResource: name, withExtension: "mustache", subdirectory: "Templates") else {
                throw ConsoleError.missingTemplate(name)
            }
            try library.register(String(contentsOf: url, encoding: .utf8), named: name)
        }
        self.templates = library
    }

    enum ConsoleError: Error { case missingTemplate(String) }

    package func register(on router: Router<Context>) {
        let group = router.group("console")
        group.get { request, _ in try await page(request) { session in try await appsPage(session) } }
        group.get("sign-in") { _, _ in render("signin", Frame(title: "Sign in"), session: nil) }
        group.get("audit") { request, _ in try await page(request) { session in try await auditPage(request, session) } }
        group.post("sign-in") { request, context in try await signIn(request, context) }
        group.post("sign-out") { request, context in
            let form = try await Form(request, context)
            if let token = Self.token(request), let session = try await console.sessions.session(token), form["csrf"] == session.csrf {
                try await console.sessions.signOut(token)
            }
            var response = Response(status: .seeOther, headers: [.location: "/console/sign-in"])
            response.headers[.setCookie] = "\(Self.cookie)=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0"
            return response
        }
        group.get("apps/:bundle_id") { request, context in
            try await page(request) { session in try await appPage(try app(context, session), session) }
        }
        group.get("apps/:bundle_id/find") { request, context in
            try await page(request) { session in
                try await findPage(try app(context, session), query: request.uri.queryParameters["q"].map(String.init) ?? "", session)
            }
        }
        group.get("apps/:bundle_id/users/:user_id") { request, context in
            try await page(request) { session in
                try await userPage(try app(context, session), user: try Self.parameter("user_id", context), request: request, session)
            }
        }
        group.get("apps/:bundle_id/evidence/:digest") { request, context in
            try await page(request) { session in try await evidencePage(try app(context, session), digest: try Self.parameter("digest", context), session) }
        }
        group.post("apps/:bundle_id/users/:user_id/grants") { request, context in
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
        group.post("apps/:bundle_id/users/:user_id/grants/:grant_id/revoke") { request, context in
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
        group.post("apps/:bundle_id/users/:user_id/subscriptions/:original/extend") { request, context in
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
        group.get("apps/:bundle_id/metrics") { request, context in
            try await page(request) { session in try await metricsPage(try app(context, session), request: request, session) }
        }
        group.get("apps/:bundle_id/metrics.csv") { request, context in
            guard let token = Self.token(request), let session = try await console.sessions.session(token) else {
                return Response(status: .unauthorized)
            }
            return try await metricsCSV(try app(context, session), request: request)
        }
    }

    // MARK: Sessions

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

    /// Failed sign-ins count against the client's address as wrong API keys do
    /// (`FailureThrottle.gate`).
    func signIn(_ request: Request, _ context: Context) async throws -> Response {
        let form = try await Form(request, context)
        let secret = form["key"] ?? ""
        let throttle = console.throttle
        let address = throttle.clientAddress(
            connection: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!])
        if case .wait(let seconds) = await throttle.gate(secret, from: address, keys: console.sessions.keys) {
            var page = render(
                "signin", Frame(title: "Sign in", error: "Too many failed sign-ins from this address. Try again in \(seconds) s."), session: nil,
                status: .tooManyRequests)
            page.headers[.retryAfter] = String(seconds)
            return page
        }
        guard let (token, _) = try await console.sessions.signIn(with: secret) else {
            throttle.recordFailure(from: address)
            return render(
                "signin", Frame(title: "Sign in", error: "That key is unknown, revoked, or lacks the read scope."), session: nil, status: .unauthorized)
        }
        let forwarded = request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
        let secure = forwarded || request.uri.scheme == .https
        var response = Response(status: .seeOther, headers: [.location: "/console"])
        response.headers[.setCookie] = "\(Self.cookie)=\(token); Path=/console; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
        return response
    }

    /// A form post that acts (admin, the session's CSRF token), then back to the user page.
    func act(
        _ request: Request, _ context: Context,
        _ body: (ConsoleSessions.Session, Form, String, String) async throws -> String?
    ) async throws -> Response {
        guard let token = Self.token(request), let session = try await console.sessions.session(token) else {
            return render("signin", Frame(title: "Sign in", error: "Your session ended. Sign in again."), session: nil, status: .unauthorized)
        }
        let form = try await Form(request, context)
        guard let sent = form["csrf"], sent == session.csrf else {
            return render(
                "signin", Frame(title: "Refused", error: "This form is stale or was not sent from the console (CSRF token)."), session: session,
                status: .forbidden)
        }
        guard session.may(.admin) else {
            return render(
                "signin", Frame(title: "Refused", error: "This key may look but not act (it lacks the admin scope)."), session: session, status: .forbidden)
        }
        let bundleID = try Self.parameter("bundle_id", context), userID = try Self.parameter("user_id", context)
        guard session.covers(bundleID) else {
            return render("signin", Frame(title: "Refused", error: "This key is limited to another app."), session: session, status: .forbidden)
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
            actor: session.keyName, keyID: nil, requestID: context.requestID, action: action, target: target, bundleID: bundleID, before: nil,
            after: AuditLog.json(after))
    }

    static func token(_ request: Request) -> String? {
        request.cookies[cookie]?.value
    }

    /// A path parameter, percent-decoded (links encode user ids, which may hold anything).
    static func parameter(_ name: String, _ context: Context) throws -> String {
        let raw = try context.parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    func app(_ context: Context, _ session: ConsoleSessions.Session) throws -> String {
        let bundleID = try Self.parameter("bundle_id", context)
        guard session.covers(bundleID) else { throw ConsolePageError(status: .forbidden, message: "This key is limited to another app.") }
        return bundleID
    }

    // MARK: Rendering

    /// What every page shows around its content.
    struct Frame {
        var title: String
        var error: String?
        var app: String?
        var signedIn = false
        var keyName = ""
        var admin = false
        var csrf = ""
    }

    func frame(_ title: String, app: String?, _ session: ConsoleSessions.Session) -> Frame {
        Frame(title: title, app: app, signedIn: true, keyName: session.keyName, admin: session.may(.admin), csrf: session.csrf)
    }

    func render(_ template: String, _ content: Any, session: ConsoleSessions.Session?, status: HTTPResponse.Status = .ok) -> Response {
        var object = content
        if var frame = content as? Frame, let session {
            frame.signedIn = true
            frame.keyName = session.keyName
            frame.admin = session.may(.admin)
            frame.csrf = session.csrf
            object = frame
        }
        // Every template is loaded (and checked) when the controller is made; one a page names that
        // was not loaded is a fault of this code, shown as one rather than as an empty page.
        guard let html = templates.render(object, withTemplate: template) else {
            return Response(status: .internalServerError, body: .init(byteBuffer: ByteBuffer(string: "the console has no template \(template)")))
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A path segment, percent-encoded.
    static func path(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))
            ?? ""
    }
}

/// What the console needs of a request's context: the client's address (failed sign-ins are
/// counted against it) and the request's id (recorded with the actions it makes).
package protocol ConsoleRequestContext: RemoteAddressRequestContext {
    var requestID: String { get }
}

/// A page refused (the key's app, a missing user): its status and words.
struct ConsolePageError: Error {
    var status: HTTPResponse.Status
    var message: String
}

/// An `application/x-www-form-urlencoded` body.
struct Form {
    private var fields: [String: String] = [:]

    init<Context: RequestContext>(_ request: Request, _ context: Context) async throws {
        let body = try await request.body.collect(upTo: 64 * 1024)
        var components = URLComponents()
        components.percentEncodedQuery = String(buffer: body).replacingOccurrences(of: "+", with: "%20")
        for item in components.queryItems ?? [] where fields[item.name] == nil { fields[item.name] = item.value ?? "" }
    }

    subscript(_ name: String) -> String? { fields[name] }
}
