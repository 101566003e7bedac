import Crypto
import Foundation

/// The per-stream hash chain, computed in Swift.
///
/// `ledger.event_hash` in schema/0001 computes the same bytes inside PostgreSQL at append time;
/// `ChainVerifier` recomputes them here, independently, so an auditor does not have to trust the
/// database's own function to check the database. Layout (all integers big-endian):
///
///     SHA-256( prev_hash[32]
///              ‖ u32 len ‖ stream (UTF-8)      ‖ i64 version ‖ event_id[16]
///              ‖ u32 len ‖ event_type (UTF-8)  ‖ u32 len ‖ data (jsonb text)
///              ‖ u32 len ‖ metadata (jsonb text)
///              ‖ i64 occurred_at µs since epoch ‖ i64 recorded_at µs since epoch )
package enum EventHash {
    /// The previous hash of a stream's first event.
    package static let genesis = [UInt8](repeating: 0, count: 32)

    package struct Fields: Sendable {
        package var stream: String
        package var version: Int64
        package var eventID: UUID
        package var type: String
        package var data: String
        package var metadata: String
        package var occurredAtMicros: Int64
        package var recordedAtMicros: Int64

        package init(
            stream: String, version: Int64, eventID: UUID, type: String, data: String, metadata: String,
            occurredAtMicros: Int64, recordedAtMicros: Int64
        ) {
            self.stream = stream
            self.version = version
            self.eventID = eventID
            self.type = type
            self.data = data
            self.metadata = metadata
            self.occurredAtMicros = occurredAtMicros
            self.recordedAtMicros = recordedAtMicros
        }
    }

    package static func hash(previous: [UInt8], _ fields: Fields) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(data: content(fields))
        return Array(hasher.finalize())
    }

    /// The event's own bytes of the layout above (everything after `prev_hash`): what the chain
    /// links, and what a leaf of the proof tree commits to.
    package static func content(_ fields: Fields) -> [UInt8] {
        var bytes: [UInt8] = []
        func lengthPrefixed(_ text: String) {
            let utf8 = Array(text.utf8)
            integer(UInt32(utf8.count))
            bytes += utf8
        }
        func integer<I: FixedWidthInteger>(_ value: I) {
            withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
        }
        lengthPrefixed(fields.stream)
        integer(fields.version)
        withUnsafeBytes(of: fields.eventID.uuid) { bytes += $0 }
        lengthPrefixed(fields.type)
        lengthPrefixed(fields.data)
        lengthPrefixed(fields.metadata)
        integer(fields.occurredAtMicros)
        integer(fields.recordedAtMicros)
        return bytes
    }
}
