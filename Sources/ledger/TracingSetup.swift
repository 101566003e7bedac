import Configuration
import Foundation
import LedgerSettings
import LedgerTracing
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry's standard variables that the ledger itself looks at, read through the command's
/// reader scoped to `otel` (`otel.traces.sampler` is `OTEL_TRACES_SAMPLER`). They are read
/// leniently, as OpenTelemetry specifies and as swift-otel, which reads the rest of them itself,
/// does: a sampler argument that is not a ratio counts as 1 rather than stopping the server.
///
/// - Configuration keys: `exporter.otlp.endpoint`, `exporter.otlp.traces.endpoint`,
///   `sdk.disabled`, `traces.exporter`, `traces.sampler`, `traces.sampler.arg`.
struct TracingSettings: Sendable {
    /// Where traces go: the traces endpoint, else the general one; nil when neither is set.
    var endpoint: String?
    /// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    var disabled = false
    /// The ratio of `OTEL_TRACES_SAMPLER=parentbased_traceidratio` (its `_ARG`, 1 when absent or
    /// not a number in [0, 1]); nil for every other sampler, which swift-otel applies as it is.
    /// Plain `traceidratio` ignores the parent's decision, which the head sampler's tracer follows,
    /// so it stays swift-otel's.
    var headRatio: Double?

    init() {}

    init(reader: ConfigReader) {
        let read = SettingsReader(reader)
        endpoint = read.text("exporter.otlp.traces.endpoint") ?? read.text("exporter.otlp.endpoint")
        disabled = read.text("sdk.disabled")?.lowercased() == "true" || read.text("traces.exporter")?.lowercased() == "none"
        if read.text("traces.sampler")?.lowercased() == "parentbased_traceidratio" {
            let ratio = read.text("traces.sampler.arg").flatMap(Double.init)
            headRatio = ratio.map { (0...1).contains($0) ? $0 : 1 } ?? 1
        }
    }

    /// An endpoint is set and nothing turns tracing off.
    var isWanted: Bool { endpoint != nil && !disabled }
}

/// Traces exported by OTLP/HTTP when OpenTelemetry's standard variables ask for it:
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, and neither
/// `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`. The rest is swift-otel's reading
/// of the same variables: `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER` and `_ARG`,
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, `http/json`), headers, batching.
///
/// Unset, nothing is bootstrapped: every span is swift-distributed-tracing's no-op, and no
/// event's trace is kept.
enum TracingSetup {
    /// Bootstraps the process's tracer when asked, and returns the service that exports its spans
    /// (to run first in the service group, so it stops last and sends the server's final spans).
    static func bootstrap(_ settings: TracingSettings, logger: Logger) throws -> (any Service)? {
        guard settings.isWanted, let endpoint = settings.endpoint else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "entitlement-ledger"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.diagnosticLogger = .custom(logger)
        // The ratio of a parent-based ratio sampler is applied by the ledger to the roots
        // (`HeadSampler`), before any id is made; swift-otel, which reads these variables itself,
        // is left to follow the parents.
        let ratio = settings.headRatio
        if ratio != nil {
            setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on", 1)
            unsetenv("OTEL_TRACES_SAMPLER_ARG")
            configuration.traces.sampler = .parentBasedAlwaysOn
        }
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(ratio.map { HeadSampler(tracer, ratio: $0) } ?? tracer)
        var metadata: Logger.Metadata = ["otel.endpoint": "\(Self.withoutQuery(endpoint))"]
        if let ratio { metadata["otel.head_sampling_ratio"] = "\(ratio)" }
        logger.info("traces are exported by OTLP", metadata: metadata)
        return service
    }

    /// The endpoint as logged: no query, which may carry a collector's key.
    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }
}
