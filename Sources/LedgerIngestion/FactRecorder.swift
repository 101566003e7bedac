import Foundation
import LedgerCore
import LedgerEventStore
import LedgerProjections

/// Appends what a piece of evidence says, stream by stream, and — when a user presented it —
/// who owns each original transaction it names, decided by the app's restore policy against
/// the stream as read and appended with that stream's version (optimistic concurrency).
struct FactRecorder: Sendable {
    let store: EventStore

    struct Outcome: Sendable {
        /// The furthest position written (nil: everything was already recorded).
        var lastPosition: LogPosition?
        var originalTransactions: Set<String> = []
        /// Original transactions another user keeps (restore policy `keep`). Who that is stays
        /// here: naming them to the caller would disclose another user's id.
        var keptByAnother: Set<String> = []
    }

    /// Who is to own the original transactions a piece of evidence names.
    struct Claimant: Sendable {
        var user: @Sendable (_ originalTransactionID: String) -> String?
        var policy: RestorePolicy

        /// A user presented the evidence: everything it names is theirs, by the app's restore policy.
        static func presenter(_ userID: String, policy: RestorePolicy) -> Claimant {
            Claimant(user: { _ in userID }, policy: policy)
        }
        /// Apple sent it: a transaction nobody owns yet goes to the user its appAccountToken
        /// stands for. Never a transfer — a notification cannot take a purchase from its owner.
        static func tokenHolders(_ users: [String: String]) -> Claimant {
            Claimant(user: { users[$0] }, policy: .keep)
        }
        static let nobody = Claimant(user: { _ in nil }, policy: .keep)
    }

    func record(_ events: [LedgerEvent], bundleID: String, evidence: String?, claimant: Claimant, now: Date = Date()) async throws -> Outcome {
        var outcome = Outcome()
        var byStream: [String: [LedgerEvent]] = [:]
        var order: [String] = []
        for event in events {
            let stream = LedgerStream.stream(of: event, bundleID: bundleID)
            if byStream[stream] == nil { order.append(stream) }
            byStream[stream, default: []].append(event)
            if let original = event.originalTransactionID { outcome.originalTransactions.insert(original) }
        }
        for stream in order {
            let original = byStream[stream]!.compactMap(\.originalTransactionID).first
            let claim = original.flatMap { original in claimant.user(original).map { (original, $0) } }
            if let position = try await append(byStream[stream]!, to: stream, bundleID: bundleID, evidence: evidence,
                                               claim: claim, policy: claimant.policy, now: now, kept: &outcome.keptByAnother) {
                outcome.lastPosition = max(outcome.lastPosition ?? position, position)
            }
        }
        return outcome
    }

    /// One stream: skip what is already there, add the ownership decision, append; on a
    /// concurrent change, read again and decide again.
    private func append(_ events: [LedgerEvent], to stream: String, bundleID: String, evidence: String?,
                        claim: (original: String, user: String)?, policy: RestorePolicy, now: Date,
                        kept: inout Set<String>) async throws -> LogPosition? {
        let candidates = try events.map { event in
            let data = String(decoding: try event.encodedData(), as: UTF8.self)
            // A notification is identified by Apple's UUID: a redelivery is a no-op even if re-signed.
            let id = if case .appleNotificationReceived(let n) = event, let uuid = n.notificationUUID {
                StableID.make(bundleID, "notification", uuid)
            } else {
                StableID.make(stream, event.typeName, data)
            }
            return try StoredFacts.append(event, bundleID: bundleID, id: id, occurredAt: event.appleSignedDate ?? now, evidence: evidence).event
        }
        // The per-app notifications stream grows without bound and decides nothing: its events
        // are appended one by one, and their ids make a replay a no-op.
        guard stream.hasPrefix("purchase:") else {
            var last: LogPosition?
            for event in candidates {
                let result = try await store.append([event], to: stream)
                if !result.wasReplay { last = result.events.last?.position }
            }
            return last
        }
        for _ in 0..<10 {
            let existing = try await store.readAll(stream: stream)
            let known = Set(existing.map(\.id))
            if candidates.contains(where: { known.contains($0.id) && $0.type == "AppleNotificationReceived" }) {
                return nil  // this notification was recorded before, with everything it said
            }
            // Evidence restated later (a re-fetched StoreKit transaction, the same receipt asked
            // again) that differs from the latest fact in its slot only by when Apple stated it
            // adds nothing, and is not appended. Only the latest counts: auto-renew turned off
            // and then on again is two changes, not a repeat.
            var latest: [String: String] = [:]
            for event in existing {
                let (slot, content) = Self.slotAndContent(type: event.type, data: event.data)
                if let slot { latest[slot] = content }
            }
            var fresh = candidates.filter { candidate in
                guard !known.contains(candidate.id) else { return false }
                let (slot, content) = Self.slotAndContent(type: candidate.type, data: candidate.data)
                guard let slot, let previous = latest[slot] else { return true }
                return previous != content
            }
            var history = AppLedger(bundleID: bundleID)
            for event in existing { if let (_, fact) = try StoredFacts.fact(from: event) { history.apply(fact) } }
            if let claim {
                switch Decide.claim(claim.original, by: claim.user, currentOwner: history.owner(of: claim.original), policy: policy) {
                case .alreadyOwned: break
                case .claim(let decided):
                    fresh.append(try ownership(.transactionClaimed(decided), stream, bundleID, existing.count, now))
                case .transfer(let decided):
                    fresh.append(try ownership(.ownershipTransferred(decided), stream, bundleID, existing.count, now))
                case .refused:
                    kept.insert(claim.original)
                }
            }
            guard !fresh.isEmpty else { return nil }
            do {
                let version = existing.last?.version ?? 0
                let result = try await store.append(fresh, to: stream, expectedVersion: version == 0 ? .noStream : .exact(version))
                return result.events.last?.position
            } catch EventStoreError.wrongExpectedVersion {
                continue
            }
        }
        throw LedgerError(.unavailable, "contention", "stream \(stream) kept changing; try again")
    }

    /// Which of the domain's slots a fact fills (a transaction's snapshot, a subscription's renewal
    /// state, a transaction's revocation — each keeps only its latest-signed fact), and its type
    /// and data without Apple's statement time, canonically written. Nil slot: never deduplicated.
    static func slotAndContent(type: String, data: String) -> (slot: String?, content: String) {
        guard case .object(var members)? = try? JSONTree.parse(data) else { return (nil, type + data) }
        func string(_ key: String) -> String? {
            guard case .string(let value)? = JSONTree.member(key, of: members) else { return nil }
            return value
        }
        let slot: String? = switch type {
        case "Purchased", "Restored", "Renewed", "Recovered": string("transactionID").map { "transaction:" + $0 }
        case "AutoRenewChanged", "RenewalPreferenceChanged", "RenewalFailed", "Expired": string("originalTransactionID").map { "renewal:" + $0 }
        case "Refunded", "Revoked", "RefundReversed": string("transactionID").map { "revocation:" + $0 }
        default: nil
        }
        members.removeAll { $0.0 == "signedDate" }
        var canonical: [UInt8] = []
        JSONTree.object(members).sortingKeys().write(into: &canonical)
        return (slot, type + "\u{1F}" + String(decoding: canonical, as: UTF8.self))
    }

    /// Ownership decisions are told apart by the stream version they were decided at, so the same
    /// user can claim again after a transfer away, and a retried request is still a replay.
    private func ownership(_ event: LedgerEvent, _ stream: String, _ bundleID: String, _ version: Int, _ now: Date) throws -> NewEvent {
        try StoredFacts.append(event, bundleID: bundleID, id: StableID.make(stream, event.typeName, String(version), event.ownerDescription),
                               occurredAt: now).event
    }
}

extension LedgerEvent {
    fileprivate var ownerDescription: String {
        switch self {
        case .transactionClaimed(let c): c.userID
        case .ownershipTransferred(let t): t.fromUserID + "→" + t.toUserID
        default: ""
        }
    }
}
