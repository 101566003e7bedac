import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerProjections

/// A user's currencies beyond spending: the game server's own grants (`admin`, with a reason),
/// spends it takes back (`ingest`, as it spent them), and every movement with its lots (`read`).
extension UsersController {
    @Sendable func grantCurrency(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.admin)
        let currency = try context.parameters.require("code")
        let body = try await JSONBody.decode(Wire.CurrencyGrantRequest.self, from: request, context: context)
        let expiresAt = try Wire.instant(body.expires_at, field: "expires_at", refusedAs: .invalidGrant)
        let result = try await actions.grantCurrency(
            bundleID: bundleID, userID: userID, currency: currency, amount: body.amount, reason: body.reason, grantID: body.grant_id,
            expiresAt: expiresAt, actor: context.key?.name)
        if !result.replayed {
            struct Granted: Encodable { var currency: String; var amount: Int64; var reason: String }
            try await context.audit(
                audit, "currency.granted", target: "\(bundleID)/users/\(userID)/currencies/\(currency)", bundleID: bundleID,
                after: Granted(currency: currency, amount: body.amount, reason: body.reason))
        }
        return try JSONBody.response(
            Wire.ConsumptionResponse(balance: result.balance, currency: currency, replayed: result.replayed),
            status: result.replayed ? .ok : .created)
    }

    @Sendable func reverseSpend(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let key = try context.parameters.require("idempotency_key")
        let body = try await JSONBody.decode(Wire.SpendReversalRequest.self, from: request, context: context)
        let result = try await actions.reverseSpend(
            bundleID: bundleID, userID: userID, idempotencyKey: key, reason: body.reason, actor: context.key?.name)
        struct Reversed: Encodable { var idempotency_key: String; var balance: Int64; var replayed: Bool }
        return try JSONBody.response(Reversed(idempotency_key: key, balance: result.balance, replayed: result.replayed))
    }

    /// Every movement of one currency, oldest first, each with the lots it drew from or gave to,
    /// a page after a cursor (the number of movements already seen); as of `at` / `known_at`.
    @Sendable func currencyHistory(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.read)
        let currency = try context.parameters.require("code")
        try UserActions.known(currency, in: try await directory.app(bundleID))
        let after = try request.cursor(), limit = try request.pageLimit()
        let (at, knownAt) = try Self.instants(request)
        let instant = at ?? knownAt ?? Date()
        let state = try await reader.state(
            bundleID: bundleID, userID: userID, at: instant, knownAt: knownAt,
            atLeast: PositionMiddleware<LedgerRequestContext>.readAfter(request))
        let (wallet, all) = Wallet.replay(state.balanceEntries.filter { $0.currency == currency }, until: instant)
        let movements = all.enumerated().dropFirst(Int(clamping: after)).prefix(limit).map { index, movement in
            Wire.CurrencyMovement(position: index + 1, movement)
        }
        let next = all.count > Int(clamping: after) + limit ? movements.last.map { String($0.position) } : nil
        return try JSONBody.response(
            Wire.CurrencyHistory(
                currency: currency, as_of: RFC3339.string(instant), balance: wallet.balances[currency] ?? 0,
                debt: wallet.debt[currency] ?? 0,
                lots: wallet.lots.filter { $0.remaining > 0 }.map(Wire.CurrencyLot.init), movements: Array(movements), next: next))
    }
}

extension Wire {
    struct CurrencyLot: Encodable {
        var lot: String
        var granted: Int64
        var remaining: Int64
        var granted_at: String
        var expires_at: String?

        init(_ lot: Wallet.Lot) {
            self.lot = lot.reference
            granted = lot.granted
            remaining = lot.remaining
            granted_at = RFC3339.string(lot.grantedAt)
            expires_at = lot.expiresAt.map(RFC3339.string)
        }
    }

    struct CurrencyMovement: Encodable {
        struct Share: Encodable { var lot: String; var amount: Int64 }
        var position: Int
        var kind: String
        var amount: Int64
        var at: String
        var reference: String
        /// What moved it: purchase, renewal, grant, spend, refund, refund_reversed, spend_reversed, moved; absent for an expiry.
        var origin: String?
        var reason: String?
        var detail: String?
        var lots: [Share]
        var balance_after: Int64

        init(position: Int, _ movement: Wallet.Movement) {
            self.position = position
            kind = movement.kind.rawValue
            amount = movement.amount
            at = RFC3339.string(movement.at)
            reference = movement.reference
            origin = movement.origin?.rawValue
            reason = movement.reason
            detail = movement.detail
            lots = movement.lots.map { Share(lot: $0.lot, amount: $0.amount) }
            balance_after = movement.balanceAfter
        }
    }

    struct CurrencyHistory: Encodable {
        var currency: String
        var as_of: String
        var balance: Int64
        var debt: Int64
        /// The lots with something left, soonest to expire first as spends draw on them.
        var lots: [CurrencyLot]
        var movements: [CurrencyMovement]
        var next: String?
    }
}
