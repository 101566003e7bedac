import HTTPTypes
import Hummingbird
import LedgerTracing
import Tracing

/// One span per request, continuing the caller's W3C `traceparent` (a game server's trace goes on
/// through ours), with the work the request causes as its children: verification, Apple's
/// answers, the group commit, each PostgreSQL round trip, the wait for a replica.
///
/// Named by the route pattern ("POST /v1/apps/{bundleID}/transactions"), never the path as sent
/// nor its query: user ids and tokens in them would reach every store of traces, where no
/// erasure finds them. With no tracer configured the span is a no-op.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        // Most callers send no trace context: the propagators' lookups are skipped for them.
        if request.headers[.traceparent] != nil || request.headers[.baggage] != nil {
            InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: FieldsExtractor())
        }
        let method = request.method.rawValue
        let span = startSpan(method, context: parent, ofKind: .server)
        defer { span.end() }
        if span.isRecording {
            span.attributes["http.request.method"] = method
            span.attributes["ledger.request_id"] = context.requestID
        }
        // Lines logged meanwhile carry this trace's id, whether the caller sent one or not.
        var logging = RequestLogging.current ?? .init(requestID: context.requestID, traceID: nil)
        logging.trace = span.context
        do {
            let response: Response
            if span.isRecording || ServiceContext.current != nil {
                response = try await ServiceContext.$current.withValue(Spans.context(of: span)) {
                    try await RequestLogging.$current.withValue(logging) { try await next(request, context) }
                }
            } else {
                // Left out by the sampler: with no context bound, nothing under it records.
                response = try await RequestLogging.$current.withValue(logging) { try await next(request, context) }
            }
            describe(span, method: method, route: context.endpointPath, status: Int(response.status.code))
            return response
        } catch {
            describe(
                span, method: method, route: context.endpointPath,
                status: (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500)
            span.recordError(error)
            throw error
        }
    }

    private func describe(_ span: any Span, method: String, route: String?, status: Int) {
        guard span.isRecording else { return }
        span.operationName = "\(method) \(route ?? "unmatched")"
        span.attributes["http.route"] = route ?? "unmatched"
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

extension HTTPField.Name {
    static let baggage = HTTPField.Name("baggage")!
}

private struct FieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
