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
        group.get(use: apps)
        group.get("sign-in", use: signInForm)
        group.get("audit", use: auditLog)
        group.post("sign-in", use: signIn)
        group.post("sign-out", use: signOut)
        group.get("apps/:bundle_id", use: app)
        group.get("apps/:bundle_id/find", use: find)
        group.get("apps/:bundle_id/users/:user_id", use: user)
        group.get("apps/:bundle_id/evidence/:digest", use: evidence)
        group.post("apps/:bundle_id/users/:user_id/grants", use: grant)
        group.post("apps/:bundle_id/users/:user_id/grants/:grant_id/revoke", use: revokeGrant)
        group.post("apps/:bundle_id/users/:user_id/subscriptions/:original/extend", use: extend)
        group.get("apps/:bundle_id/metrics", use: metrics)
        group.get("apps/:bundle_id/metrics.csv", use: metricsDownload)
    }

    // MARK: Pages

    @Sendable func apps(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in try await appsPage(session) }
    }

    @Sendable func signInForm(_ request: Request, context: Context) async throws -> Response {
        render("signin", Frame(title: "Sign in"), session: nil)
    }

    @Sendable func auditLog(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in try await auditPage(request, session) }
    }

    @Sendable func app(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in try await appPage(try coveredApp(context, session), session) }
    }

    @Sendable func find(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in
            try await findPage(try coveredApp(context, session), query: request.uri.queryParameters["q"].map(String.init) ?? "", session)
        }
    }

    @Sendable func user(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in
            try await userPage(try coveredApp(context, session), user: try Self.parameter("user_id", context), request: request, session)
        }
    }

    @Sendable func evidence(_ request: Request, context: Context) async throws -> Response {
        try await page(request) { session in
            try await evidencePage(try coveredApp(context, session), digest: try Self.parameter("digest", context), session)
        }
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
