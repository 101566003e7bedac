import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerWebhooks

/// Webhooks (`admin`): `PUT`, `GET` and `DELETE /v1/apps/{bundle_id}/webhooks/{name}`, the list,
/// the changes parked after their retry window, and a replay from a position.
struct WebhooksController {
    let directory: AppDirectory
    let registry: WebhookRegistry
    let audit: AuditLog

    struct Definition: Decodable {
        var url: String
        var secret: String
        var types: [String]?
    }

    struct Listed: Encodable {
        var name: String
        var url: String
        /// Null when absent: clients read a fixed shape.
        @ExplicitNull var types: [String]?
        var starts_after: Int64
        var created_at: String
        var updated_at: String
        var users_waiting: Int
        var users_failing: Int

        init(_ webhook: Webhook) {
            (name, url, starts_after) = (webhook.name, webhook.shownURL, webhook.startsAfter)
            types = webhook.types
            (created_at, updated_at) = (RFC3339.string(webhook.createdAt), RFC3339.string(webhook.updatedAt))
            (users_waiting, users_failing) = (webhook.backlog, webhook.failing)
        }
    }

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.put("/apps/:bundle_id/webhooks/:name", use: define)
        group.get("/apps/:bundle_id/webhooks", use: list)
        group.get("/apps/:bundle_id/webhooks/:name", use: webhook)
        group.delete("/apps/:bundle_id/webhooks/:name", use: remove)
        group.get("/apps/:bundle_id/webhooks/:name/failures", use: failures)
        group.post("/apps/:bundle_id/webhooks/:name/replay", use: replay)
    }

    /// Creates the webhook (201) or replaces its definition (200).
    @Sendable func define(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let name = try context.parameters.require("name")
        _ = try await directory.app(bundleID)
        let body = try await JSONBody.decode(Definition.self, from: request, context: context)
        try WebhookRegistry.validate(name: name, url: body.url, secret: body.secret, types: body.types)
        let before = try await registry.list(bundleID: bundleID).first { $0.name == name }.map(Listed.init)
        let created = try await registry.put(bundleID: bundleID, name: name, url: body.url, secret: body.secret, types: body.types)
        let listed = try await registry.list(bundleID: bundleID).first { $0.name == name }.map(Listed.init)
        try await context.audit(
            audit, "webhook.defined", target: "\(bundleID)/webhooks/\(name)", bundleID: bundleID, before: before, after: listed)
        return try JSONBody.response(listed, status: created ? .created : .ok)
    }

    @Sendable func list(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        _ = try await directory.app(bundleID)
        struct List: Encodable { var webhooks: [Listed] }
        return try JSONBody.response(List(webhooks: try await registry.list(bundleID: bundleID).map(Listed.init)))
    }

    @Sendable func webhook(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let name = try context.parameters.require("name")
        guard let webhook = try await registry.list(bundleID: bundleID).first(where: { $0.name == name }) else { throw Self.unknown(name) }
        return try JSONBody.response(Listed(webhook))
    }

    @Sendable func remove(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let name = try context.parameters.require("name")
        let before = try await registry.list(bundleID: bundleID).first { $0.name == name }.map(Listed.init)
        guard try await registry.delete(bundleID: bundleID, name: name) else { throw Self.unknown(name) }
        try await context.audit(audit, "webhook.deleted", target: "\(bundleID)/webhooks/\(name)", bundleID: bundleID, before: before)
        return Response(status: .noContent)
    }

    /// The changes parked after their retry window, for an operator to look at before a replay.
    @Sendable func failures(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let name = try context.parameters.require("name")
        guard let parked = try await registry.failures(bundleID: bundleID, name: name, limit: try request.pageLimit()) else {
            throw Self.unknown(name)
        }
        struct Failure: Encodable {
            var position: Int64; var change_id: String; var user_id: String; var attempts: Int; var last_error: String?;
            var parked_at: String
        }
        struct Failures: Encodable { var failures: [Failure] }
        return try JSONBody.response(
            Failures(
                failures: parked.map {
                    Failure(
                        position: $0.position, change_id: $0.changeID, user_id: $0.userID, attempts: $0.attempts, last_error: $0.lastError,
                        parked_at: RFC3339.string($0.parkedAt))
                }))
    }

    /// Changes from a position queued again, parked ones included (202: the dispatcher sends them later).
    @Sendable func replay(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let name = try context.parameters.require("name")
        struct Replay: Decodable { var from_position: Int64 }
        let body = try await JSONBody.decode(Replay.self, from: request, context: context)
        guard body.from_position >= 1 else { throw LedgerError(.invalidPosition, "from_position is a change position, 1 or more") }
        guard let users = try await registry.replay(bundleID: bundleID, name: name, from: body.from_position) else {
            throw Self.unknown(name)
        }
        struct Replayed: Encodable { var from_position: Int64; var users: Int }
        let answer = Replayed(from_position: body.from_position, users: users)
        try await context.audit(audit, "webhook.replayed", target: "\(bundleID)/webhooks/\(name)", bundleID: bundleID, after: answer)
        return try JSONBody.response(answer, status: .accepted)
    }

    static func unknown(_ name: String) -> LedgerError {
        LedgerError(.unknownWebhook, "this app has no webhook named \(name)")
    }
}
