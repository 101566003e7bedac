import AppStoreServerAPI
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// What the operator asks of Apple about retention messages, through the ledger and the app's
/// In-App Purchase key: Apple's performance test, messages, images, default messages and the
/// realtime URL (`?environment=`: Production unless Sandbox).
extension RetentionController {
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

    /// Apple's environment a message call is for: `?environment=`, Production unless Sandbox.
    static func environment(_ request: Request) throws -> AppleEnvironment {
        switch request.uri.queryParameters["environment"].map(String.init) {
        case nil, "Production"?: return .production
        case "Sandbox"?: return .sandbox
        default: throw LedgerError(.invalidEnvironment, "environment is Production or Sandbox")
        }
    }

    static func uuid(_ context: LedgerRequestContext, _ name: String) throws -> UUID {
        guard let id = UUID(uuidString: try context.parameters.require(name)) else {
            throw LedgerError(.invalidRetention, "\(name) is a UUID the app chooses, e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138")
        }
        return id
    }

    /// A message for Apple's review (scope `admin`), checked against Apple's limits first.
    @Sendable func uploadMessage(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        struct Body: Decodable {
            struct Image: Decodable {
                var image_id: String
                var alt_text: String
            }
            struct Bullet: Decodable {
                var text: String
                var image_id: String
                var alt_text: String
            }
            var header: String
            var body: String
            var image: Image?
            var header_position: String?
            var bullet_points: [Bullet]?
        }
        let body = try await JSONBody.decode(Body.self, from: request, context: context)
        let id = try Self.uuid(context, "message_id")
        let message = RetentionMessage(
            // Image ids as the image uploads name them: lowercase.
            header: body.header, body: body.body,
            image: body.image.map { .init(imageIdentifier: $0.image_id.lowercased(), altText: $0.alt_text) },
            headerPosition: body.header_position,
            bulletPoints: body.bullet_points?.map { .init(text: $0.text, imageIdentifier: $0.image_id.lowercased(), altText: $0.alt_text) })
        try await lookups.uploadRetentionMessage(bundleID: bundleID, id: id, message, environment: try Self.environment(request))
        try await context.audit(audit, "app.retention_message_uploaded", target: bundleID, bundleID: bundleID, after: message)
        return try Self.json(["message_id": id.uuidString.lowercased(), "status": "uploaded"])
    }

    /// A PNG for Apple's review (scope `admin`): the body is the image, `?size=` FULL_SIZE or BULLET_POINT.
    @Sendable func uploadImage(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let id = try Self.uuid(context, "image_id")
        let png = try await JSONBody.bytes(request, context: context)
        try await lookups.uploadRetentionImage(
            bundleID: bundleID, id: id, png: png, size: request.uri.queryParameters["size"].map(String.init),
            environment: try Self.environment(request))
        try await context.audit(
            audit, "app.retention_image_uploaded", target: bundleID, bundleID: bundleID, after: id.uuidString.lowercased())
        return try Self.json(["image_id": id.uuidString.lowercased(), "status": "uploaded"])
    }

    /// Every message and image uploaded, with Apple's review state (scope `read`).
    @Sendable func messages(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        let (messages, images) = try await lookups.retentionMessages(bundleID: bundleID, environment: try Self.environment(request))
        return try Self.json([
            "messages": messages.map { ["message_id": $0.messageIdentifier, "state": $0.messageState ?? NSNull()] as [String: Any] },
            "images": images.map {
                ["image_id": $0.imageIdentifier, "state": $0.imageState ?? NSNull(), "size": $0.imageSize ?? NSNull()] as [String: Any]
            },
        ])
    }

    /// Where Apple sends its realtime requests (scope `admin`): `{"url"}`, `?environment=`.
    @Sendable func realtimeURL(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        struct Body: Decodable { var url: String }
        let body = try await JSONBody.decode(Body.self, from: request, context: context)
        let environment = try Self.environment(request)
        try await lookups.setRealtimeURL(bundleID: bundleID, url: body.url, environment: environment)
        try await context.audit(audit, "app.retention_realtime_url", target: bundleID, bundleID: bundleID, after: body.url)
        return try Self.json(["url": body.url, "environment": environment.rawValue])
    }

    /// The message Apple shows for a product in a locale when the realtime endpoint fails (scope `admin`).
    @Sendable func defaultMessage(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        struct Body: Decodable { var message: String }
        let body = try await JSONBody.decode(Body.self, from: request, context: context)
        guard let message = UUID(uuidString: body.message) else { throw LedgerError(.invalidRetention, "message is a message's UUID") }
        let product = try context.parameters.require("product_id")
        let locale = try context.parameters.require("locale")
        try await lookups.setDefaultRetentionMessage(
            bundleID: bundleID, productID: product, locale: locale, messageID: message, environment: try Self.environment(request))
        try await context.audit(
            audit, "app.retention_default_message", target: "\(bundleID)/\(product)/\(locale)", bundleID: bundleID,
            after: message.uuidString.lowercased())
        return try Self.json(["product_id": product, "locale": locale, "message": message.uuidString.lowercased()])
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
}
