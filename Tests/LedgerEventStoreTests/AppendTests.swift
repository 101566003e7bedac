import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite struct AppendTests {
    @Test func versionsStartAtOneAndHaveNoGaps() async throws {
        let (store, _) = try await makeStore()
        let stream = uniqueStream()
        let first = try await store.append([testEvent(), testEvent()], to: stream, expectedVersion: .noStream)
        let second = try await store.append([testEvent()], to: stream, expectedVersion: .exact(2))
        #expect(first.events.map(\.version) == [1, 2])
        #expect(second.events.map(\.version) == [3])
        #expect(!first.wasReplay)
        let read = try await store.read(stream: stream)
        #expect(read.map(\.version) == [1, 2, 3])
        #expect(try await store.version(of: stream) == 3)
        #expect(try await store.version(of: uniqueStream()) == 0)
    }

    @Test func whatIsReadBackIsWhatWasAppended() async throws {
        let (store, _) = try await makeStore()
        let stream = uniqueStream()
        let occurred = Date(timeIntervalSince1970: 1_681_314_324.123)
        let event = NewEvent(
            id: UUID(), type: "PurchaseRecorded", data: #"{"product":"pro.monthly","quote":"\"x\"\n"}"#,
            metadata: #"{"evidence":"sha256:abc"}"#, occurredAt: occurred)
        try await store.append([event], to: stream)
        let read = try #require(try await store.read(stream: stream).first)
        #expect(read.id == event.id)
        #expect(read.type == "PurchaseRecorded")
        #expect(read.occurredAt == occurred)
        let data = try JSONSerialization.jsonObject(with: Data(read.data.utf8)) as? [String: String]
        #expect(data == ["product": "pro.monthly", "quote": "\"x\"\n"])
        #expect(read.metadata.contains("sha256:abc"))
    }

    @Test func aWrongExpectedVersionCarriesTheActualVersion() async throws {
        let (store, configuration) = try await makeStore()
        let stream = uniqueStream()
        try await store.append([testEvent(), testEvent()], to: stream)
        let error = await #expect(throws: EventStoreError.self) {
            try await store.append([testEvent()], to: stream, expectedVersion: .exact(1))
        }
        guard case .wrongExpectedVersion(let name, let expected, let actual)? = error else {
            Issue.record("expected wrongExpectedVersion, got \(String(describing: error))")
            return
        }
        #expect(name == stream && expected == .exact(1) && actual == 2)
        await #expect(throws: EventStoreError.self) { try await store.append([testEvent()], to: stream, expectedVersion: .noStream) }
        #expect(try countEvents(configuration) == 2)
    }

    @Test func invalidEventsAreRejectedWithoutWriting() async throws {
        let (store, configuration) = try await makeStore()
        for bad in [[testEvent(data: "{not json")], [], [testEvent("")]] {
            let error = await #expect(throws: EventStoreError.self) { try await store.append(bad, to: uniqueStream()) }
            guard case .invalidEvents? = error else {
                Issue.record("expected invalidEvents, got \(String(describing: error))")
                continue
            }
        }
        #expect(try countEvents(configuration) == 0)
    }

    @Test func aBatchAcrossStreamsIsAllOrNothing() async throws {
        let (store, configuration) = try await makeStore()
        let (a, b, c) = (uniqueStream("a"), uniqueStream("b"), uniqueStream("c"))
        try await store.append([testEvent()], to: b)
        let error = await #expect(throws: EventStoreError.self) {
            try await store.append(batch: [
                StreamAppend(stream: a, events: [testEvent()]),
                StreamAppend(stream: b, events: [testEvent()], expectedVersion: .noStream),
                StreamAppend(stream: c, events: [testEvent()]),
            ])
        }
        guard case .wrongExpectedVersion(let stream, _, let actual)? = error else {
            Issue.record("expected wrongExpectedVersion, got \(String(describing: error))")
            return
        }
        #expect(stream == b && actual == 1, "the error names the append that failed")
        #expect(try countEvents(configuration) == 1)

        let results = try await store.append(batch: [
            StreamAppend(stream: c, events: [testEvent()]), StreamAppend(stream: a, events: [testEvent(), testEvent()]),
        ])
        #expect(results.map(\.stream) == [c, a], "results come back in request order")
        #expect(results.map(\.version) == [1, 2])
    }
}
