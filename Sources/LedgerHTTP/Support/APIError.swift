import Foundation
import Hummingbird
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import Logging

/// The one error shape every route answers with:
/// `{"error": {"code": "snake_case", "message": "human sentence"}}`.
package struct APIError: Error, Sendable {
    package var status: HTTPResponse.Status
    package var code: String
    package var message: String
    /// Seconds, for 503s.
    package var retryAfter: Int?

    package init(_ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    init(_ error: LedgerError) {
        switch error.kind {
        case .invalid: self.init(.badRequest, error.code, error.message)
        case .notFound: self.init(.notFound, error.code, error.message)
        case .conflict: self.init(.conflict, error.code, error.message)
        case .unverifiable: self.init(.unprocessableContent, error.code, error.message)
        case .unavailable: self.init(.serviceUnavailable, error.code, error.message, retryAfter: 5)
        }
    }

    static func invalid(_ code: String, _ message: String) -> APIError { APIError(.badRequest, code, message) }

    var response: Response {
        struct Body: Encodable {
            struct Detail: Encodable { var code: String; var message: String }
            var error: Detail
        }
        let data = (try? JSONEncoder().encode(Body(error: .init(code: code, message: message)))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every failure into the error shape. Nothing a client sends should surface as a 500;
/// a 500 here means a bug, and is logged as one.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as LedgerError {
            if let cause = error.underlying {
                // Logged once, here where the request ends; the caller gets only the code and sentence.
                context.logger.warning("request refused", metadata: ["code": "\(error.code)", "cause": "\(cause)", "path": "\(request.uri.path)"])
            }
            return APIError(error).response
        } catch let error as PostgresError {
            return Self.database(error, request: request, context: context)
        } catch EventStoreError.database(let error) {
            return Self.database(error, request: request, context: context)
        } catch let error as HTTPError {
            let code = switch error.status {
            case .notFound: "not_found"
            case .contentTooLarge: "body_too_large"
            case .methodNotAllowed: "method_not_allowed"
            default: "http_\(error.status.code)"
            }
            return APIError(error.status, code, error.body ?? error.status.reasonPhrase).response
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return APIError(.internalServerError, "internal_error", "the ledger failed unexpectedly; this is a bug").response
        }
    }

    /// 503 only for what passes (the database away or starting, a pool full, a serialisation
    /// failure); anything else is a fault, logged once here with PostgreSQL's words (redacted of
    /// the statement's values), and a 500 without them: no database text reaches a client.
    static func database(_ error: PostgresError, request: Request, context: Context) -> Response {
        if error.isTransient {
            context.logger.warning("database unavailable", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return APIError(.serviceUnavailable, "database_unavailable", "the database is unavailable; try again shortly", retryAfter: 5).response
        }
        context.logger.error("database failure", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
        return APIError(.internalServerError, "internal_error", "the ledger failed unexpectedly; the server's log has the cause").response
    }
}
