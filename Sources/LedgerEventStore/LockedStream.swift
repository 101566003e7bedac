import Foundation
import LedgerPostgres

/// A stream held by one writer for the length of one transaction: what it reads cannot change
/// under it before it appends, so a decision made on it is never refused for a race.
///
/// Synchronous, like every use of a connection: it runs on a pool thread inside
/// `EventStore.serialized`.
package struct LockedStream {
    package let stream: String
    package let connection: PostgresConnection

    /// The stream's version, 0 when it has no events.
    package func version() throws -> Int64 {
        try connection.query("SELECT version FROM ledger.streams WHERE stream = $1", [stream]).first.map { try $0["version"].int64() } ?? 0
    }

    /// Every event of the stream, in version order.
    package func events() throws -> [RecordedEvent] {
        try connection.query(EventStore.selectEventsSQL + " WHERE e.stream = $1 ORDER BY e.version", [stream]).map(RecordedEvent.init(row:))
    }

    /// The event with `id`, on whichever stream it was written.
    package func event(id: UUID) throws -> RecordedEvent? {
        try connection.query(EventStore.selectEventsSQL + " WHERE e.event_id = $1", [id]).first.map(RecordedEvent.init(row:))
    }

    /// Appends inside the transaction. A replay of events already stored returns their original
    /// result; a version that moved (only a writer that bypassed the lock can move it) or an id
    /// used for other content is a typed error, and the transaction is rolled back.
    package func append(_ events: [NewEvent], expectedVersion: ExpectedVersion) throws -> AppendResult {
        let request = StreamAppend(stream: stream, events: events, expectedVersion: expectedVersion)
        do {
            let result = try EventStore.result(stream: stream, rows: connection.query(AppendStatements.multiEventSQL, request.parameters))
            try EventTraces.recordCurrent(events, on: connection)
            return result
        } catch let error as PostgresError {
            throw EventStoreError.from(error, stream: stream, expected: expectedVersion)
        }
    }
}

extension EventStore {
    /// Runs `body` as the only writer of `stream`, in one transaction: queued behind this
    /// process's other writers of the stream (`StreamLocks`, no connection held while waiting),
    /// then holding `pg_advisory_xact_lock` on it against other servers until the commit.
    /// Every writer that decides on a stream's content goes through here, so concurrent requests
    /// each get a decision — however many, from however many servers.
    package func serialized<T: Sendable>(on stream: String, _ body: @escaping @Sendable (LockedStream) throws -> T) async throws -> T {
        try await streamLocks.withLock(stream) {
            let result = try await pool.withTransaction { connection in
                try connection.query(Self.streamLockSQL, [stream])
                return try body(LockedStream(stream: stream, connection: connection))
            }
            announceAppends()
            return result
        }
    }

    /// `serialized(on:_:)` for several streams at once, in one transaction: for a decision that
    /// reads and writes more than one stream and must be all or nothing (two accounts merged).
    /// Locks are taken in name order in the process and in key order in PostgreSQL, as every
    /// multi-stream writer takes them, so two such writers never deadlock.
    package func serialized<T: Sendable>(on streams: [String], _ body: @escaping @Sendable ([LockedStream]) throws -> T) async throws -> T {
        let names = Array(Set(streams)).sorted()
        return try await withLocks(names[...]) {
            let result = try await pool.withTransaction { connection in
                let locks = Self.streamLocksStatement(names)
                try connection.query(locks.sql, locks.parameters)
                return try body(streams.map { LockedStream(stream: $0, connection: connection) })
            }
            announceAppends()
            return result
        }
    }

    private func withLocks<T: Sendable>(_ names: ArraySlice<String>, _ body: () async throws -> T) async throws -> T {
        guard let first = names.first else { return try await body() }
        return try await streamLocks.withLock(first) { try await withLocks(names.dropFirst(), body) }
    }

    /// The advisory lock of a stream, held to the end of the transaction. Keys are a 64-bit hash
    /// of the name: two streams sharing one only take turns they did not need to.
    static let streamLockSQL = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"

    /// The same locks for several streams, taken in key order so two groups never deadlock.
    package static func streamLocksStatement(_ streams: [String]) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtextextended(s, 0) AS k FROM unnest($1::text[]) AS s ORDER BY 1) AS keys
            """, [PostgresTextArray(streams)])
    }
}
