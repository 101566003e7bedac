import LedgerTracing
import Synchronization
import Testing
import Tracing

/// The head sampler decides the roots alone, at its ratio, and hands every span of a trace
/// already decided to the tracer underneath: work under a span the ledger started, and a
/// caller's context that carries a `traceparent`.
@Suite struct HeadSamplerTests {
    @Test func aRootLeftOutNeverReachesTheTracerAndGetsItsParentsContextBack() {
        let tracer = CountingTracer()
        let sampler = HeadSampler(tracer, ratio: 0)
        var parent = ServiceContext.topLevel
        parent[Note.self] = "the caller's"
        let span = start(sampler, "GET /v1/apps/{bundle_id}/users/{user_id}", parent)
        #expect(!span.isRecording && span.context[Note.self] == "the caller's")
        #expect(tracer.started == 0)
    }

    @Test func spansOfATraceAlreadyDecidedGoToTheTracerWhateverTheRatio() {
        let tracer = CountingTracer()
        let sampler = HeadSampler(tracer, ratio: 0)
        // A caller's traceparent: the tracer's propagator has a trace to pass on.
        var caller = ServiceContext.topLevel
        caller[CountingTracer.Trace.self] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        #expect(start(sampler, "POST", caller).isRecording)
        // Work under a span the ledger started (and marked), recording or not.
        let request = start(tracer, "request", .topLevel)
        #expect(start(sampler, "SELECT", Spans.context(of: request)).isRecording)
        #expect(tracer.started == 3)
    }

    @Test func everyRootIsKeptAtOneAndAboutTheRatioOfThemBelowIt() {
        let all = CountingTracer()
        let one = HeadSampler(all, ratio: 1)
        for _ in 0..<1000 { _ = start(one, "root", .topLevel) }
        #expect(all.started == 1000)

        // 40,000 roots at 25 %: 10,000 expected, σ ≈ 87; five σ either side.
        let some = CountingTracer()
        let quarter = HeadSampler(some, ratio: 0.25)
        for _ in 0..<40_000 { _ = start(quarter, "root", .topLevel) }
        #expect((9_565...10_435).contains(some.started), "\(some.started)")
    }
}

private func start(_ tracer: any LegacyTracer, _ name: String, _ context: ServiceContext) -> any Span {
    tracer.startAnySpan(
        name, context: context, ofKind: .internal, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
}

private enum Note: ServiceContextKey { typealias Value = String }

/// A tracer underneath that records every span it is asked for; its propagator injects the
/// context's `Trace` as `traceparent`, as a real one would a span context.
private final class CountingTracer: LegacyTracer, Sendable {
    enum Trace: ServiceContextKey { typealias Value = String }
    private let count = Atomic(0)
    var started: Int { count.load(ordering: .relaxed) }

    func startAnySpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> any Span {
        count.add(1, ordering: .relaxed)
        var context = context()
        context[Trace.self] = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
        return RecordingSpan(context: context)
    }

    func forceFlush() {}
    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        if let trace = context[Trace.self] { injector.inject(trace, forKey: "traceparent", into: &carrier) }
    }
}

/// A span that says it records and keeps nothing.
private final class RecordingSpan: Span, Sendable {
    let context: ServiceContext
    init(context: ServiceContext) { self.context = context }
    var isRecording: Bool { true }
    var operationName: String {
        get { "" }
        set {}
    }
    var attributes: SpanAttributes {
        get { [:] }
        set {}
    }
    func setStatus(_ status: SpanStatus) {}
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {}
}
