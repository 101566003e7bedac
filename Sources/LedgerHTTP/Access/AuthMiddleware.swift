import Foundation
import Hummingbird
import LedgerAccess
import LedgerIngestion

/// Finds the API key of a `/v1` request (`Authorization: Bearer <key>`). Routes then check the
/// scope and app they need with `context.authorize`. Keys are never logged.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let keys: APIKeyStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw APIError(.unauthorized, "missing_api_key", "send Authorization: Bearer <key>")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError(.unauthorized, "invalid_api_key", "the Authorization header must be Bearer <key>")
        }
        let key: APIKey?
        do {
            key = try await keys.authenticate(String(parts[1]).trimmingCharacters(in: .whitespaces))
        } catch {
            throw APIError(.serviceUnavailable, "database_unavailable", "the database is unavailable; try again shortly", retryAfter: 5)
        }
        guard let key else { throw APIError(.unauthorized, "invalid_api_key", "this key is unknown or revoked") }
        var context = context
        context.key = key
        return try await next(request, context)
    }
}
