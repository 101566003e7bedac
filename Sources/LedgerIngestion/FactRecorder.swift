import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats

/// Appends what a piece of evidence says, stream by stream, and — when a user presented it —
/// who owns each original transaction it names, decided by the app's restore policy against
/// the stream as read, by the stream's only writer (`EventStore.serialized`).
struct FactRecorder: Sendable {
    let store: EventStore

    struct Outcome: Sendable {
        /// The furthest position the answer must wait for: written now, or — when everything was
        /// already recorded — the last event of the streams as read (nil: nothing to wait for).
        var lastPosition: LogPosition?
        /// Whether anything was appended (false: a replay of evidence already recorded).
        var wroteAny = false
        /// Original transactions another user keeps (restore policy `keep`). Who that is stays
        /// here: naming them to the caller would disclose another user's id.
        var keptByAnother: Set<String> = []
        /// The presenting user's timeline as the writing transaction projected it, and the log
        /// position it reflects (`InlineProjection`): the answer, with no wait for the worker.
        var projected: (timeline: UserTimeline, position: LogPosition)?
    }

    /// Who is to own the original transactions a piece of evidence names.
    struct Claimant: Sendable {
        var user: @Sendable (_ originalTransactionID: String) -> String?
        var policy: RestorePolicy
        /// The user who presented the evidence (whose state answers the request), if one did.
        var presenter: String? = nil
        /// The app's catalogue, for `transfer_if_no_active`: whether a purchase still gives its
        /// owner something depends on what the product is.
        var catalogue = Catalogue()

        /// A user presented the evidence: everything it names is theirs, by the app's restore policy.
        static func presenter(_ userID: String, policy: RestorePolicy, catalogue: Catalogue = Catalogue()) -> Claimant {
            Claimant(user: { _ in userID }, policy: policy, presenter: userID, catalogue: catalogue)
        }
        /// Apple sent it: a transaction nobody owns yet goes to the user its appAccountToken
        /// stands for. Never a transfer — a notification cannot take a purchase from its owner.
        static func tokenHolders(_ users: [String: String]) -> Claimant {
            Claimant(user: { users[$0] }, policy: .keep)
        }
        static let nobody = Claimant(user: { _ in nil }, policy: .keep)
    }

    /// One stream's share of a piece of evidence: the events it would append (with their stable
    /// ids) and, for a user's claim, whose the stream's original transaction is to be.
    struct StreamWork: Sendable {
        var stream: String
        var candidates: [NewEvent]
        var claim: (original: String, user: String)?
        var policy: RestorePolicy
        var catalogue = Catalogue()
        /// Purchase streams are decided on what they hold; others (the per-app notifications
        /// stream grows without bound and decides nothing) are appended event by event.
        var isDecided: Bool { LedgerStream.isPurchase(stream) }
    }

    /// What to append to one stream, decided on the events it holds.
    struct Plan: Sendable {
        var fresh: [NewEvent] = []
        var expected: ExpectedVersion = .noStream
        /// The original transaction another user keeps (restore policy `keep`).
        var kept: String?
        /// The stream's last event as read: a request whose facts a concurrent request already
        /// recorded still answers only once they are projected (read-your-writes).
        var seen: LogPosition?
    }

    /// The evidence's events grouped by stream, in order of first appearance, each with its stable
    /// ids and the claim to decide. Pure: what is recorded is decided by `plan` on what is read.
    static func work(for events: [LedgerEvent], bundleID: String, evidence: String?, claimant: Claimant, now: Date) throws -> [StreamWork] {
        var byStream: [String: [LedgerEvent]] = [:]
        var order: [String] = []
        for event in events {
            let stream = LedgerStream.stream(of: event, bundleID: bundleID)
            if byStream[stream] == nil { order.append(stream) }
            byStream[stream, default: []].append(event)
        }
        return try order.map { stream in
            let events = byStream[stream]!
            let original = events.compactMap(\.originalTransactionID).first
            let candidates = try events.map { event in
                let data = String(decoding: try event.encodedData(), as: UTF8.self)
                // A notification is identified by Apple's UUID: a redelivery is a no-op even if re-signed.
                let id =
                    if case .appleNotificationReceived(let n) = event, let uuid = n.notificationUUID {
                        StableID.make(bundleID, "notification", uuid)
                    } else {
                        StableID.make(stream, event.typeName, data)
                    }
                return try StoredFacts.newEvent(
                    event, bundleID: bundleID, id: id, occurredAt: event.appleSignedDate ?? now, evidence: evidence
                ).event
            }
            return StreamWork(
                stream: stream, candidates: candidates,
                claim: original.flatMap { original in claimant.user(original).map { (original, $0) } },
                policy: claimant.policy, catalogue: claimant.catalogue)
        }
    }

    func record(
        _ events: [LedgerEvent], bundleID: String, evidence: String?, claimant: Claimant, now: Date = Date()
    ) async throws -> Outcome {
        try await record(Self.work(for: events, bundleID: bundleID, evidence: evidence, claimant: claimant, now: now), bundleID: bundleID)
    }

    /// Appends each stream's work on its own, deciding on what the stream holds and deciding again
    /// when it changed meanwhile (the path of a request that could not be grouped).
    func record(_ work: [StreamWork], bundleID: String) async throws -> Outcome {
        var outcome = Outcome()
        for item in work { try await append(item, bundleID: bundleID, into: &outcome) }
        return outcome
    }

    /// One stream: skip what is already there, add the ownership decision, append — as the
    /// stream's only writer, so many requests presenting one purchase each get their decision.
    private func append(_ work: StreamWork, bundleID: String, into outcome: inout Outcome) async throws {
        guard work.isDecided else {
            for event in work.candidates {
                let result = try await store.append([event], to: work.stream)
                if !result.wasReplay { outcome.wrote(result) }
            }
            return
        }
        let (plan, appended) = try await store.serialized(on: work.stream) { locked -> (Plan, AppendResult?) in
            let plan = try Self.plan(work, existing: locked.events(), bundleID: bundleID, now: Date())
            return (plan, plan.fresh.isEmpty ? nil : try locked.append(plan.fresh, expectedVersion: plan.expected))
        }
        if let original = plan.kept { outcome.keptByAnother.insert(original) }
        outcome.waitFor(plan.seen)
        if let appended { outcome.wrote(appended) }
    }

    /// What a purchase stream holding `existing` still needs from `work`, decided at `now`: pure,
    /// so a group of requests is decided exactly as one request is.
    static func plan(_ work: StreamWork, existing: [RecordedEvent], bundleID: String, now: Date) throws -> Plan {
        let known = Set(existing.map(\.id))
        var plan = Plan(expected: existing.last.map { .exact($0.version) } ?? .noStream, seen: existing.last?.position)
        if work.candidates.contains(where: { known.contains($0.id) && $0.type == LedgerEventType.appleNotificationReceived.rawValue }) {
            return plan // this notification was recorded before, with everything it said
        }
        // What the stream holds, decoded once: the latest fact of each restatement slot, and
        // the history an ownership decision is made on.
        var history = AppLedger(bundleID: bundleID)
        var latest: [String: LedgerEvent] = [:]
        for event in existing {
            guard let (_, fact) = try StoredFacts.fact(from: event) else { continue }
            history.apply(fact)
            if let slot = fact.event.restatementSlot { latest[slot] = fact.event }
        }
        // Evidence restated later that says nothing new is not appended (`LedgerEvent.restates`),
        // whether the stream holds the earlier statement or this work states it twice (Apple's
        // history and its subscription statuses both sign a subscription's latest transaction).
        plan.fresh = try work.candidates.filter { candidate in
            guard !known.contains(candidate.id) else { return false }
            let event = try DecodedEvents.shared.event(type: candidate.type, data: candidate.data)
            guard let slot = event.restatementSlot else { return true }
            if let previous = latest[slot], event.restates(previous) { return false }
            latest[slot] = event
            return true
        }
        guard let claim = work.claim else { return plan }
        let decidedAt = Self.decisionTime(after: existing, now: now)
        let decision = Decide.claim(claim.original, by: claim.user, currentOwner: history.owner(of: claim.original), policy: work.policy) {
            history.givesActiveEntitlement(claim.original, at: now, catalogue: work.catalogue)
        }
        switch decision {
        case .alreadyOwned: break
        case .claim(let decided):
            plan.fresh.append(try ownership(.transactionClaimed(decided), work.stream, bundleID, existing.count, decidedAt))
        case .transfer(let decided):
            plan.fresh.append(try ownership(.ownershipTransferred(decided), work.stream, bundleID, existing.count, decidedAt))
        case .refused:
            plan.kept = claim.original
        }
        return plan
    }

    /// When an ownership decision taken `now` on a stream holding `existing` is stamped. The
    /// domain orders facts by their time: a decision must come after every earlier decision of its
    /// stream, whatever the clocks of concurrent requests said (a transfer stamped before the one
    /// it followed would hand the purchase back).
    static func decisionTime(after existing: [RecordedEvent], now: Date) -> Date {
        let decisions = Set(LedgerEventType.ownership.map(\.rawValue))
        return existing.lazy.filter { decisions.contains($0.type) }.map(\.occurredAt).reduce(now, max)
    }

    /// Ownership decisions are told apart by the stream version they were decided at, so the same
    /// user can claim again after a transfer away, and a retried request is still a replay.
    private static func ownership(
        _ event: LedgerEvent, _ stream: String, _ bundleID: String, _ version: Int, _ now: Date
    ) throws -> NewEvent {
        try StoredFacts.newEvent(
            event, bundleID: bundleID, id: StableID.make(stream, event.typeName, String(version), event.ownerDescription),
            occurredAt: now
        ).event
    }
}

extension FactRecorder.Outcome {
    mutating func waitFor(_ position: LogPosition?) {
        guard let position else { return }
        lastPosition = max(lastPosition ?? position, position)
    }

    mutating func wrote(_ result: AppendResult) {
        wroteAny = true
        waitFor(result.events.last?.position)
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
