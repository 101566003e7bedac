import Foundation
import LedgerPostgres

/// Why an append or read failed. Each case is distinct so callers can act on it.
package enum EventStoreError: Error, Sendable, CustomStringConvertible {
    /// Optimistic concurrency: the stream moved on. Carries the version it is actually at.
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: Int64)
    /// An event id was used before with different content or on another stream. Nothing was written.
    case idempotencyConflict(stream: String, eventIDs: [String])
    /// The events were rejected as given (empty batch, invalid JSON, over-long type or stream name).
    case invalidEvents(String)
    /// The database failed or is unreachable; `PostgresError.isTransient` tells whether to retry.
    case database(PostgresError)

    package var description: String {
        switch self {
        case .wrongExpectedVersion(let stream, let expected, let actual):
            "stream \(stream) is at version \(actual), expected \(expected)"
        case .idempotencyConflict(let stream, let ids):
            "event ids \(ids.joined(separator: ", ")) were already used with other content (append to \(stream))"
        case .invalidEvents(let reason): "invalid events: \(reason)"
        case .database(let error): "\(error)"
        }
    }

    /// Maps a server error raised by `ledger.append_events` (schema/0001) to its meaning.
    static func from(_ error: PostgresError, stream: String, expected: ExpectedVersion) -> EventStoreError {
        switch error.sqlState {
        case "LE001":
            return .wrongExpectedVersion(stream: stream, expected: expected, actual: Int64(error.detail ?? "") ?? -1)
        case "LE002":
            let ids = (error.detail ?? "").split(separator: ",").map(String.init)
            return .idempotencyConflict(stream: stream, eventIDs: ids)
        case "22023", "22P02", "23514", "22001", "22007", "22008":
            // invalid parameter, invalid JSON/uuid/timestamp syntax, a CHECK (length) violated.
            return .invalidEvents(error.debugDescription)
        default:
            return .database(error)
        }
    }
}
