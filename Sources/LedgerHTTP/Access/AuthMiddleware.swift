import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Finds the API key of a `/v1` request (`Authorization: Bearer <key>`). Routes then check the
/// scope and app they need with `context.authorize`. Keys are never logged.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let keys: APIKeyStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw LedgerError(.missingAPIKey, "send Authorization: Bearer <key>")
        }
        guard let secret = Self.bearerToken(header) else {
            throw LedgerError(.invalidAPIKey, "the Authorization header must be Bearer <key>")
        }
        let key: APIKey?
        do {
            key = try await keys.authenticate(secret)
        } catch {
            throw LedgerError(.databaseUnavailable, "the database is unavailable; try again shortly")
        }
        guard let key else { throw LedgerError(.invalidAPIKey, "this key is unknown or revoked") }
        var context = context
        context.key = key
        return try await next(request, context)
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, spaces around the token ignored).
    /// Read on the UTF-8 bytes: every `/v1` request passes here, and Foundation's trimming and
    /// lower-casing showed in the user-state profile (dynamic casts, generic metadata).
    static func bearerToken(_ header: String) -> String? {
        let bytes = header.utf8
        guard bytes.count > 7, let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme = bytes[..<space]
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let rest = bytes[bytes.index(after: space)...]
        guard let first = rest.firstIndex(where: { $0 != UInt8(ascii: " ") }),
            let last = rest.lastIndex(where: { $0 != UInt8(ascii: " ") })
        else { return nil }
        return String(decoding: rest[first...last], as: UTF8.self)
    }
}
