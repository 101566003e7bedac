import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// What the app's server does to a user's books (scope `ingest`): accounts merged into one, and
/// currency spent.
extension UsersController {
    /// Another user's purchases and balances moved into this user.
    @Sendable func merge(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let body = try await JSONBody.decode(Wire.MergeRequest.self, from: request, context: context)
        return JSONBody.response(bytes: Wire.userState(try await merges.merge(bundleID: bundleID, into: userID, from: body.from)))
    }

    /// Currency spent; the idempotency key makes a retried spend a replay, not a second debit.
    @Sendable func consume(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let body = try await JSONBody.decode(Wire.ConsumptionRequest.self, from: request, context: context)
        let result = try await actions.consume(
            bundleID: bundleID, userID: userID, currency: body.currency, amount: body.amount,
            idempotencyKey: body.idempotency_key, reason: body.reason, reference: body.reference)
        return try JSONBody.response(Wire.ConsumptionResponse(balance: result.balance, currency: body.currency, replayed: result.replayed))
    }
}
