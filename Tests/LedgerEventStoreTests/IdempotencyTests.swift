import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite struct IdempotencyTests {
    @Test func aReplayReturnsTheOriginalResultAndWritesNothing() async throws {
        let (store, configuration) = try await makeStore()
        let stream = uniqueStream()
        let events = [testEvent(data: #"{"a": 1, "b": 2}"#), testEvent()]
        let original = try await store.append(events, to: stream, expectedVersion: .noStream)
        try await store.append([testEvent()], to: stream)
        // Same ids and content, even with keys in another order and a now-stale expected version.
        var replayed = events
        replayed[0].data = #"{"b": 2, "a": 1}"#
        let replay = try await store.append(replayed, to: stream, expectedVersion: .noStream)
        #expect(replay.wasReplay)
        #expect(replay.events == original.events)
        #expect(try countEvents(configuration) == 3)
    }

    @Test func theSameIdWithOtherContentIsAConflict() async throws {
        let (store, configuration) = try await makeStore()
        let stream = uniqueStream()
        let event = testEvent(data: #"{"coins": 100}"#)
        try await store.append([event], to: stream)
        var altered = event
        altered.data = #"{"coins": 1000}"#
        let error = await #expect(throws: EventStoreError.self) { try await store.append([altered], to: stream) }
        guard case .idempotencyConflict(_, let ids)? = error else {
            Issue.record("expected idempotencyConflict, got \(String(describing: error))")
            return
        }
        #expect(ids == [event.id.uuidString.lowercased()])
        #expect(try countEvents(configuration) == 1)
    }

    @Test func aReplayOnAnotherStreamIsAConflictAndWritesNothing() async throws {
        let (store, configuration) = try await makeStore()
        let event = testEvent()
        try await store.append([event], to: uniqueStream())
        await #expect(throws: EventStoreError.self) { try await store.append([event], to: uniqueStream()) }
        // A batch that mixes a known id with new ones is refused whole.
        await #expect(throws: EventStoreError.self) { try await store.append([testEvent(), event], to: uniqueStream()) }
        #expect(try countEvents(configuration) == 1)
    }

    @Test func concurrentReplaysOnOneStreamWriteOnce() async throws {
        let (store, configuration) = try await makeStore(size: 8)
        let stream = uniqueStream()
        let event = testEvent()
        let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for _ in 0..<24 { group.addTask { try await store.append([event], to: stream) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { !$0.wasReplay }.count == 1)
        #expect(Set(results.map(\.events)).count == 1, "every caller got the original position")
        #expect(try countEvents(configuration) == 1)
    }

    @Test func concurrentReplaysAcrossStreamsWriteOnce() async throws {
        let (store, configuration) = try await makeStore(size: 8)
        let event = testEvent()
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<24 {
                group.addTask {
                    do {
                        try await store.append([event], to: uniqueStream())
                        return true
                    } catch EventStoreError.idempotencyConflict {
                        return false
                    } catch {
                        Issue.record("unexpected \(error)")
                        return false
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1, "one stream got the event; every other got a conflict")
        #expect(try countEvents(configuration) == 1)
    }
}
