import Foundation
import LedgerPostgres

/// The whole log streamed with one `COPY … TO STDOUT`, for replays that read everything: a
/// rebuild. A keyset scan pays a query, a materialised result and a `String` per cell for every
/// batch; this pays one statement, and leaves the parsing of each row to whichever thread
/// decodes it.
public enum LogCopy {
    /// Streams every event behind the snapshot fence (as `EventStore.readAll` defines it) after
    /// `position`, in log order, in batches of up to `batchSize` raw rows. Events whose type is in
    /// `excludedTypes` are left out by the server; a checkpoint at the last event returned is
    /// still exact, because whatever excluded events follow it are skipped again when read.
    public static func stream(on connection: PostgresConnection, after position: LogPosition, excludingTypes excludedTypes: Set<String>,
                              batchSize: Int, _ body: (LogRows) throws -> Void) throws {
        let excluded = excludedTypes.sorted().map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }
        let filter = excluded.isEmpty ? "" : " AND e.event_type NOT IN (\(excluded.joined(separator: ", ")))"
        var batch = LogRows()
        try connection.copyOut("""
            COPY (SELECT e.stream, e.event_type, e.data, e.metadata, e.occurred_at, e.recorded_at, e.tx_id, e.position
                    FROM ledger.events e
                   WHERE (e.tx_id, e.position) > ('\(position.transactionID)'::xid8, \(position.position)::bigint)
                     AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())\(filter)
                   ORDER BY e.tx_id, e.position) TO STDOUT
            """) { row in
            batch.append(row)
            if batch.count >= batchSize {
                try body(batch)
                batch = LogRows()
            }
        }
        if batch.count > 0 { try body(batch) }
    }
}

/// Raw COPY rows of the log, kept in one buffer until someone asks for an event.
public struct LogRows: Sendable {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    public init() {}

    public var count: Int { ends.count }

    mutating func append(_ row: UnsafeBufferPointer<UInt8>) {
        bytes += row
        ends.append(bytes.count)
    }

    public struct MalformedRow: Error, CustomStringConvertible {
        public let row: String
        public var description: String { "unexpected COPY row from ledger.events: \(row.prefix(200))" }
    }

    /// Row `index` as an event: the columns a replay needs (no id or version).
    public func event(at index: Int) throws -> StreamedEvent {
        try bytes.withUnsafeBufferPointer { all in
            let row = UnsafeBufferPointer(rebasing: all[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
            var fields: [UnsafeBufferPointer<UInt8>] = []
            fields.reserveCapacity(8)
            var start = 0
            for (offset, byte) in row.enumerated() where byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") {
                fields.append(UnsafeBufferPointer(rebasing: row[start..<offset]))
                start = offset + 1
            }
            func malformed() -> MalformedRow { MalformedRow(row: String(decoding: row, as: UTF8.self)) }
            guard fields.count == 8,
                  let occurred = PostgresTimestamp.parseMicroseconds(bytes: fields[4]),
                  let recorded = PostgresTimestamp.parseMicroseconds(bytes: fields[5]),
                  let transaction = UInt64(String(decoding: fields[6], as: UTF8.self)),
                  let position = Int64(String(decoding: fields[7], as: UTF8.self)) else { throw malformed() }
            return StreamedEvent(stream: Self.text(fields[0]), type: Self.text(fields[1]), data: Self.unescaped(fields[2]),
                                 metadata: Self.text(fields[3]),
                                 occurredAt: Date(timeIntervalSince1970: Double(occurred) / 1_000_000),
                                 recordedAt: Date(timeIntervalSince1970: Double(recorded) / 1_000_000),
                                 position: LogPosition(transactionID: transaction, position: position))
        }
    }

    static func text(_ field: UnsafeBufferPointer<UInt8>) -> String {
        field.contains(UInt8(ascii: "\\")) ? String(decoding: unescaped(field), as: UTF8.self) : String(decoding: field, as: UTF8.self)
    }

    /// COPY's text escapes undone: \\ \t \n \r \b \f \v and octal \ddd never occur in JSON it
    /// printed except as the doubled backslash of a JSON escape, but all are handled.
    static func unescaped(_ field: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        guard field.contains(UInt8(ascii: "\\")) else { return Array(field) }
        var out: [UInt8] = []
        out.reserveCapacity(field.count)
        var index = 0
        while index < field.count {
            let byte = field[index]
            index += 1
            guard byte == UInt8(ascii: "\\"), index < field.count else { out.append(byte); continue }
            let next = field[index]
            index += 1
            switch next {
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var value = next - UInt8(ascii: "0")
                for _ in 0..<2 where index < field.count && (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(field[index]) {
                    value = value &* 8 &+ (field[index] - UInt8(ascii: "0"))
                    index += 1
                }
                out.append(value)
            default: out.append(next)
            }
        }
        return out
    }
}

/// An event as a replay reads it from `LogCopy`.
public struct StreamedEvent: Sendable {
    public var stream: String
    public var type: String
    /// The event's JSON, as bytes.
    public var data: [UInt8]
    public var metadata: String
    public var occurredAt: Date
    public var recordedAt: Date
    public var position: LogPosition
}
