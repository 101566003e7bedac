import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats

/// The bridge between the domain's facts and the event store's rows, both ways.
package enum StoredFacts {
    /// A domain event as an event-store append: its stream, and the event with business time and
    /// evidence reference (metadata `evidence`, the sha256 of the raw evidence).
    package static func newEvent(
        _ event: LedgerEvent, bundleID: String, id: UUID, occurredAt: Date, evidence: String? = nil
    ) throws -> (stream: String, event: NewEvent) {
        let data = String(decoding: try event.encodedData(), as: UTF8.self)
        let metadata = evidence.map { #"{"evidence":"\#($0)"}"# } ?? "{}"
        return (
            LedgerStream.stream(of: event, bundleID: bundleID),
            NewEvent(id: id, type: event.typeName, data: data, metadata: metadata, occurredAt: occurredAt)
        )
    }

    /// Decodes a stored event into a domain fact; nil for streams that are not the domain's.
    /// Safe on several threads at once.
    package static func fact(from recorded: RecordedEvent) throws -> (bundleID: String, fact: RecordedFact)? {
        guard let bundleID = LedgerStream.bundleID(of: recorded.stream) else { return nil }
        let event = try DecodedEvents.shared.event(type: recorded.type, data: recorded.data)
        return (
            bundleID,
            RecordedFact(
                event: event, occurredAt: recorded.occurredAt, recordedAt: recorded.recordedAt,
                sequence: recorded.position.position, evidence: evidence(in: recorded.metadata))
        )
    }

    /// The same for an event streamed by `LogCopy` (a rebuild).
    package static func fact(from streamed: StreamedEvent) throws -> (bundleID: String, fact: RecordedFact)? {
        guard let bundleID = LedgerStream.bundleID(of: streamed.stream) else { return nil }
        let tree = try streamed.data.withUnsafeBufferPointer { try JSONTree.parse($0) }
        let event = try LedgerEvent(typeName: streamed.type, tree: tree)
        return (
            bundleID,
            RecordedFact(
                event: event, occurredAt: streamed.occurredAt, recordedAt: streamed.recordedAt,
                sequence: streamed.position.position, evidence: evidence(in: streamed.metadata))
        )
    }

    /// The `evidence` of metadata written by `append` — `{"evidence": "sha256:…"}` as jsonb prints
    /// it — read from the bytes (a rebuild reads it a million times; `String.contains` and
    /// `hasPrefix` went through Foundation and cost more than decoding the event); anything
    /// else falls back to a parser.
    static func evidence(in metadata: String) -> String? {
        var metadata = metadata
        let quick: String?? = metadata.withUTF8 { bytes in
            if bytes.count <= 2 { return .some(nil) } // "{}"
            let prefix = #"{"evidence": ""#.utf8, suffix = #""}"#.utf8
            guard bytes.count >= prefix.count + suffix.count, bytes.starts(with: prefix),
                UnsafeBufferPointer(rebasing: bytes[(bytes.count - suffix.count)...]).elementsEqual(suffix)
            else { return nil }
            let value = UnsafeBufferPointer(rebasing: bytes[prefix.count..<(bytes.count - suffix.count)])
            guard !value.contains(UInt8(ascii: "\\")), !value.contains(UInt8(ascii: "\"")) else { return nil }
            return .some(String(decoding: value, as: UTF8.self))
        }
        if let quick { return quick }
        guard case .object(let members)? = try? JSONTree.parse(metadata),
            case .string(let value)? = JSONTree.member("evidence", of: members)
        else { return nil }
        return value
    }
}
