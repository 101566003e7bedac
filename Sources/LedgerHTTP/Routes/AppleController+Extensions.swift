import AppStoreServerAPI
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Renewal-date extensions asked of Apple by support (scope `admin`): one subscription, or every
/// active subscriber of a product, and the progress of the latter.
extension AppleController {
    /// One subscription's renewal date moved by Apple; the audit keeps what was asked and answered.
    @Sendable func extend(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await askExtension(request, context, of: "original_transaction_id", "subscription.extended", on: "subscriptions") {
            bundleID, original, body in
            let extended = try await lookups.extend(
                bundleID: bundleID, originalTransactionID: original, days: body.days, reasonCode: body.reason_code,
                requestID: body.request_id, actor: context.key?.name ?? "unknown")
            return Wire.Extended(
                original_transaction_id: extended.originalTransactionID,
                web_order_line_item_id: extended.webOrderLineItemID,
                effective_date: extended.effectiveDate.map(RFC3339.string))
        }
    }

    /// Every active subscriber of a product extended: Apple accepts the request and works through
    /// it later, so the answer is 202 and the progress is read with `extensionStatus`.
    @Sendable func extendAll(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await askExtension(
            request, context, of: "product_id", "product.extension_requested", on: "products", status: .accepted
        ) { bundleID, product, body in
            let requestID = try await lookups.extendAll(
                bundleID: bundleID, productID: product, days: body.days, reasonCode: body.reason_code,
                requestID: body.request_id, storefronts: body.storefronts ?? [],
                environment: try Self.environment(body.environment), actor: context.key?.name ?? "unknown")
            return Wire.MassExtension(request_id: requestID, complete: false, completed_at: nil, succeeded: nil, failed: nil)
        }
    }

    /// An extension asked of Apple for what the path's `parameter` names (under `collection`): the
    /// request decoded, asked by `ask`, and its answer returned — the audit keeps both as `action`.
    private func askExtension<Answer: Encodable>(
        _ request: Request, _ context: LedgerRequestContext, of parameter: String, _ action: String, on collection: String,
        status: HTTPResponse.Status = .ok, ask: (_ bundleID: String, _ id: String, Wire.ExtendRequest) async throws -> Answer
    ) async throws -> Response {
        let bundleID = try context.app(.admin)
        let id = try context.parameters.require(parameter)
        let body = try await JSONBody.decode(Wire.ExtendRequest.self, from: request, context: context)
        let answer = try await ask(bundleID, id, body)
        try await context.audit(
            audit, action, target: "\(bundleID)/\(collection)/\(id)", bundleID: bundleID, after: Wire.Asked(request: body, answer: answer))
        return try JSONBody.response(answer, status: status)
    }

    @Sendable func extensionStatus(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let status = try await lookups.extensionStatus(
            bundleID: bundleID, productID: try context.parameters.require("product_id"),
            requestID: try context.parameters.require("request_id"),
            environment: try Self.environment(request.uri.queryParameters.get("environment")))
        return try JSONBody.response(
            Wire.MassExtension(
                request_id: status.requestIdentifier ?? "", complete: status.complete ?? false,
                completed_at: status.completeDate.map { RFC3339.string(Date(timeIntervalSince1970: $0 / 1000)) },
                succeeded: status.succeededCount, failed: status.failedCount))
    }

    /// `Production` or `Sandbox`, as named; nil when not named.
    static func environment(_ name: String?) throws -> AppleEnvironment? {
        guard let name else { return nil }
        guard let environment = AppleEnvironment(rawValue: name) else {
            throw LedgerError(.invalidEnvironment, "environment is Production or Sandbox")
        }
        return environment
    }
}

extension Wire {
    /// What an extension asked of Apple and what Apple answered, for the audit log.
    struct Asked<Answer: Encodable>: Encodable {
        var request: ExtendRequest
        var answer: Answer
    }

    struct ExtendRequest: Codable {
        var days: Int
        /// Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
        var reason_code: Int
        /// Sending the same id again repeats the same request (a retry extends once).
        var request_id: String
        /// Mass extensions only: ISO 3166-1 alpha-3 storefronts (all when absent).
        var storefronts: [String]?
        /// Mass extensions only: Production (the default when the app takes it) or Sandbox.
        var environment: String?
    }

    struct Extended: Encodable {
        var original_transaction_id: String
        var web_order_line_item_id: String?
        var effective_date: String?
    }

    /// A mass extension as Apple reports it (`complete`, `completeDate`, `succeededCount`, `failedCount`).
    struct MassExtension: Encodable {
        var request_id: String
        var complete: Bool
        @ExplicitNull var completed_at: String?
        @ExplicitNull var succeeded: Int64?
        @ExplicitNull var failed: Int64?
    }
}
