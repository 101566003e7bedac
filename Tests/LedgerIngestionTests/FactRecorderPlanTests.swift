import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerFormats
import Testing

@testable import LedgerIngestion

/// `FactRecorder.plan` decides what a purchase stream still needs from a piece of evidence, on the
/// events the stream holds; the group commit and the one-by-one path both decide with it. These
/// run it on streams built in memory, as PostgreSQL would return them.
@Suite struct FactRecorderPlanTests {
    static let bundleID = "com.example.app"

    static func purchase(_ id: String = "1000", at date: Date = day(0)) -> LedgerEvent {
        .purchased(SampleCatalogue.transaction(id, product: "remove.ads", at: date))
    }

    static let catalogue = SampleCatalogue.all.reduce(into: Catalogue()) { $0.define($1, from: day(-1)) }

    static func work(
        _ events: [LedgerEvent], presentedBy user: String?, policy: RestorePolicy = .transfer, now: Date = day(0)
    ) throws -> FactRecorder.StreamWork {
        let claimant: FactRecorder.Claimant = user.map { .presenter($0, policy: policy, catalogue: catalogue) } ?? .nobody
        let work = try FactRecorder.work(for: events, bundleID: bundleID, evidence: "sha256:e", claimant: claimant, now: now)
        try #require(work.count == 1)
        return work[0]
    }

    /// The stream after `plan`'s events were appended, as read back (versions and positions in order).
    static func stored(_ events: [NewEvent], after existing: [RecordedEvent] = [], stream: String) -> [RecordedEvent] {
        var stored = existing
        for event in events {
            let version = Int64(stored.count + 1)
            stored.append(
                RecordedEvent(
                    id: event.id, stream: stream, version: version, type: event.type, data: event.data, metadata: event.metadata,
                    occurredAt: event.occurredAt ?? day(0), recordedAt: day(0),
                    position: LogPosition(transactionID: 10 + UInt64(version), position: version)))
        }
        return stored
    }

    static func types(_ events: [NewEvent]) -> [String] { events.map(\.type) }

    @Test func aNewPurchaseIsAppendedWithItsClaimOnAStreamExpectedNew() throws {
        let work = try Self.work([Self.purchase()], presentedBy: "alice")
        #expect(work.stream == LedgerStream.purchase(Self.bundleID, originalTransactionID: "1000"))
        let plan = try FactRecorder.plan(work, existing: [], bundleID: Self.bundleID, now: day(0))
        #expect(Self.types(plan.fresh) == ["Purchased", "TransactionClaimed"])
        #expect(plan.expected == .noStream)
        #expect(plan.kept == nil && plan.seen == nil)
    }

    @Test func presentingTheSamePurchaseAgainAppendsNothingAndWaitsForWhatIsThere() throws {
        let work = try Self.work([Self.purchase()], presentedBy: "alice")
        let first = try FactRecorder.plan(work, existing: [], bundleID: Self.bundleID, now: day(0))
        let stream = Self.stored(first.fresh, stream: work.stream)
        let again = try FactRecorder.plan(work, existing: stream, bundleID: Self.bundleID, now: day(1))
        #expect(again.fresh.isEmpty, "a replay records nothing")
        #expect(again.expected == .exact(2))
        #expect(again.seen == stream.last?.position, "the answer waits for the stream's last event to be projected")
    }

    @Test func anotherUserTakesThePurchaseUnderTransferAndIsRefusedUnderKeep() throws {
        let alice = try Self.work([Self.purchase()], presentedBy: "alice")
        let stream = Self.stored(
            try FactRecorder.plan(alice, existing: [], bundleID: Self.bundleID, now: day(0)).fresh, stream: alice.stream)

        let transfer = try FactRecorder.plan(
            try Self.work([Self.purchase()], presentedBy: "bob", policy: .transfer), existing: stream,
            bundleID: Self.bundleID, now: day(1))
        #expect(Self.types(transfer.fresh) == ["OwnershipTransferred"])
        #expect(transfer.kept == nil)

        let keep = try FactRecorder.plan(
            try Self.work([Self.purchase()], presentedBy: "bob", policy: .keep), existing: stream,
            bundleID: Self.bundleID, now: day(1))
        #expect(keep.fresh.isEmpty)
        #expect(keep.kept == "1000", "the purchase stays with its owner; the caller learns only that it is kept")
    }

    /// `transfer_if_no_active` leaves a live subscription with its owner and hands over a lapsed
    /// one; a non-consumable is active for good, so it stays.
    @Test func transferIfNoActiveMovesOnlyWhatGivesItsOwnerNothingActive() throws {
        let subscription = LedgerEvent.purchased(SampleCatalogue.transaction("2000", product: "pro.monthly", at: day(0), expires: day(30)))
        let alice = try Self.work([subscription], presentedBy: "alice")
        let stream = Self.stored(
            try FactRecorder.plan(alice, existing: [], bundleID: Self.bundleID, now: day(0)).fresh, stream: alice.stream)
        let bob = try Self.work([subscription], presentedBy: "bob", policy: .transferIfNoActive)

        let whileActive = try FactRecorder.plan(bob, existing: stream, bundleID: Self.bundleID, now: day(10))
        #expect(whileActive.fresh.isEmpty)
        #expect(whileActive.kept == "2000", "alice's subscription is live: it stays hers")

        let afterItLapsed = try FactRecorder.plan(bob, existing: stream, bundleID: Self.bundleID, now: day(31))
        #expect(Self.types(afterItLapsed.fresh) == ["OwnershipTransferred"])
        #expect(afterItLapsed.kept == nil)

        let lifetime = LedgerEvent.purchased(SampleCatalogue.transaction("3000", product: "lifetime", at: day(0)))
        let carol = try Self.work([lifetime], presentedBy: "carol")
        let owned = Self.stored(
            try FactRecorder.plan(carol, existing: [], bundleID: Self.bundleID, now: day(0)).fresh, stream: carol.stream)
        let dave = try FactRecorder.plan(
            try Self.work([lifetime], presentedBy: "dave", policy: .transferIfNoActive), existing: owned, bundleID: Self.bundleID,
            now: day(400))
        #expect(dave.kept == "3000", "a non-consumable never lapses")
    }

    /// A decision is stamped after every earlier decision of its stream, whatever the deciding
    /// request's clock said: a transfer stamped before the claim it follows would hand the
    /// purchase back when the facts are replayed in time order.
    @Test func aDecisionIsNeverStampedBeforeAnEarlierOne() throws {
        let alice = try Self.work([Self.purchase()], presentedBy: "alice", now: day(5))
        let stream = Self.stored(
            try FactRecorder.plan(alice, existing: [], bundleID: Self.bundleID, now: day(5)).fresh, stream: alice.stream)
        let bob = try FactRecorder.plan(
            try Self.work([Self.purchase()], presentedBy: "bob"), existing: stream, bundleID: Self.bundleID, now: day(2))
        let transfer = try #require(bob.fresh.first)
        #expect(transfer.occurredAt == day(5))
    }

    @Test func evidenceThatRestatesWhatTheStreamHoldsIsNotAppended() throws {
        // The same transaction signed again later (Apple's history, then its statuses): same facts, a new signature date.
        var restated = SampleCatalogue.transaction("1000", product: "remove.ads", at: day(0))
        restated.signedDate = day(3)
        let first = try Self.work([Self.purchase()], presentedBy: nil)
        let stream = Self.stored(
            try FactRecorder.plan(first, existing: [], bundleID: Self.bundleID, now: day(0)).fresh, stream: first.stream)
        let plan = try FactRecorder.plan(
            try Self.work([.purchased(restated)], presentedBy: nil), existing: stream, bundleID: Self.bundleID, now: day(3))
        #expect(plan.fresh.isEmpty, "\(Self.types(plan.fresh))")
    }

    @Test func aNotificationRecordedBeforeIsNotDecidedAgain() throws {
        let notification = LedgerEvent.appleNotificationReceived(
            AppleNotification(
                version: "2.0", notificationType: "DID_RENEW", notificationUUID: "6b3c1a8e-0000-4000-8000-000000000001",
                environment: .production,
                originalTransactionID: "1000", signedDate: day(1)))
        let work = try Self.work([notification, Self.purchase()], presentedBy: "alice")
        let stream = Self.stored([work.candidates[0]], stream: work.stream)
        let plan = try FactRecorder.plan(work, existing: stream, bundleID: Self.bundleID, now: day(2))
        #expect(plan.fresh.isEmpty, "a redelivered notification is a no-op, with everything it said")
    }
}
