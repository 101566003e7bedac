import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerProjections

/// What the game server does to a user's currencies besides spending: grants of its own (a
/// reward, a compensation) and spends it takes back. Each decided as the user stream's only
/// writer, like a spend, and idempotent: the same grant id or spend key again changes nothing.
extension UserActions {
    /// A spend, a grant or a history may name a currency set up for the app or one some product grants.
    package static func known(_ currency: String, in app: AppConfiguration) throws {
        guard app.catalogue.knowsCurrency(currency) else {
            throw LedgerError(
                .unknownCurrency,
                "currency \(currency) is neither set up for \(app.bundleID) (PUT /v1/apps/\(app.bundleID)/currencies/\(currency)) nor granted by any of its products"
            )
        }
    }

    /// What a grant or reversal left: the balance of its currency afterwards.
    package struct CurrencyResult: Sendable, Equatable {
        package var balance: Int64
        /// True when the grant id (or the spend's reversal) was recorded before: nothing moved now.
        package var replayed: Bool
    }

    /// Grants `amount` of `currency`, as a lot expiring by the currency's policy (or at
    /// `expiresAt`, if sooner).
    package func grantCurrency(
        bundleID: String, userID: String, currency: String, amount: Int64, reason: String, grantID: String?, expiresAt: Date?,
        actor: String?
    ) async throws -> CurrencyResult {
        try await LedgerError.mapping {
            try Identifier.userID.check(userID)
            try Identifier.currency.check(currency)
            if let grantID { try Identifier.grantID.check(grantID) }
            try Identifier.spendReason.check(reason)
            guard amount > 0 else { throw LedgerError(.invalidAmount, "amount must be a positive whole number") }
            let now = Date()
            if let expiresAt, expiresAt <= now { throw LedgerError(.invalidGrant, "expires_at is already past") }
            try Self.known(currency, in: try await directory.app(bundleID))
            let grant = CurrencyGrant(
                grantID: grantID ?? UUID().uuidString.lowercased(), userID: userID, currency: currency, amount: amount, reason: reason,
                expiresAt: expiresAt, actor: actor)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let id = StableID.make(stream, LedgerEventType.currencyGranted.rawValue, grant.grantID)
            let (result, appended) = try await store.serialized(on: stream) { locked -> (CurrencyResult, AppendResult?) in
                let ledger = try UserStateReader.ledger(bundleID: bundleID, userID: userID, on: locked.connection)
                let balance = ledger.userState(userID, at: now).balances[currency] ?? 0
                if let earlier = try locked.event(id: id), let (_, fact) = try StoredFacts.fact(from: earlier) {
                    guard case .currencyGranted(let recorded) = fact.event, recorded.currency == currency, recorded.amount == amount else {
                        throw LedgerError(.idempotencyKeyReused, "grant_id \(grant.grantID) was used for a different grant")
                    }
                    return (CurrencyResult(balance: balance, replayed: true), nil)
                }
                let (_, event) = try StoredFacts.newEvent(.currencyGranted(grant), bundleID: bundleID, id: id, occurredAt: now)
                let appended = try locked.append([event], expectedVersion: .any)
                let after = Self.balance(of: currency, for: userID, in: ledger, adding: .currencyGranted(grant), at: now)
                return (CurrencyResult(balance: after, replayed: false), appended)
            }
            if let appended { try await caughtUp(appended) }
            return result
        }
    }

    /// Takes back a spend the game made: what it drew goes back to its lots (what of them has
    /// expired since stays expired).
    package func reverseSpend(
        bundleID: String, userID: String, idempotencyKey: String, reason: String, actor: String?
    ) async throws -> CurrencyResult {
        try await LedgerError.mapping {
            try Identifier.userID.check(userID)
            try Identifier.idempotencyKey.check(idempotencyKey)
            try Identifier.spendReason.check(reason)
            _ = try await directory.app(bundleID)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let spendID = StableID.make(stream, LedgerEventType.consumed.rawValue, idempotencyKey)
            let id = StableID.make(stream, LedgerEventType.spendReversed.rawValue, idempotencyKey)
            let now = Date()
            let (result, appended) = try await store.serialized(on: stream) { locked -> (CurrencyResult, AppendResult?) in
                guard let spent = try locked.event(id: spendID), let (_, fact) = try StoredFacts.fact(from: spent),
                    case .consumed(let spend) = fact.event
                else { throw LedgerError(.unknownSpend, "user \(userID) has no spend with idempotency_key \(idempotencyKey)") }
                let ledger = try UserStateReader.ledger(bundleID: bundleID, userID: userID, on: locked.connection)
                if try locked.event(id: id) != nil {
                    return (CurrencyResult(balance: ledger.userState(userID, at: now).balances[spend.currency] ?? 0, replayed: true), nil)
                }
                let reversal = SpendReversal(userID: userID, idempotencyKey: idempotencyKey, reason: reason, actor: actor)
                let (_, event) = try StoredFacts.newEvent(.spendReversed(reversal), bundleID: bundleID, id: id, occurredAt: now)
                let appended = try locked.append([event], expectedVersion: .any)
                let after = Self.balance(of: spend.currency, for: userID, in: ledger, adding: .spendReversed(reversal), at: now)
                return (CurrencyResult(balance: after, replayed: false), appended)
            }
            if let appended { try await caughtUp(appended) }
            return result
        }
    }

    /// The balance once the fact just appended is counted.
    private static func balance(
        of currency: String, for userID: String, in ledger: AppLedger, adding event: LedgerEvent, at now: Date
    )
        -> Int64
    {
        var ledger = ledger
        ledger.apply(RecordedFact(event: event, occurredAt: now, sequence: .max))
        return ledger.userState(userID, at: now).balances[currency] ?? 0
    }
}
