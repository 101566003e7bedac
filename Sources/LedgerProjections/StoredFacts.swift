import Foundation
import LedgerCore
import LedgerEventStore

/// The bridge between the domain's facts and the event store's rows, both ways.
public enum StoredFacts {
    /// A domain event as an event-store append: its stream, and the event with business time and
    /// evidence reference (metadata `evidence`, the sha256 of the raw evidence).
    public static func append(_ event: LedgerEvent, bundleID: String, id: UUID, occurredAt: Date, evidence: String? = nil) throws -> (stream: String, event: NewEvent) {
        let data = String(decoding: try event.encodedData(), as: UTF8.self)
        let metadata = evidence.map { #"{"evidence":"\#($0)"}"# } ?? "{}"
        return (LedgerStream.stream(of: event, bundleID: bundleID),
                NewEvent(id: id, type: event.typeName, data: data, metadata: metadata, occurredAt: occurredAt))
    }

    /// The app a stream belongs to: `kind:<bundle>[:<rest>]`. Bundle ids never contain colons.
    public static func bundleID(ofStream stream: String) -> String? {
        let parts = stream.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, ["app", "purchase", "user", "notifications"].contains(parts[0]) else { return nil }
        return String(parts[1])
    }

    /// Decodes a stored event into a domain fact; nil for streams that are not the domain's.
    /// Safe on several threads at once.
    public static func fact(from recorded: RecordedEvent) throws -> (bundleID: String, fact: RecordedFact)? {
        guard let bundleID = bundleID(ofStream: recorded.stream) else { return nil }
        let event = try LedgerEvent(typeName: recorded.type, data: Data(recorded.data.utf8))
        return (bundleID, RecordedFact(event: event, occurredAt: recorded.occurredAt, recordedAt: recorded.recordedAt,
                                       sequence: recorded.position.position, evidence: evidence(in: recorded.metadata)))
    }

    /// The `evidence` of metadata written by `append` — `{"evidence": "sha256:…"}` as jsonb prints
    /// it — read without a JSON parser (a rebuild reads it a million times); anything else falls
    /// back to one.
    static func evidence(in metadata: String) -> String? {
        guard metadata.contains("evidence") else { return nil }
        let prefix = #"{"evidence": ""#
        if metadata.hasPrefix(prefix), metadata.hasSuffix(#""}"#) {
            let value = metadata.dropFirst(prefix.count).dropLast(2)
            if !value.contains("\\"), !value.contains("\"") { return String(value) }
        }
        let object = try? JSONSerialization.jsonObject(with: Data(metadata.utf8)) as? [String: Any]
        return object?["evidence"] as? String
    }
}
