import Foundation
import Hummingbird
import LedgerCore
import Logging

/// The one error shape every route answers with:
/// `{"error": {"code": "snake_case", "message": "human sentence"}}`; the error's kind decides the
/// status, and a 503 says when to come back.
extension LedgerError: HTTPResponseError {
    package var status: HTTPResponse.Status {
        switch kind {
        case .invalid: .badRequest
        case .unauthenticated: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .conflict: .conflict
        case .tooLarge: .contentTooLarge
        case .throttled: .tooManyRequests
        case .unverifiable: .unprocessableContent
        case .unavailable: .serviceUnavailable
        case .fault: .internalServerError
        }
    }

    /// Seconds a caller should wait before trying again, for what passes.
    static let retryAfterSeconds = 5

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONEncoder().encode(ErrorBody(error: .init(code: code.rawValue, message: message)))
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let seconds = retryAfter ?? (kind == .unavailable ? Self.retryAfterSeconds : nil) { headers[.retryAfter] = String(seconds) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// `{"error": {"code": …, "message": …}}`.
struct ErrorBody: Encodable {
    struct Detail: Encodable { var code: String; var message: String }
    var error: Detail
}

/// Turns every failure into the error shape. Nothing a client sends should surface as a 500;
/// a 500 here means a bug, and is logged as one.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // The router found no route: for a documented path, the method is what is wrong.
            guard let allowed = DocumentedMethods.allowed(for: request.uri.path), !allowed.contains(request.method.rawValue) else {
                return try Self.refusal(error).response(from: request, context: context)
            }
            let refusal = LedgerError(
                .methodNotAllowed, "\(request.method.rawValue) is not answered here; this path answers \(allowed.joined(separator: ", "))")
            var response = try refusal.response(from: request, context: context)
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch {
            let refusal = Self.refusal(error)
            // Logged once, here where the request ends; the caller gets only the code and sentence.
            let metadata: Logger.Metadata = [
                "code": "\(refusal.code)", "path": "\(request.uri.path)", "cause": "\(refusal.underlying.map { "\($0)" } ?? "-")",
            ]
            switch refusal.kind {
            case .fault: context.logger.error("request failed", metadata: metadata)
            case .unavailable: context.logger.warning("dependency unavailable", metadata: metadata)
            default: if refusal.underlying != nil { context.logger.warning("request refused", metadata: metadata) }
            }
            return try refusal.response(from: request, context: context)
        }
    }

    /// What the caller is told: a refusal as made; a lower layer's failure as it says it is
    /// answered (`LedgerErrorConvertible`); Hummingbird's own (an unknown route, a body too
    /// large); anything else a fault.
    static func refusal(_ error: any Error) -> LedgerError {
        switch error {
        case let error as LedgerError: return error
        case let error as any LedgerErrorConvertible: return error.ledgerError
        case let error as HTTPError:
            let message = error.body ?? error.status.reasonPhrase
            return switch error.status {
            case .notFound: LedgerError(.notFound, message)
            case .contentTooLarge: LedgerError(.bodyTooLarge, message)
            case .methodNotAllowed: LedgerError(.methodNotAllowed, message)
            case let status where (400..<500).contains(status.code): LedgerError(.invalidRequest, message)
            default: LedgerError(.internalError, "the ledger failed unexpectedly; this is a bug", underlying: error)
            }
        default:
            return LedgerError(.internalError, "the ledger failed unexpectedly; this is a bug", underlying: SendableDescription(error))
        }
    }
}

/// An error of a type that is not `Sendable`, kept as its description for the log.
struct SendableDescription: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = "\(error)" }
}
