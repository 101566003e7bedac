import AppStoreServerAPI
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerFormats
import LedgerIngestion

/// Apple's Retention Messaging on the ledger: the realtime endpoint Apple calls when a subscriber
/// may be about to cancel (no API key: Apple signs the request), and the app's rules (`admin` to
/// set, `read` to see them with how each has fared).
struct RetentionController {
    let desk: RetentionDesk
    let lookups: AppleLookups
    let directory: AppDirectory
    let audit: AuditLog
    let metrics: Metrics

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.put("/apps/:bundle_id/retention", use: configure)
        group.get("/apps/:bundle_id/retention", use: rules)
        group.post("/apps/:bundle_id/retention/performance-test", use: startPerformanceTest)
        group.get("/apps/:bundle_id/retention/performance-test/:request_id", use: performanceTest)
    }

    func registerRealtime(on router: Router<LedgerRequestContext>) {
        router.post("/v1/apps/:bundle_id/apple/retention", use: realtime)
    }

    /// 200 with Apple's `RealtimeResponseBody` (`{}` when nothing applies and there is no
    /// default: Apple shows its own); 4xx for a request that is forged, for another app or for an
    /// app without rules — Apple shows its default then too.
    @Sendable func realtime(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.parameters.require("bundle_id")
        let body = try await JSONBody.bytes(request, context: context)
        do {
            let answer = try await desk.answer(bundleID: bundleID, body: body)
            metrics.increment("ledger_retention_requests_total", ["result": answer.decision?.answer ?? "none"])
            return JSONBody.response(bytes: answer.body)
        } catch let error as LedgerError {
            metrics.increment("ledger_retention_requests_total", ["result": error.code.rawValue])
            throw error
        }
    }

    /// The rules, replaced as a whole; the app's other settings are kept.
    @Sendable func configure(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let retention = try await JSONBody.decode(RetentionSettings.self, from: request, context: context)
        let app = try await directory.app(bundleID)
        if let problem = retention.problem(catalogue: app.products) { throw LedgerError(.invalidRetention, problem) }
        var settings = app.settings
        let before = settings.retention
        settings.retention = retention
        _ = try await directory.configure(bundleID, settings: settings, sharedSecret: nil)
        try await context.audit(audit, "app.retention_configured", target: bundleID, bundleID: bundleID, before: before, after: retention)
        return try await answer(bundleID, retention)
    }

    @Sendable func rules(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        guard let retention = try await directory.app(bundleID).settings.retention else {
            throw LedgerError(.retentionNotConfigured, "\(bundleID) has no retention rules; PUT /v1/apps/\(bundleID)/retention first")
        }
        return try await answer(bundleID, retention)
    }

    /// Apple's sandbox performance test of the realtime endpoint (scope `admin`): the sandbox
    /// realtime URL set first when `realtime_url` is given.
    @Sendable func startPerformanceTest(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        struct Body: Decodable {
            var original_transaction_id: String
            var realtime_url: String?
        }
        let body = try await JSONBody.decode(Body.self, from: request, context: context)
        let started = try await lookups.startRetentionPerformanceTest(
            bundleID: bundleID, originalTransactionID: body.original_transaction_id, realtimeURL: body.realtime_url)
        try await context.audit(audit, "app.retention_performance_test", target: bundleID, bundleID: bundleID, after: started.requestId)
        return try Self.json(["request_id": started.requestId, "config": Self.config(started.config)])
    }

    /// The test's result as Apple reports it (scope `read`): `PENDING`, `PASS` or `FAIL`.
    @Sendable func performanceTest(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        let result = try await lookups.retentionPerformanceTest(bundleID: bundleID, requestID: try context.parameters.require("request_id"))
        let times = result.responseTimes
        return try Self.json([
            "result": result.result, "target": result.target ?? NSNull(), "success_rate": result.successRate ?? NSNull(),
            "pending": result.numPending ?? NSNull(), "failures": result.failures ?? [:], "config": Self.config(result.config),
            "response_times_ms": [
                "average": times?.average ?? NSNull(), "p50": times?.p50 ?? NSNull(), "p90": times?.p90 ?? NSNull(),
                "p95": times?.p95 ?? NSNull(), "p99": times?.p99 ?? NSNull(),
            ] as [String: Any],
        ])
    }

    static func config(_ config: PerformanceTestConfig?) -> Any {
        guard let config else { return NSNull() }
        return [
            "max_concurrent_requests": config.maxConcurrentRequests ?? NSNull(), "total_requests": config.totalRequests ?? NSNull(),
            "total_duration_ms": config.totalDuration ?? NSNull(), "response_time_threshold_ms": config.responseTimeThreshold ?? NSNull(),
            "success_rate_threshold": config.successRateThreshold ?? NSNull(),
        ] as [String: Any]
    }

    static func json(_ object: [String: Any]) throws -> Response {
        JSONBody.response(
            bytes: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])))
    }

    /// The rules as set, and each rule's outcomes so far (`rule` null: the default message).
    private func answer(_ bundleID: String, _ retention: RetentionSettings) async throws -> Response {
        let outcomes = try await desk.outcomes(bundleID: bundleID)
        var object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(retention)) as? [String: Any] ?? [:]
        object["outcomes"] = outcomes.map { ["rule": $0.rule ?? NSNull(), "shown": $0.shown, "saved": $0.saved] as [String: Any] }
        return JSONBody.response(bytes: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
    }
}
