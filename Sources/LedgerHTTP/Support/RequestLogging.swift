import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerTracing
import Logging
import Tracing

/// Which request a line of log is written for: every line logged while a request is handled — by
/// any logger, in any module — carries its `request_id` and, when the caller sent a W3C
/// `traceparent`, its `trace_id`, through swift-log's metadata provider (bootstrapped by the
/// command). So a slow answer's lines can be gathered by the id the client got back.
package enum RequestLogging {
    struct Current: Sendable {
        var requestID: String
        /// The trace id of the caller's `traceparent`.
        var traceID: String?
        /// The request's own trace, when a tracer is installed: its id is worked out only when a
        /// line is written (most requests write none).
        var trace: ServiceContext?
    }

    @TaskLocal static var current: Current?

    /// Give it to `LoggingSystem.bootstrap`.
    package static let metadataProvider = Logger.MetadataProvider {
        guard let current else { return [:] }
        var metadata: Logger.Metadata = ["request_id": .string(current.requestID)]
        if let traceID = current.trace.flatMap(Spans.traceID(of:)) ?? current.traceID { metadata["trace_id"] = .string(traceID) }
        return metadata
    }

}

extension HTTPField.Name {
    static let traceparent = HTTPField.Name("traceparent")!
}

/// One line per request, once it is answered: method, route pattern (never the path as sent nor
/// its query, which may carry ids and times a log has no business keeping), status and duration;
/// the request id and trace id come with it like with every line. Off with `LEDGER_ACCESS_LOG=false`.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let milliseconds = (ContinuousClock.now - start).seconds * 1000
        logger.info(
            "request",
            metadata: [
                "http.method": .string(request.method.rawValue), "http.route": .string(context.endpointPath ?? "unmatched"),
                "http.status": .stringConvertible(Int(response.status.code)), "duration_ms": .string(String(format: "%.3f", milliseconds)),
            ])
        return response
    }
}
