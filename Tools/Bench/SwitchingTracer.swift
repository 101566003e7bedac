import Synchronization
import Tracing

/// One tracer for the process whose work goes to whichever tracer is selected: the tracing
/// benchmark measures the same server with tracing off and at two sampling ratios in one run,
/// while `InstrumentationSystem` can be bootstrapped only once. A `LegacyTracer` (deprecated, and
/// what the free `withSpan` functions still call): its spans are existentials, so one wrapper
/// can hand out any tracer's.
final class SwitchingTracer: LegacyTracer, Sendable {
    private let tracers: [String: any LegacyTracer]
    private let selected: Mutex<any LegacyTracer>

    init(_ tracers: [String: any LegacyTracer]) {
        self.tracers = tracers
        self.selected = Mutex(NoOpTracer())
    }

    func select(_ name: String) {
        guard let tracer = tracers[name] else { preconditionFailure("no tracer named \(name)") }
        selected.withLock { $0 = tracer }
    }

    private var current: any LegacyTracer { selected.withLock { $0 } }

    func startAnySpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> any Span {
        current.startAnySpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() { current.forceFlush() }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        current.extract(carrier, into: &context, using: extractor)
    }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        current.inject(context, into: &carrier, using: injector)
    }
}
