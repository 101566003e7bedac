import Foundation
import HTTPTypes
import Hummingbird
import LedgerAccess
import LedgerConsole
import LedgerCore
import LedgerTracing
import Logging
import NIOCore

/// Per-request state: the authenticated key, once the auth middleware has found one.
package struct LedgerRequestContext: RequestContext, ConsoleRequestContext {
    package var coreContext: CoreRequestContextStorage
    package var key: APIKey?
    /// The connection's peer: what failed authentications are counted against (unless a trusted
    /// proxy says otherwise).
    package let remoteAddress: SocketAddress?
    /// The request's id: the client's `X-Request-Id` when it is a plain token, else a new one
    /// (`RequestIDMiddleware`); answered back, and recorded with every admin action.
    package var requestID = UUID().uuidString.lowercased()

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Records the admin action this request made, once it succeeded: who (the key's name), which
    /// request, what, and the resource before and after as the API shows it.
    func audit(
        _ log: AuditLog, _ action: String, target: String, bundleID: String?, before: (any Encodable)? = nil, after: (any Encodable)? = nil
    ) async throws {
        try await log.record(
            actor: key?.name ?? "unknown", keyID: key?.id, requestID: requestID, action: action, target: target, bundleID: bundleID,
            before: AuditLog.json(before), after: AuditLog.json(after))
    }

    /// The client's address as the throttle counts it.
    func clientAddress(_ request: Request, _ throttle: FailureThrottle) -> String {
        throttle.clientAddress(connection: remoteAddress?.ipAddress, forwardedFor: request.headers[.xForwardedFor])
    }

    /// Bodies over this are refused with 413; set for every request by `LimitsMiddleware` from
    /// the configuration (`LEDGER_MAX_BODY_BYTES`, default 1 MiB).
    package var maxUploadSize: Int = RequestLimits.defaultMaximumBody

    /// The route's app (`bundle_id`), once the key may act on it with `scope`: every app route's preamble.
    func app(_ scope: Scope) throws -> String {
        let bundleID = try parameters.require("bundle_id")
        try authorize(scope, bundleID)
        return bundleID
    }

    /// The route's app and user (`user_id`, percent-decoded: a user id may hold a space or a
    /// slash, which a client sends encoded), once the key may act on the app with `scope`.
    func appAndUser(_ scope: Scope) throws -> (bundleID: String, userID: String) {
        let raw = try parameters.require("user_id")
        return (try app(scope), raw.removingPercentEncoding ?? raw)
    }

    /// The key must carry `scope` (admin carries all) and, if limited to one app, this app.
    func authorize(_ scope: Scope, _ bundleID: String) throws {
        guard let key else { throw LedgerError(.missingAPIKey, "send Authorization: Bearer <key>") }
        guard key.grants(scope) else {
            throw LedgerError(.insufficientScope, "this key lacks the \(scope.rawValue) scope")
        }
        guard key.covers(bundleID: bundleID) else {
            throw LedgerError(.appNotAllowed, "this key is limited to another app")
        }
    }
}

/// Limits on what a request may send, from the configuration `ledger serve` reads.
package struct RequestLimits: Sendable {
    package static let defaultMaximumBody = 1 << 20
    package static let defaultDeadline = Duration.seconds(10)
    package var maximumBody: Int
    /// How long a request may take to be answered (a long poll: this beyond its `wait`).
    package var deadline: Duration

    package init(maximumBody: Int = RequestLimits.defaultMaximumBody, deadline: Duration = RequestLimits.defaultDeadline) {
        self.maximumBody = maximumBody
        self.deadline = deadline
    }
}

/// Puts the configured limits on every request's context (a context is made per request, from
/// the connection alone, so the configuration reaches it here).
struct LimitsMiddleware: RouterMiddleware {
    let limits: RequestLimits

    func handle(
        _ request: Request, context: LedgerRequestContext,
        next: (Request, LedgerRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxUploadSize = limits.maximumBody
        // Every wait the request makes on the database ends by this instant (`RequestDeadline`);
        // the refusal is a 503 with `Retry-After`, made where the request's error is answered.
        // A long poll is given its `wait` on top (at most what the feed accepts; a `wait` it
        // refuses is refused before anything waits).
        let waiting = request.uri.queryParameters["wait"].flatMap { Int($0) }.map {
            Duration.seconds(min(max($0, 0), ChangesController.longestWait))
        }
        return try await RequestDeadline.$current.withValue(.now + limits.deadline + (waiting ?? .zero)) {
            try await next(request, context)
        }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let xRequestID = HTTPField.Name("X-Request-Id")!
}

/// Gives every request an id (`LedgerRequestContext.requestID`) and answers it in `X-Request-Id`,
/// so a client, the logs and the audit log name the same request: every line logged meanwhile
/// carries it (`RequestLogging`).
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let given = request.headers[.xRequestID], Self.isPlain(given) { context.requestID = given }
        let traceID = request.headers[.traceparent].flatMap(Spans.traceID(traceparent:))
        var response = try await RequestLogging.$current.withValue(.init(requestID: context.requestID, traceID: traceID)) {
            try await next(request, context)
        }
        response.headers[.xRequestID] = context.requestID
        return response
    }

    /// 1–128 letters, digits, '-', '_' or '.': what a client's id may be to be kept as it is.
    static func isPlain(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                    || (0x61...0x7A).contains($0)
            }
    }
}
