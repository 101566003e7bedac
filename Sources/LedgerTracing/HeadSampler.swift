import Synchronization
import Tracing

/// The sampling decision for the first span of a trace, taken before the tracer is asked: a
/// request the ratio leaves out then costs one draw from a counter and gets the caller's context
/// back, with nothing under it recording.
///
/// Left to swift-otel's ratio sampler, each of those requests (99 of 100 at 1 %) was given a
/// trace id and a span id read from the kernel under a lock, a span context and a no-op span:
/// the bulk of what tracing cost a user-state read at 1 %. The tracer underneath is configured
/// to follow its parent (`parentbased_always_on`), so a span whose trace is already decided — a
/// caller's `traceparent`, a request's child — keeps that decision, as the parent-based ratio
/// sampler would; only the roots go through the ratio, here.
///
/// A dropped root has no trace id of its own, so its log lines carry none: nothing would be
/// kept under it anyway.
package final class HeadSampler: LegacyTracer, Sendable {
    private let tracer: any LegacyTracer
    /// A root is kept when its draw is below this (the ratio of 2⁶⁴); `nil` keeps every root.
    private let threshold: UInt64?
    private let counter: Atomic<UInt64>

    package init(_ tracer: any LegacyTracer, ratio: Double) {
        self.tracer = tracer
        self.threshold = ratio >= 1 ? nil : UInt64(max(0, ratio) * 0x1p64)
        self.counter = Atomic(UInt64.random(in: .min ... .max))
    }

    package func startAnySpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> any Span {
        let parent = context()
        if let threshold, isRoot(parent), draw() >= threshold { return NoOpTracer.NoOpSpan(context: parent) }
        return tracer.startAnySpan(
            operationName, context: parent, ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    /// Whether `context` belongs to no trace yet. Work under a span the ledger started is marked
    /// (`Spans.context(of:)`) and needs no look; otherwise the propagator is asked whether it has
    /// a trace to pass on, which for a context without one is a lookup that finds nothing.
    private func isRoot(_ context: ServiceContext) -> Bool {
        guard !Spans.isMarked(context) else { return false }
        var carrier = TraceFound()
        tracer.inject(context, into: &carrier, using: TraceFound.Injector())
        return !carrier.found
    }

    /// A uniform 64-bit draw: SplitMix64 over a shared counter, lock-free and with no system call.
    private func draw() -> UInt64 {
        var z = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    package func forceFlush() { tracer.forceFlush() }

    package func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        tracer.extract(carrier, into: &context, using: extractor)
    }

    package func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        tracer.inject(context, into: &carrier, using: injector)
    }
}

/// What the propagator would send: only whether it sent a `traceparent`.
private struct TraceFound {
    var found = false

    struct Injector: Tracing.Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout TraceFound) {
            if key.lowercased() == "traceparent" { carrier.found = true }
        }
    }
}
