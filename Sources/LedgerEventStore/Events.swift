import Foundation
import LedgerFormats

/// An event about to be appended. `data` and `metadata` are JSON text; the domain layer owns their shape.
package struct NewEvent: Sendable, Equatable {
    /// Chosen by the caller and derived deterministically from the evidence (e.g. UUIDv5 of a
    /// notificationUUID), so that a retried or replayed append writes nothing new.
    package var id: UUID
    package var type: String
    package var data: String
    package var metadata: String
    /// Business time (Apple's signed date, a purchase date). Nil means "when recorded".
    package var occurredAt: Date?

    package init(id: UUID, type: String, data: String, metadata: String = "{}", occurredAt: Date? = nil) {
        self.id = id
        self.type = type
        self.data = data
        self.metadata = metadata
        self.occurredAt = occurredAt
    }
}

/// What the caller believes the stream's version to be, checked under the stream's row lock.
package enum ExpectedVersion: Sendable, Equatable, CustomStringConvertible {
    /// No check.
    case any
    /// The stream must have no events yet.
    case noStream
    /// The stream's last event must have exactly this version (versions start at 1).
    case exact(Int64)

    var sqlValue: Int64? {
        switch self {
        case .any: nil
        case .noStream: 0
        case .exact(let version): version
        }
    }

    package var description: String {
        switch self {
        case .any: "any"
        case .noStream: "no stream"
        case .exact(let version): "\(version)"
        }
    }
}

/// An event as stored.
package struct RecordedEvent: Sendable, Equatable {
    package var id: UUID
    package var stream: String
    package var version: Int64
    package var type: String
    package var data: String
    package var metadata: String
    package var occurredAt: Date
    package var recordedAt: Date
    package var position: LogPosition

    package init(
        id: UUID, stream: String, version: Int64, type: String, data: String, metadata: String, occurredAt: Date, recordedAt: Date,
        position: LogPosition
    ) {
        self.id = id
        self.stream = stream
        self.version = version
        self.type = type
        self.data = data
        self.metadata = metadata
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.position = position
    }
}

/// One appended (or, on a replay, previously appended) event.
package struct AppendedEvent: Sendable, Hashable {
    package var id: UUID
    package var version: Int64
    package var position: LogPosition
}

package struct AppendResult: Sendable, Equatable {
    package var stream: String
    package var events: [AppendedEvent]
    /// True when every event already existed with the same content: nothing was written.
    package var wasReplay: Bool
    /// The stream's version after this append (the last event's version).
    package var version: Int64 { events.last?.version ?? 0 }
}

/// Several appends committed together (one transaction, one round trip).
package struct StreamAppend: Sendable, Equatable {
    package var stream: String
    package var events: [NewEvent]
    package var expectedVersion: ExpectedVersion

    package init(stream: String, events: [NewEvent], expectedVersion: ExpectedVersion = .any) {
        self.stream = stream
        self.events = events
        self.expectedVersion = expectedVersion
    }
}
