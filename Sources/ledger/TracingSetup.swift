import Foundation
import LedgerTracing
import Logging
import OTel
import ServiceLifecycle
import Tracing

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
    static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws -> (any Service)? {
        guard isWanted(environment) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "entitlement-ledger"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.diagnosticLogger = .custom(logger)
        // The ratio of a parent-based ratio sampler is applied by the ledger to the roots
        // (`HeadSampler`), before any id is made; swift-otel, which reads these variables itself,
        // is left to follow the parents.
        let ratio = headRatio(environment)
        if ratio != nil {
            setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on", 1)
            unsetenv("OTEL_TRACES_SAMPLER_ARG")
            configuration.traces.sampler = .parentBasedAlwaysOn
        }
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(ratio.map { HeadSampler(tracer, ratio: $0) } ?? tracer)
        let endpoint = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? ""
        var metadata: Logger.Metadata = ["otel.endpoint": "\(Self.withoutQuery(endpoint))"]
        if let ratio { metadata["otel.head_sampling_ratio"] = "\(ratio)" }
        logger.info("traces are exported by OTLP", metadata: metadata)
        return service
    }

    /// The ratio of `OTEL_TRACES_SAMPLER=parentbased_traceidratio` (its `_ARG`, 1 when absent or
    /// not a number in [0, 1], as OpenTelemetry specifies); nil for every other sampler, which
    /// swift-otel applies as it is. Plain `traceidratio` ignores the parent's decision, which the
    /// head sampler's tracer follows, so it stays swift-otel's.
    static func headRatio(_ environment: [String: String]) -> Double? {
        guard environment["OTEL_TRACES_SAMPLER"]?.lowercased() == "parentbased_traceidratio" else { return nil }
        guard let ratio = environment["OTEL_TRACES_SAMPLER_ARG"].flatMap(Double.init), (0...1).contains(ratio) else { return 1 }
        return ratio
    }

    static func isWanted(_ environment: [String: String]) -> Bool {
        let endpoint = [environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], environment["OTEL_EXPORTER_OTLP_ENDPOINT"]]
            .contains { !($0 ?? "").isEmpty }
        let disabled = environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" || environment["OTEL_TRACES_EXPORTER"]?.lowercased() == "none"
        return endpoint && !disabled
    }

    /// The endpoint as logged: no query, which may carry a collector's key.
    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" })
    }
}
