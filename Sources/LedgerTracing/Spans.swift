import Tracing

/// Spans for work done inside an operation somebody traces: a request, a worker's batch, a
/// webhook attempt. Outside one (a worker's idle poll, a listener's ping) the work runs bare:
/// each of those would otherwise start a trace of its own, many a second, all saying nothing.
///
/// With no tracer configured every span is swift-distributed-tracing's no-op: the cost is a
/// task-local read and a closure call.
package enum Spans {
    /// Whether a trace is being recorded here: the work of a traced operation that was sampled,
    /// on whatever task or thread it runs (the pool hands the context to its threads).
    package static var inTrace: Bool { recordedContext != nil }

    /// The current context, when its operation's span records. An operation the sampler left out
    /// (99 of 100 at 1 %) makes no child spans at all: each would be created, given ids and
    /// thrown away, and user-state reads lost a sixth of their rate to that at 1 %.
    private static var recordedContext: ServiceContext? {
        guard let context = ServiceContext.current, context[RecordingKey.self] != false else { return nil }
        return context
    }

    /// `span`'s context, marked with whether it records, for the work done under it.
    package static func context(of span: any Span) -> ServiceContext {
        var context = span.context
        context[RecordingKey.self] = span.isRecording
        return context
    }

    /// Whether `context` is that of work under a span the ledger started (and so of a trace
    /// already decided).
    package static func isMarked(_ context: ServiceContext) -> Bool {
        context[RecordingKey.self] != nil
    }

    package static func child<T>(
        _ name: @autoclosure () -> String, kind: SpanKind = .internal, _ body: ((any Span)?) throws -> T
    ) rethrows -> T {
        guard let context = recordedContext else { return try body(nil) }
        return try withSpan(name(), context: context, ofKind: kind) { span in try body(span) }
    }

    package static func child<T>(
        _ name: @autoclosure () -> String, kind: SpanKind = .internal, isolation: isolated (any Actor)? = #isolation,
        _ body: ((any Span)?) async throws -> T
    ) async rethrows -> T {
        guard let context = recordedContext else { return try await body(nil) }
        return try await withSpan(name(), context: context, ofKind: kind) { span in try await body(span) }
    }

    /// A span of its own for work already done, recorded only when there was something to it: a
    /// projection batch is known to have had events only once it has read them, and an empty
    /// poll is not worth a trace.
    package static func record(
        _ name: String, startedAt start: DefaultTracerClock.Instant, attributes: (inout SpanAttributes) -> Void
    ) {
        let span = startSpan(name, context: .topLevel, at: start)
        guard span.isRecording else { return span.end() }
        span.updateAttributes(attributes)
        span.end()
    }
}

extension Spans {
    /// The W3C `traceparent` of the current context, when it is part of a sampled trace: what
    /// work done later (a webhook delivery of what this request recorded) continues. Nil without
    /// a tracer, outside a trace, or when the trace is not sampled (nothing would show it).
    package static func traceparent(of context: ServiceContext? = .current) -> String? {
        guard let context, context[RecordingKey.self] != false else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        guard let value = carrier["traceparent"], value.hasSuffix("-01") else { return nil }
        return value
    }

    /// The context a stored or received `traceparent` names, for spans that continue its trace.
    package static func context(traceparent: String) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(["traceparent": traceparent], into: &context, using: DictionaryExtractor())
        return context
    }

    /// Headers (`traceparent`, `tracestate`, `baggage`) that carry `context` to another service.
    package static func headers(for context: ServiceContext) -> [String: String] {
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        return carrier
    }
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key.lowercased()] = value }
}

private struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key.lowercased()] }
}

extension Spans {
    /// The trace id of `context` (32 hex digits), sampled or not; nil without a tracer.
    package static func traceID(of context: ServiceContext) -> String? {
        headers(for: context)["traceparent"].flatMap(traceID(traceparent:))
    }

    /// The trace id of a `traceparent` (W3C Trace Context, version 00:
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`); nil when it is not one.
    package static func traceID(traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "00", parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts[1].allSatisfy(\.isHexDigit), parts[2].allSatisfy(\.isHexDigit), parts[3].allSatisfy(\.isHexDigit),
            parts[1].contains(where: { $0 != "0" }), parts[1] == parts[1].lowercased()
        else { return nil }
        return String(parts[1])
    }
}

/// Whether the span a context belongs to records (set by `Spans.context(of:)`).
private enum RecordingKey: ServiceContextKey {
    typealias Value = Bool
}
