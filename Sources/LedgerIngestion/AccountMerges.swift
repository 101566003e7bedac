import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerProjections
import Logging

/// Two accounts of one person made one (`POST …/users/{u}/merge`, typically a player who bought
/// while anonymous and then signed in): everything the other account holds moves to `u` as
/// recorded facts with the reason `merged` — never rewritten, so asked about an earlier instant
/// each account answers as it did then.
///
/// In three steps, each decided on what it reads as the writer of what it changes: every purchase
/// the account owns moves by an `ownershipTransferred` on its own stream; every appAccountToken
/// link moves on the token's stream; then, on both users' streams in one transaction, what is
/// left — balances (credits and debts) and active grants (`Decide.merge`). An interrupted merge
/// is finished by asking again, and asking again after it finished records nothing.
package struct AccountMerges: Sendable {
    let store: EventStore
    let directory: AppDirectory
    let tokens: AppAccountTokens
    let freshness: ProjectionFreshness
    let reader: UserStateReader
    let logger: Logger

    package init(
        store: EventStore, directory: AppDirectory, tokens: AppAccountTokens, freshness: ProjectionFreshness, reader: UserStateReader,
        logger: Logger
    ) {
        self.store = store
        self.directory = directory
        self.tokens = tokens
        self.freshness = freshness
        self.reader = reader
        self.logger = logger
    }

    /// Merges `from` into `into` and answers `into`'s state, which shows all of it.
    package func merge(bundleID: String, into: String, from: String) async throws -> UserState {
        try await LedgerError.mapping {
            try Identifier.userID.check(into)
            try Identifier.mergedUserID.check(from)
            guard into != from else {
                throw LedgerError(.invalidMerge, "an account cannot be merged into itself: name another user in from")
            }
            _ = try await directory.app(bundleID)
            var written: LogPosition?
            let owned = try await reader.ledger(bundleID: bundleID, userID: from).transactions(ownedBy: from).map(\.originalTransactionID)
            for original in Set(owned).sorted() {
                written = max(written, try await transfer(original, bundleID: bundleID, from: from, into: into))
            }
            for token in try await tokens.tokens(of: from, bundleID: bundleID) {
                try await tokens.move(token, from: from, to: into, bundleID: bundleID)
            }
            // What is left is read through the owners projection: it must show the transfers.
            if let written { try await freshness.wait(for: written, logger: logger) }
            if let moved = try await moveTheRest(bundleID: bundleID, from: from, into: into) {
                try await freshness.wait(for: moved, logger: logger)
                written = moved
            }
            return try await reader.currentState(bundleID: bundleID, userID: into, atLeast: written)
        }
    }

    /// One purchase, if `from` still owns it, stamped as `FactRecorder` stamps its decisions.
    private func transfer(_ original: String, bundleID: String, from: String, into: String) async throws -> LogPosition? {
        let stream = LedgerStream.purchase(bundleID, originalTransactionID: original)
        return try await store.serialized(on: stream) { locked -> LogPosition? in
            let existing = try locked.events()
            var history = AppLedger(bundleID: bundleID)
            for event in existing {
                if let (_, fact) = try StoredFacts.fact(from: event) { history.apply(fact) }
            }
            guard history.owner(of: original) == from else { return nil }
            let at = FactRecorder.decisionTime(after: existing, now: Date())
            let event = LedgerEvent.ownershipTransferred(
                Transfer(originalTransactionID: original, fromUserID: from, toUserID: into, reason: AccountMerge.reason))
            let id = StableID.make(stream, event.typeName, String(existing.count), from + "→" + into, AccountMerge.reason)
            let new = try StoredFacts.newEvent(event, bundleID: bundleID, id: id, occurredAt: at).event
            return try locked.append([new], expectedVersion: .exact(Int64(existing.count))).events.last?.position
        }
    }

    /// Balances and grants, out of one stream and into the other in one transaction.
    private func moveTheRest(bundleID: String, from: String, into: String) async throws -> LogPosition? {
        let streams = [LedgerStream.user(bundleID, userID: from), LedgerStream.user(bundleID, userID: into)]
        return try await store.serialized(on: streams) { locked -> LogPosition? in
            let now = Date()
            let (fromStream, intoStream) = (locked[0], locked[1])
            let ledger = try UserStateReader.ledger(bundleID: bundleID, userID: from, on: fromStream.connection)
            let fromFacts = try fromStream.events().compactMap { try StoredFacts.fact(from: $0)?.fact.event }
            let intoGrantIDs = Set(
                try intoStream.events().compactMap { event -> String? in
                    guard case .promotionalGranted(let grant)? = try StoredFacts.fact(from: event)?.fact.event else { return nil }
                    return grant.grantID
                })
            let decision = Decide.merge(
                from: from, into: into, balances: ledger.userState(from, at: now).balances, userFacts: fromFacts,
                intoGrantIDs: intoGrantIDs, now: now)
            guard !decision.isEmpty else { return nil }
            var last: LogPosition?
            for (side, events) in [(fromStream, decision.fromEvents), (intoStream, decision.intoEvents)] where !events.isEmpty {
                let version = try side.version()
                let new = try events.enumerated().map { index, event in
                    let id = StableID.make(side.stream, event.typeName, AccountMerge.reason, String(version), String(index))
                    return try StoredFacts.newEvent(event, bundleID: bundleID, id: id, occurredAt: now).event
                }
                last = max(last, try side.append(new, expectedVersion: version == 0 ? .noStream : .exact(version)).events.last?.position)
            }
            return last
        }
    }
}

/// The later of two optional positions.
private func max(_ a: LogPosition?, _ b: LogPosition?) -> LogPosition? {
    switch (a, b) {
    case (let a?, let b?): Swift.max(a, b)
    case (nil, let b): b
    case (let a, nil): a
    }
}
