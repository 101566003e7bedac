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
        group.put("/apps/:bundle_id/retention/messages/:message_id", use: uploadMessage)
        group.put("/apps/:bundle_id/retention/images/:image_id", use: uploadImage)
        group.get("/apps/:bundle_id/retention/messages", use: messages)
        group.put("/apps/:bundle_id/retention/defaults/:product_id/:locale", use: defaultMessage)
        group.put("/apps/:bundle_id/retention/realtime-url", use: realtimeURL)
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
            metrics.increment("ledger_retention_requests_total", ["result": answer.kind])
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

    /// The rules as set, and each rule's outcomes so far (`rule` null: the default message).
    private func answer(_ bundleID: String, _ retention: RetentionSettings) async throws -> Response {
        let outcomes = try await desk.outcomes(bundleID: bundleID)
        var object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(retention)) as? [String: Any] ?? [:]
        object["outcomes"] = outcomes.map { ["rule": $0.rule ?? NSNull(), "shown": $0.shown, "saved": $0.saved] as [String: Any] }
        return JSONBody.response(bytes: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
    }
}
