import Foundation
import LedgerFormats
import LedgerPostgres

/// The whole log streamed with one `COPY … TO STDOUT (FORMAT binary)`, for replays that read
/// everything: a rebuild. A keyset scan pays a query, a materialised result and a `String` per
/// cell for every batch; this pays one statement, and leaves the parsing of each row to whichever
/// thread decodes it. Binary, because printing two timestamps per row as text cost PostgreSQL a
/// third of the read (psql, 666,349 rows: 3.5 s as text, 2.3 s binary).
package enum LogCopy {
    /// Streams every event behind the snapshot fence (as `EventStore.readAll` defines it) after
    /// `position`, in log order, in batches of up to `batchSize` raw rows. Events whose type is in
    /// `excludedTypes` are left out by the server; a checkpoint at the last event returned is
    /// still exact, because whatever excluded events follow it are skipped again when read.
    package static func stream(
        on connection: PostgresConnection, after position: LogPosition, excludingTypes excludedTypes: Set<String>,
        batchSize: Int, _ body: (LogRows) throws -> Void
    ) throws {
        let excluded = excludedTypes.sorted().map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }
        let filter = excluded.isEmpty ? "" : " AND e.event_type NOT IN (\(excluded.joined(separator: ", ")))"
        var batch = LogRows()
        var sawHeader = false
        try connection.copyOut(
            """
            COPY (SELECT e.stream, e.event_type, e.data, e.metadata, e.occurred_at, e.recorded_at, e.tx_id, e.position
                    FROM ledger.events e
                   WHERE (e.tx_id, e.position) > ('\(position.transactionID)'::xid8, \(position.position)::bigint)
                     AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())\(filter)
                   ORDER BY e.tx_id, e.position) TO STDOUT (FORMAT binary)
            """
        ) { chunk in
            var row = chunk
            if !sawHeader {
                row = try LogRows.afterHeader(chunk)
                sawHeader = true
            }
            guard !LogRows.isTrailer(row) else { return }
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
package struct LogRows: Sendable {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    package init() {}

    package var count: Int { ends.count }

    mutating func append(_ row: UnsafeBufferPointer<UInt8>) {
        bytes += row
        ends.append(bytes.count)
    }

    package struct MalformedRow: Error, CustomStringConvertible {
        package let row: String
        package var description: String { "unexpected COPY row from ledger.events: \(row.prefix(200))" }
    }

    /// Row `index` as an event: the columns a replay needs (no id or version). A binary COPY
    /// row is a field count, then each field as a length and its bytes: text as it is, jsonb as
    /// a version byte and text, timestamptz as microseconds since 2000-01-01, xid8 and bigint as
    /// 8 bytes, all big-endian.
    package func event(at index: Int) throws -> StreamedEvent {
        try bytes.withUnsafeBufferPointer { all in
            let row = UnsafeBufferPointer(rebasing: all[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
            func malformed() -> MalformedRow { MalformedRow(row: String(decoding: row, as: UTF8.self)) }
            var reader = BinaryReader(bytes: row)
            guard reader.int(2) == 8 else { throw malformed() }
            var fields: [UnsafeBufferPointer<UInt8>] = []
            fields.reserveCapacity(8)
            for _ in 0..<8 {
                guard let length = reader.int(4), length >= 0, let field = reader.take(Int(length)) else { throw malformed() }
                fields.append(field)
            }
            guard fields[2].first == 1, fields[3].first == 1, // jsonb version 1
                let occurred = BinaryReader.int64(fields[4]), let recorded = BinaryReader.int64(fields[5]),
                let transaction = BinaryReader.int64(fields[6]), let position = BinaryReader.int64(fields[7])
            else { throw malformed() }
            return StreamedEvent(
                stream: String(decoding: fields[0], as: UTF8.self), type: String(decoding: fields[1], as: UTF8.self),
                data: Array(fields[2].dropFirst()), metadata: String(decoding: fields[3].dropFirst(), as: UTF8.self),
                occurredAt: Self.date(postgresMicroseconds: occurred), recordedAt: Self.date(postgresMicroseconds: recorded),
                position: LogPosition(transactionID: UInt64(bitPattern: transaction), position: position))
        }
    }

    /// PostgreSQL's binary timestamps count from 2000-01-01T00:00:00Z.
    static func date(postgresMicroseconds micros: Int64) -> Date {
        Date(timeIntervalSince1970: Double(micros + 946_684_800_000_000) / 1_000_000)
    }

    static let signature: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00]

    /// The first row arrives after the file header: signature, flags, and an extension area.
    static func afterHeader(_ chunk: UnsafeBufferPointer<UInt8>) throws -> UnsafeBufferPointer<UInt8> {
        var reader = BinaryReader(bytes: chunk)
        guard let signature = reader.take(Self.signature.count), signature.elementsEqual(Self.signature),
            reader.int(4) != nil, let extensionLength = reader.int(4), reader.take(Int(extensionLength)) != nil
        else {
            throw MalformedRow(row: "binary COPY header")
        }
        return reader.rest
    }

    /// The end of a binary COPY: a field count of -1.
    static func isTrailer(_ row: UnsafeBufferPointer<UInt8>) -> Bool {
        row.count == 2 && row[0] == 0xFF && row[1] == 0xFF
    }
}

/// Big-endian integers and byte runs off the front of a buffer.
struct BinaryReader {
    var bytes: UnsafeBufferPointer<UInt8>
    var offset = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var rest: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[offset...]) }

    mutating func take(_ count: Int) -> UnsafeBufferPointer<UInt8>? {
        guard count >= 0, offset + count <= bytes.count else { return nil }
        defer { offset += count }
        return UnsafeBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// A field that is exactly one 8-byte integer.
    static func int64(_ field: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard field.count == 8 else { return nil }
        var reader = BinaryReader(bytes: field)
        return reader.int(8)
    }

    /// A signed big-endian integer of `width` bytes (2, 4 or 8).
    mutating func int(_ width: Int) -> Int64? {
        guard let raw = take(width) else { return nil }
        var value: UInt64 = 0
        for byte in raw { value = value << 8 | UInt64(byte) }
        let shift = UInt64(64 - 8 * width)
        return Int64(bitPattern: value << shift) >> Int64(shift)
    }
}

/// An event as a replay reads it from `LogCopy`.
package struct StreamedEvent: Sendable {
    package var stream: String
    package var type: String
    /// The event's JSON, as bytes.
    package var data: [UInt8]
    package var metadata: String
    package var occurredAt: Date
    package var recordedAt: Date
    package var position: LogPosition
}
