import Foundation
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
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        let endpoint = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? ""
        logger.info("traces are exported by OTLP", metadata: ["otel.endpoint": "\(Self.withoutQuery(endpoint))"])
        return service
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
