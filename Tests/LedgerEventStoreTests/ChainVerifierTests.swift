import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

@testable import LedgerEventStore

@Suite struct ChainVerifierTests {
    /// Three streams of five events; returns the store's pool and a superuser's connection.
    private func seeded() async throws -> (PostgresPool, PostgresConnection, [String]) {
        let (store, configuration) = try await makeStore()
        let streams = ["alpha", "bravo", "charlie"].map { uniqueStream($0) }
        for stream in streams {
            for n in 1...5 { try await store.append([testEvent(data: #"{"n": \#(n), "text": "é ✓"}"#)], to: stream) }
        }
        return (store.pool, try PostgresConnection.connect(TestCluster.superuser(configuration)), streams.sorted())
    }

    /// What a superuser can do: switch off triggers for the session and rewrite history.
    private func tamper(_ connection: PostgresConnection, _ sql: String, _ parameters: [(any PostgresBindable)?]) throws {
        try connection.query("SET session_replication_role = replica")
        try connection.query(sql, parameters)
        try connection.query("SET session_replication_role = origin")
    }

    @Test func aCleanLogVerifies() async throws {
        let (pool, _, _) = try await seeded()
        let report = try await ChainVerifier(pool: pool, batchSize: 4).verify()
        #expect(report.isIntact)
        #expect(report.events == 15 && report.streams == 3)
    }

    /// The three append paths — one event, several events (`ledger.append_events`), a group
    /// (`ledger.append_streams`) — continue one another's chain, and Swift's `EventHash` agrees
    /// with every link, whichever wrote it.
    @Test func everyAppendPathExtendsTheSameChain() async throws {
        let (store, _) = try await makeStore()
        let stream = uniqueStream("mixed")
        try await store.append([testEvent(data: #"{"path": "one"}"#)], to: stream)
        try await store.append([testEvent(data: #"{"path": "many", "n": 1}"#), testEvent(data: #"{"path": "many", "n": 2}"#)], to: stream)
        try await store.append(group: [
            StreamAppend(stream: stream, events: [testEvent(data: #"{"path": "group"}"#)], expectedVersion: .exact(3))
        ])
        try await store.append([testEvent(data: #"{"path": "one again"}"#)], to: stream, expectedVersion: .exact(4))
        let events = try await store.read(stream: stream)
        #expect(events.map(\.version) == [1, 2, 3, 4, 5])
        let report = try await ChainVerifier(pool: store.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
    }

    @Test func anEditedEventIsNamed() async throws {
        let (pool, owner, streams) = try await seeded()
        try tamper(owner, "UPDATE ledger.events SET data = '{\"n\": 300}' WHERE stream = $1 AND version = 3", [streams[1]])
        let report = try await ChainVerifier(pool: pool, batchSize: 4).verify()
        #expect(report.breaks == [ChainBreak(stream: streams[1], version: 3, reason: .contentChanged)])
    }

    @Test func anEditedTimestampIsNamed() async throws {
        let (pool, owner, streams) = try await seeded()
        try tamper(
            owner, "UPDATE ledger.events SET occurred_at = occurred_at - interval '1 day' WHERE stream = $1 AND version = 1", [streams[0]])
        let report = try await ChainVerifier(pool: pool).verify()
        #expect(report.breaks == [ChainBreak(stream: streams[0], version: 1, reason: .contentChanged)])
    }

    @Test func aDeletedEventIsNamed() async throws {
        let (pool, owner, streams) = try await seeded()
        try tamper(owner, "DELETE FROM ledger.events WHERE stream = $1 AND version = 2", [streams[2]])
        try tamper(owner, "DELETE FROM ledger.events WHERE stream = $1 AND version = 5", [streams[0]])
        let report = try await ChainVerifier(pool: pool, batchSize: 3).verify()
        #expect(
            report.breaks == [
                ChainBreak(stream: streams[0], version: 5, reason: .missing),
                ChainBreak(stream: streams[2], version: 2, reason: .missing),
            ])
    }

    @Test func aRenumberedEventIsNamed() async throws {
        // Delete version 2 and move 3..5 down by one: versions are gapless again, but the links are not.
        let (pool, owner, streams) = try await seeded()
        try tamper(owner, "DELETE FROM ledger.events WHERE stream = $1 AND version = 2", [streams[1]])
        try tamper(owner, "UPDATE ledger.events SET version = version - 1 WHERE stream = $1 AND version > 2", [streams[1]])
        try tamper(owner, "UPDATE ledger.streams SET version = 4 WHERE stream = $1", [streams[1]])
        let report = try await ChainVerifier(pool: pool).verify()
        #expect(report.breaks == [ChainBreak(stream: streams[1], version: 2, reason: .linkBroken)])
    }

    @Test func aStreamEmptiedOfEventsIsNamed() async throws {
        let (pool, owner, streams) = try await seeded()
        try tamper(owner, "DELETE FROM ledger.events WHERE stream = $1", [streams[0]])
        let report = try await ChainVerifier(pool: pool).verify()
        #expect(report.breaks == [ChainBreak(stream: streams[0], version: 1, reason: .missing)])
    }

    @Test func swiftAndSQLComputeTheSameHash() async throws {
        let (store, configuration) = try await makeStore()
        try await store.append([testEvent(data: #"{"unicode": "ü😀", "nested": {"b": [1, 2.5, null]}}"#)], to: "hash-check")
        let row = try PostgresConnection.connect(configuration).query(
            """
            SELECT event_id, event_type, data::text AS data, metadata::text AS metadata, hash,
                   (extract(epoch FROM occurred_at) * 1000000)::bigint AS o, (extract(epoch FROM recorded_at) * 1000000)::bigint AS r
              FROM ledger.events WHERE stream = 'hash-check'
            """)[0]
        let fields = EventHash.Fields(
            stream: "hash-check", version: 1, eventID: try row["event_id"].uuid(), type: try row["event_type"].string(),
            data: try row["data"].string(), metadata: try row["metadata"].string(),
            occurredAtMicros: try row["o"].int64(), recordedAtMicros: try row["r"].int64())
        #expect(EventHash.hash(previous: EventHash.genesis, fields) == (try row["hash"].bytes()))
    }
}
