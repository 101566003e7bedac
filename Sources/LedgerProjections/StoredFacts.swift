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
    public static func fact(from recorded: RecordedEvent) throws -> (bundleID: String, fact: RecordedFact)? {
        guard let bundleID = bundleID(ofStream: recorded.stream) else { return nil }
        let event = try LedgerEvent(typeName: recorded.type, data: Data(recorded.data.utf8))
        return (bundleID, RecordedFact(event: event, occurredAt: recorded.occurredAt, recordedAt: recorded.recordedAt,
                                       sequence: recorded.position.position, evidence: evidence(in: recorded.metadata)))
    }

    private static func evidence(in metadata: String) -> String? {
        guard metadata.contains("evidence"),
              let object = try? JSONSerialization.jsonObject(with: Data(metadata.utf8)) as? [String: Any] else { return nil }
        return object["evidence"] as? String
    }
}
