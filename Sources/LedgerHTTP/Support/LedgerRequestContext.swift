import Foundation
import Hummingbird
import Logging

/// Per-request state: the authenticated key, once the auth middleware has found one.
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var key: APIKey?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    /// Bodies over this are refused with 413 (`LEDGER_MAX_BODY_BYTES`, default 1 MiB).
    public var maxUploadSize: Int { RequestLimits.maximumBody }

    /// The key must carry `scope` (admin carries all) and, if limited to one app, this app.
    func authorize(_ scope: Scope, _ bundleID: String) throws {
        guard let key else { throw APIError(.unauthorized, "missing_api_key", "send Authorization: Bearer <key>") }
        guard key.grants(scope) else {
            throw APIError(.forbidden, "insufficient_scope", "this key lacks the \(scope.rawValue) scope")
        }
        guard key.covers(bundleID: bundleID) else {
            throw APIError(.forbidden, "app_not_allowed", "this key is limited to another app")
        }
    }
}

public enum RequestLimits {
    /// Read once at start-up.
    public static let maximumBody: Int = {
        Int(ProcessInfo.processInfo.environment["LEDGER_MAX_BODY_BYTES"] ?? "") ?? 1 << 20
    }()
}
