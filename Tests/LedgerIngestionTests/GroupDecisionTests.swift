import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerFormats
import Testing

@testable import LedgerIngestion

/// A group decides each request exactly as it would be decided alone, on the streams as read; a
/// request that shares a stream with an earlier one of its group, or cannot be decided, is sent
/// to record alone (deciding again on what it then reads) and never holds the group back.
@Suite struct GroupDecisionTests {
    static let bundleID = "com.example.app"

    static func request(_ original: String, by user: String, policy: RestorePolicy = .transfer) throws -> GroupRecorder.Request {
        let event = LedgerEvent.purchased(SampleCatalogue.transaction(original, product: "remove.ads", at: day(0)))
        let work = try FactRecorder.work(
            for: [event], bundleID: bundleID, evidence: "sha256:\(original)", claimant: .presenter(user, policy: policy), now: day(0))
        return GroupRecorder.Request(evidence: [], work: work, bundleID: bundleID, presenter: user)
    }

    @Test func requestsOnDistinctStreamsAreDecidedTogetherInOrder() throws {
        let requests = [try Self.request("1", by: "alice"), try Self.request("2", by: "bob")]
        let decided = GroupRecorder.decide(requests, existing: [:])
        #expect(decided.appends.map(\.stream) == requests.map { $0.work[0].stream })
        #expect(decided.appendedBy == [0, 1], "each append is answered to the request that made it")
        #expect(
            decided.appends.allSatisfy { $0.expectedVersion == .noStream && $0.events.map(\.type) == ["Purchased", "TransactionClaimed"] })
        for result in decided.results {
            guard case .recorded = result else { Issue.record("a request was not decided in the group"); continue }
        }
    }

    @Test func aSecondRequestOnTheSameStreamGoesAloneWithItsEvidenceStored() throws {
        let requests = [try Self.request("1", by: "alice"), try Self.request("1", by: "bob"), try Self.request("2", by: "carol")]
        let decided = GroupRecorder.decide(requests, existing: [:])
        #expect(decided.appendedBy == [0, 2])
        guard case .alone(evidenceStored: true) = decided.results[1] else {
            Issue.record("the second claim of one purchase must decide alone, after the first is written")
            return
        }
    }

    @Test func aRequestOnAStreamItCannotReadFailsAloneNotTheGroup() throws {
        let requests = [try Self.request("1", by: "alice"), try Self.request("2", by: "bob")]
        let unreadable = RecordedEvent(
            id: UUID(), stream: requests[0].work[0].stream, version: 1, type: "Purchased", data: "{not json",
            metadata: "{}", occurredAt: day(0), recordedAt: day(0), position: .init(transactionID: 1, position: 1))
        let decided = GroupRecorder.decide(requests, existing: [requests[0].work[0].stream: [unreadable]])
        #expect(decided.appendedBy == [1])
        guard case .alone = decided.results[0] else {
            Issue.record("the request whose stream cannot be read goes alone, to fail with its own error")
            return
        }
    }
}
