import Foundation
import LedgerPostgres

/// Where a stream's chain first breaks, and how.
package struct ChainBreak: Sendable, Equatable, CustomStringConvertible {
    package enum Reason: String, Sendable {
        /// The event's content no longer hashes to its stored hash: it was edited.
        case contentChanged = "content changed"
        /// The stored previous hash does not match the event before it: a row was replaced or removed.
        case linkBroken = "link to previous event broken"
        /// A version is missing from the stream: a row was deleted.
        case missing = "event missing"
        /// The stream's head (ledger.streams) names a version or hash its events do not end with.
        case headMismatch = "stream head does not match its last event"
    }
    package var stream: String
    package var version: Int64
    package var reason: Reason
    package init(stream: String, version: Int64, reason: Reason) {
        self.stream = stream
        self.version = version
        self.reason = reason
    }

    package var description: String { "stream \(stream) version \(version): \(reason.rawValue)" }
}

package struct ChainReport: Sendable {
    package var streams = 0
    package var events = 0
    /// The first break of each broken stream, in stream order. Empty means the log is intact.
    package var breaks: [ChainBreak] = []
    package var isIntact: Bool { breaks.isEmpty }
}

/// Recomputes every stream's hash chain in Swift (see `EventHash`) and names the first broken
/// (stream, version) of each stream. Reads in keyset batches, so memory stays flat on any log size.
package struct ChainVerifier: Sendable {
    let pool: PostgresPool
    let batchSize: Int

    package init(pool: PostgresPool, batchSize: Int = 5000) {
        self.pool = pool
        self.batchSize = batchSize
    }

    package func verify(progress: @escaping @Sendable (ChainReport) -> Void = { _ in }) async throws -> ChainReport {
        var report = ChainReport()
        var cursor: (stream: String, version: Int64)? = nil
        var current: StreamState? = nil
        var brokenStream: String? = nil

        while true {
            let after = cursor ?? ("", 0)
            let rows = try await pool.query(Self.scanSQL, [after.stream, after.version, batchSize])
            if rows.isEmpty { break }
            for row in rows {
                let stream = try row["stream"].string()
                let version = try row["version"].int64()
                cursor = (stream, version)
                if current?.name != stream {
                    if let finished = current, brokenStream != finished.name { finished.checkHead(into: &report) }
                    current = StreamState(
                        name: stream, headVersion: try row["head_version"].int64(), headHash: try row["head_hash"].bytes())
                    report.streams += 1
                }
                report.events += 1
                guard brokenStream != stream else { continue }
                if let failure = try current!.advance(row: row, version: version) {
                    report.breaks.append(ChainBreak(stream: stream, version: failure.version, reason: failure.reason))
                    brokenStream = stream
                }
            }
            progress(report)
        }
        if let finished = current, brokenStream != finished.name { finished.checkHead(into: &report) }

        // Streams whose every event is gone.
        for row in try await pool.query(Self.emptiedStreamsSQL) {
            report.breaks.append(ChainBreak(stream: try row["stream"].string(), version: 1, reason: .missing))
            report.streams += 1
        }
        report.breaks.sort { ($0.stream, $0.version) < ($1.stream, $1.version) }
        return report
    }

    /// Hashing state while walking one stream.
    private struct StreamState {
        let name: String
        let headVersion: Int64
        let headHash: [UInt8]
        var lastVersion: Int64 = 0
        var lastHash = EventHash.genesis

        init(name: String, headVersion: Int64, headHash: [UInt8]) {
            self.name = name
            self.headVersion = headVersion
            self.headHash = headHash
        }

        mutating func advance(row: PostgresRow, version: Int64) throws -> (version: Int64, reason: ChainBreak.Reason)? {
            if version != lastVersion + 1 { return (lastVersion + 1, .missing) }
            let stored = try row["hash"].bytes()
            if try row["prev_hash"].bytes() != lastHash { return (version, .linkBroken) }
            if EventHash.hash(previous: lastHash, try EventHash.Fields(row: row)) != stored { return (version, .contentChanged) }
            lastVersion = version
            lastHash = stored
            return nil
        }

        func checkHead(into report: inout ChainReport) {
            if headVersion > lastVersion {
                report.breaks.append(ChainBreak(stream: name, version: lastVersion + 1, reason: .missing))
            } else if headVersion != lastVersion || headHash != lastHash {
                report.breaks.append(ChainBreak(stream: name, version: lastVersion, reason: .headMismatch))
            }
        }
    }

    static let scanSQL = """
        SELECT \(EventHash.Fields.columns),
               e.prev_hash, e.hash, s.version AS head_version, s.last_hash AS head_hash
          FROM ledger.events e
          JOIN ledger.streams s ON s.stream = e.stream
         WHERE (e.stream, e.version) > ($1, $2)
         ORDER BY e.stream, e.version
         LIMIT $3
        """

    static let emptiedStreamsSQL = """
        SELECT s.stream FROM ledger.streams s
         WHERE s.version > 0 AND NOT EXISTS (SELECT 1 FROM ledger.events e WHERE e.stream = s.stream)
        """
}
