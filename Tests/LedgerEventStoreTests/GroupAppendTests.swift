import Foundation
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

@testable import LedgerEventStore

/// `append(group:)` — several streams in one call, the group commit of concurrent ingestions —
/// keeps every invariant of a single append, and is all or nothing.
@Suite struct GroupAppendTests {
    @Test func aGroupAppendsEveryStreamAtItsVersionAndChainsVerify() async throws {
        let (store, configuration) = try await makeStore()
        let existing = uniqueStream("existing")
        try await store.append([testEvent(), testEvent()], to: existing)
        let fresh = [uniqueStream("new"), uniqueStream("new")]
        let group = [
            StreamAppend(stream: fresh[0], events: [testEvent(), testEvent()], expectedVersion: .noStream),
            StreamAppend(stream: existing, events: [testEvent()], expectedVersion: .exact(2)),
            StreamAppend(stream: fresh[1], events: [testEvent()], expectedVersion: .noStream),
        ]
        let results = try await store.append(group: group)

        #expect(results.map(\.stream) == group.map(\.stream), "results in the order asked")
        #expect(results.map { $0.events.map(\.version) } == [[1, 2], [3], [1]])
        #expect(results.map { $0.events.map(\.id) } == group.map { $0.events.map(\.id) })
        for (stream, version) in [(fresh[0], 2), (existing, 3), (fresh[1], 1)] {
            #expect(try await store.version(of: stream) == Int64(version))
            #expect(try await store.read(stream: stream).map(\.version) == Array(1...Int64(version)))
        }
        let report = try await ChainVerifier(pool: store.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
        #expect(try countEvents(configuration) == 6)
    }

    @Test func aVersionThatMovedOrAnIDThatExistsWritesNothing() async throws {
        let (store, configuration) = try await makeStore()
        let moved = uniqueStream("moved")
        let used = testEvent()
        try await store.append([testEvent(), used], to: moved)
        let other = uniqueStream("other")

        let stale = await #expect(throws: EventStoreError.self) {
            try await store.append(group: [
                StreamAppend(stream: other, events: [testEvent()], expectedVersion: .noStream),
                StreamAppend(stream: moved, events: [testEvent()], expectedVersion: .exact(1)),
            ])
        }
        guard case .wrongExpectedVersion(let stream, _, _)? = stale else {
            Issue.record("expected wrongExpectedVersion, got \(String(describing: stale))")
            return
        }
        #expect(stream == moved, "the error names the stream that moved")

        let reused = await #expect(throws: EventStoreError.self) {
            try await store.append(group: [
                StreamAppend(stream: other, events: [testEvent()], expectedVersion: .noStream),
                StreamAppend(stream: uniqueStream("again"), events: [used], expectedVersion: .noStream),
            ])
        }
        guard case .idempotencyConflict? = reused else {
            Issue.record("expected idempotencyConflict, got \(String(describing: reused))")
            return
        }
        #expect(try countEvents(configuration) == 2, "neither group wrote anything")
        #expect(try await store.version(of: other) == 0, "not even a stream head")
    }

    /// A group that takes its streams to be new reads nothing before deciding; one stream that
    /// exists after all refuses the whole group: nothing of it stands.
    @Test func aGroupAssumingNewStreamsAppendsThemOrIsRefusedWhole() async throws {
        let (store, configuration) = try await makeStore()
        let marker = uniqueStream("marker")
        let alongside = PipelinedStatement("SELECT pg_advisory_xact_lock(hashtext($1))", [marker])
        let fresh = [uniqueStream("new"), uniqueStream("new")]
        let seen = Mutex<[[String: [RecordedEvent]]]>([])
        func group(_ streams: [String]) async throws -> GroupAppendOutcome<Int> {
            try await store.withGroupAppend(
                streams: streams, alongside: RoundTrip([alongside]), assumingNewStreams: true,
                decide: { existing in
                    seen.withLock { $0.append(existing) }
                    return (streams.count, streams.map { StreamAppend(stream: $0, events: [testEvent()], expectedVersion: .noStream) })
                })
        }
        guard case .appended(_, let results) = try await group(fresh) else {
            Issue.record("new streams were not appended")
            return
        }
        #expect(results.map { $0.events.map(\.version) } == [[1], [1]])
        #expect(seen.withLock { $0.allSatisfy(\.isEmpty) }, "decided on nothing read")

        let third = uniqueStream("new")
        guard case .refused(let error) = try await group([third, fresh[1]]) else {
            Issue.record("a group assuming an existing stream new was not refused")
            return
        }
        #expect((error as? PostgresError)?.sqlState == "LE001", "the stream that exists refuses it: \(error)")
        #expect(try await store.version(of: third) == 0, "nothing of the refused group stands")
        #expect(try countEvents(configuration) == 2)
        let report = try await ChainVerifier(pool: store.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
    }
}
