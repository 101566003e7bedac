import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import LedgerProjections
import Logging

/// What the app and support do to a user directly: spend currency, grant and revoke promotional
/// access. Each is decided against the user's facts read from the log (not the projection, which
/// may be a batch behind) and appended with the user stream's version, so concurrent requests
/// cannot both spend the same coins.
public struct UserActions: Sendable {
    let store: EventStore
    let directory: AppDirectory
    let progress: ProjectionProgress?
    let logger: Logger

    public init(store: EventStore, directory: AppDirectory, progress: ProjectionProgress? = nil, logger: Logger) {
        self.store = store
        self.directory = directory
        self.progress = progress
        self.logger = logger
    }

    public struct ConsumptionResult: Sendable, Equatable {
        public var balance: Int64
        /// True when the idempotency key was seen before: nothing was spent this time.
        public var replayed: Bool
    }

    public func consume(bundleID: String, userID: String, currency: String, amount: Int64, idempotencyKey: String) async throws -> ConsumptionResult {
        try await LedgerError.mapping {
            try Ingestor.validate(userID: userID)
            guard !idempotencyKey.isEmpty, idempotencyKey.utf8.count <= 255 else {
                throw LedgerError(.invalid, "invalid_idempotency_key", "idempotency_key must be 1–255 bytes")
            }
            _ = try await directory.app(bundleID)
            let request = Consumption(userID: userID, currency: currency, amount: amount, idempotencyKey: idempotencyKey)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let id = StableID.make(stream, "Consumed", idempotencyKey)
            for _ in 0..<20 {
                let (version, ledger, previous) = try await load(bundleID: bundleID, userID: userID, lookingFor: id)
                if let previous {
                    guard case .consumed(let original) = previous.event, original == request else {
                        throw LedgerError(.conflict, "idempotency_key_reused", "this idempotency_key was used for a different consumption")
                    }
                    return ConsumptionResult(balance: previous.balanceAfter ?? ledger.userState(userID, at: Date()).balances[currency] ?? 0, replayed: true)
                }
                let now = Date()
                let balance = ledger.userState(userID, at: now).balances[currency] ?? 0
                switch Decide.consumption(request, balance: balance) {
                case .failure(.invalidAmount):
                    throw LedgerError(.invalid, "invalid_amount", "amount must be a positive whole number and currency non-empty")
                case .failure(.insufficientBalance(_, let balance, let requested)):
                    throw LedgerError(.conflict, "insufficient_balance", "the balance of \(currency) is \(balance), less than \(requested)")
                case .success(let consumption):
                    let data = String(decoding: try LedgerEvent.consumed(consumption).encodedData(), as: UTF8.self)
                    let event = NewEvent(id: id, type: "Consumed", data: data, metadata: #"{"balance_after": \#(balance - amount)}"#, occurredAt: now)
                    do {
                        let result = try await store.append([event], to: stream, expectedVersion: version == 0 ? .noStream : .exact(version))
                        try await caughtUp(result)
                        return ConsumptionResult(balance: balance - amount, replayed: false)
                    } catch EventStoreError.wrongExpectedVersion {
                        continue  // another action on this user won the race: decide again on fresh facts
                    }
                }
            }
            throw LedgerError(.unavailable, "contention", "too many concurrent changes to this user; try again")
        }
    }

    /// A promotional entitlement from support, from now until `expiresAt` (nil: until revoked).
    public func grant(bundleID: String, userID: String, entitlement: String, expiresAt: Date?, reason: String, grantID: String?) async throws -> PromotionalGrant {
        try await LedgerError.mapping {
            try Ingestor.validate(userID: userID)
            _ = try await directory.app(bundleID)
            let now = Date()
            guard !entitlement.isEmpty, !reason.isEmpty else {
                throw LedgerError(.invalid, "invalid_grant", "a grant names an entitlement and a reason")
            }
            if let expiresAt, expiresAt <= now { throw LedgerError(.invalid, "invalid_grant", "the grant would already have ended") }
            let grant = PromotionalGrant(grantID: grantID ?? UUID().uuidString.lowercased(), userID: userID, entitlement: entitlement,
                                         startsAt: now, expiresAt: expiresAt, reason: reason)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let id = StableID.make(stream, "PromotionalGranted", grant.grantID)
            let existing = try await store.readAll(stream: stream)
            if let earlier = existing.first(where: { $0.id == id }), let (_, fact) = try StoredFacts.fact(from: earlier),
               case .promotionalGranted(let recorded) = fact.event {
                return recorded  // the same grant id again: already granted
            }
            let (_, event) = try StoredFacts.append(.promotionalGranted(grant), bundleID: bundleID, id: id, occurredAt: now)
            try await caughtUp(try await store.append([event], to: stream))
            return grant
        }
    }

    /// Ends a promotional grant now.
    public func revokeGrant(bundleID: String, userID: String, grantID: String, reason: String) async throws {
        try await LedgerError.mapping {
            _ = try await directory.app(bundleID)
            let stream = LedgerStream.user(bundleID, userID: userID)
            let existing = try await store.readAll(stream: stream)
            let grants = try existing.compactMap { try StoredFacts.fact(from: $0)?.fact.event }
            guard grants.contains(where: { if case .promotionalGranted(let g) = $0 { g.grantID == grantID } else { false } }) else {
                throw LedgerError(.notFound, "unknown_grant", "user \(userID) has no grant \(grantID)")
            }
            let revocation = PromotionalRevocation(grantID: grantID, userID: userID, reason: reason.isEmpty ? "revoked" : reason)
            let id = StableID.make(stream, "PromotionalRevoked", grantID)
            guard !existing.contains(where: { $0.id == id }) else { return }
            let (_, event) = try StoredFacts.append(.promotionalRevoked(revocation), bundleID: bundleID, id: id, occurredAt: Date())
            try await caughtUp(try await store.append([event], to: stream))
        }
    }

    /// Read-your-writes: the caller's next read of the user sees this change.
    private func caughtUp(_ result: AppendResult) async throws {
        guard let position = result.events.last?.position else { return }
        try await ProjectionFreshness.wait(for: position, pool: store.pool, progress: progress, logger: logger)
    }

    /// The user stream's version (read first: a change after it makes the append fail, never
    /// pass on stale facts), the user's facts, and an earlier event with `id` if there is one.
    private func load(bundleID: String, userID: String, lookingFor id: UUID) async throws -> (Int64, AppLedger, Previous?) {
        let stream = LedgerStream.user(bundleID, userID: userID)
        let version = try await store.version(of: stream)
        let ledger = try await UserStateReader(pool: store.pool).ledger(bundleID: bundleID, userID: userID)
        let rows = try await store.pool.query(EventStore.selectEventsSQL + " WHERE e.event_id = $1", [id])
        let previous = try rows.first.flatMap { row -> Previous? in
            let recorded = try RecordedEvent(row: row)
            guard let (_, fact) = try StoredFacts.fact(from: recorded) else { return nil }
            let metadata = try? JSONSerialization.jsonObject(with: Data(recorded.metadata.utf8)) as? [String: Any]
            return Previous(event: fact.event, balanceAfter: (metadata?["balance_after"] as? NSNumber)?.int64Value)
        }
        return (version, ledger, previous)
    }

    struct Previous {
        var event: LedgerEvent
        var balanceAfter: Int64?
    }
}
