import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerProjections
import Logging

/// What the app and support do to a user directly: spend currency, grant and revoke promotional
/// access. Each is decided against the user's facts read from the log (not the projection, which
/// may be a batch behind) as the user stream's only writer (`EventStore.serialized`), so
/// concurrent requests cannot both spend the same coins and none is told to try again.
package struct UserActions: Sendable {
    let store: EventStore
    let directory: AppDirectory
    let freshness: ProjectionFreshness
    let logger: Logger

    package init(store: EventStore, directory: AppDirectory, freshness: ProjectionFreshness, logger: Logger) {
        self.store = store
        self.directory = directory
        self.freshness = freshness
        self.logger = logger
    }

    package struct ConsumptionResult: Sendable, Equatable {
        package var balance: Int64
        /// True when the idempotency key was seen before: nothing was spent this time.
        package var replayed: Bool
    }

    /// Spends `amount` of `currency`, from the lots that expire soonest; `reason` and `reference`
    /// say what it bought, in the game's words and by the game's id.
    package func consume(
        bundleID: String, userID: String, currency: String, amount: Int64, idempotencyKey: String, reason: String? = nil,
        reference: String? = nil
    ) async throws -> ConsumptionResult {
        try await LedgerError.mapping {
            try Identifier.userID.check(userID)
            try Identifier.idempotencyKey.check(idempotencyKey)
            try Identifier.currency.check(currency)
            if let reason { try Identifier.spendReason.check(reason) }
            if let reference { try Identifier.spendReference.check(reference) }
            try Self.known(currency, in: try await directory.app(bundleID))
            let request = Consumption(
                userID: userID, currency: currency, amount: amount, idempotencyKey: idempotencyKey, reason: reason, reference: reference)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let id = StableID.make(stream, LedgerEventType.consumed.rawValue, idempotencyKey)
            // Decided and appended as the stream's only writer: concurrent spends take turns, and
            // each is answered on the balance the one before it left (200 or 409, never "try again").
            let (result, appended) = try await store.serialized(on: stream) { locked -> (ConsumptionResult, AppendResult?) in
                let version = try locked.version()
                let ledger = try UserStateReader.ledger(bundleID: bundleID, userID: userID, on: locked.connection)
                if let previous = try Self.previous(locked.event(id: id)) {
                    guard case .consumed(let original) = previous.event, original == request else {
                        throw LedgerError(.idempotencyKeyReused, "this idempotency_key was used for a different consumption")
                    }
                    return (
                        ConsumptionResult(
                            balance: previous.balanceAfter ?? ledger.userState(userID, at: Date()).balances[currency] ?? 0,
                            replayed: true), nil
                    )
                }
                let now = Date()
                let balance = ledger.userState(userID, at: now).balances[currency] ?? 0
                switch Decide.consumption(request, balance: balance) {
                case .failure(.invalidAmount):
                    throw LedgerError(.invalidAmount, "amount must be a positive whole number and currency non-empty")
                case .failure(.insufficientBalance(_, let balance, let requested)):
                    throw LedgerError(.insufficientBalance, "the balance of \(currency) is \(balance), less than \(requested)")
                case .success(let consumption):
                    let data = String(decoding: try LedgerEvent.consumed(consumption).encodedData(), as: UTF8.self)
                    let event = NewEvent(
                        id: id, type: LedgerEventType.consumed.rawValue, data: data, metadata: #"{"balance_after": \#(balance - amount)}"#,
                        occurredAt: now)
                    let appended = try locked.append([event], expectedVersion: version == 0 ? .noStream : .exact(version))
                    return (ConsumptionResult(balance: balance - amount, replayed: false), appended)
                }
            }
            if let appended { try await caughtUp(appended) }
            return result
        }
    }

    /// A promotional entitlement from support, from now until `expiresAt` (nil: until revoked).
    /// `actor`: the API key's name, recorded with the grant.
    package func grant(
        bundleID: String, userID: String, entitlement: String, expiresAt: Date?, reason: String, grantID: String?,
        actor: String? = nil
    ) async throws -> PromotionalGrant {
        try await LedgerError.mapping {
            try Identifier.userID.check(userID)
            if let grantID { try Identifier.grantID.check(grantID) }
            _ = try await directory.app(bundleID)
            let now = Date()
            guard !entitlement.isEmpty, !reason.isEmpty else {
                throw LedgerError(.invalidGrant, "a grant names an entitlement and a reason")
            }
            try Identifier.entitlement.check(entitlement)
            if let expiresAt, expiresAt <= now { throw LedgerError(.invalidGrant, "the grant would already have ended") }
            let grant = PromotionalGrant(
                grantID: grantID ?? UUID().uuidString.lowercased(), userID: userID, entitlement: entitlement,
                startsAt: now, expiresAt: expiresAt, reason: reason, actor: actor)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let id = StableID.make(stream, LedgerEventType.promotionalGranted.rawValue, grant.grantID)
            let (recorded, appended) = try await store.serialized(on: stream) { locked -> (PromotionalGrant, AppendResult?) in
                if let earlier = try locked.event(id: id), let (_, fact) = try StoredFacts.fact(from: earlier),
                    case .promotionalGranted(let recorded) = fact.event
                {
                    return (recorded, nil) // the same grant id again: already granted
                }
                let (_, event) = try StoredFacts.newEvent(.promotionalGranted(grant), bundleID: bundleID, id: id, occurredAt: now)
                return (grant, try locked.append([event], expectedVersion: .any))
            }
            if let appended { try await caughtUp(appended) }
            return recorded
        }
    }

    /// Ends a promotional grant now.
    package func revokeGrant(bundleID: String, userID: String, grantID: String, reason: String, actor: String? = nil) async throws {
        try await LedgerError.mapping {
            try Identifier.userID.check(userID)
            try Identifier.grantID.check(grantID)
            _ = try await directory.app(bundleID)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let appended = try await store.serialized(on: stream) { locked -> AppendResult? in
                let existing = try locked.events()
                let grants = try existing.compactMap { try StoredFacts.fact(from: $0)?.fact.event }
                guard grants.contains(where: { if case .promotionalGranted(let g) = $0 { g.grantID == grantID } else { false } }) else {
                    throw LedgerError(.unknownGrant, "user \(userID) has no grant \(grantID)")
                }
                let revocation = PromotionalRevocation(
                    grantID: grantID, userID: userID, reason: reason.isEmpty ? "revoked" : reason, actor: actor)
                let id = StableID.make(stream, LedgerEventType.promotionalRevoked.rawValue, grantID)
                guard !existing.contains(where: { $0.id == id }) else { return nil }
                let (_, event) = try StoredFacts.newEvent(.promotionalRevoked(revocation), bundleID: bundleID, id: id, occurredAt: Date())
                return try locked.append([event], expectedVersion: .any)
            }
            if let appended { try await caughtUp(appended) }
        }
    }

    /// Read-your-writes: the caller's next read of the user sees this change.
    func caughtUp(_ result: AppendResult) async throws {
        guard let position = result.events.last?.position else { return }
        try await freshness.wait(for: position, logger: logger)
    }

    /// An earlier consumption under the same idempotency key, with the balance it left.
    private static func previous(_ recorded: RecordedEvent?) throws -> Previous? {
        guard let recorded, let (_, fact) = try StoredFacts.fact(from: recorded) else { return nil }
        let metadata = try? JSONSerialization.jsonObject(with: Data(recorded.metadata.utf8)) as? [String: Any]
        return Previous(event: fact.event, balanceAfter: (metadata?["balance_after"] as? NSNumber)?.int64Value)
    }

    struct Previous {
        var event: LedgerEvent
        var balanceAfter: Int64?
    }
}
