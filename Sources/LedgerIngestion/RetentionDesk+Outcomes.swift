import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// What each retention rule led to, read from the log rather than kept in a table of its own.
extension RetentionDesk {
    /// How one rule (nil: the default message) fared: how often it answered, and how many of
    /// those subscriptions renewed afterwards.
    package struct Outcome: Sendable, Equatable {
        package var rule: String?
        package var shown: Int
        package var saved: Int
    }

    /// Every rule's outcome so far, from the log: a decision counts as saved when its subscription
    /// renewed (or recovered from billing trouble) after it was recorded.
    package func outcomes(bundleID: String) async throws -> [Outcome] {
        try await LedgerError.mapping {
            let statement = EventStore.followed(
                ofType: LedgerEventType.retentionDecided.rawValue,
                inStreamsStartingWith: LedgerStream.user(bundleID, userID: ""), groupedBy: "rule",
                laterTypes: [LedgerEventType.renewed.rawValue, LedgerEventType.recovered.rawValue],
                // The decision's user stream is `user:<bundle>:<user>`; a bundle id holds no colon.
                laterStream: LedgerStream.purchaseSQL(
                    bundle: "split_part(d.stream, ':', 2)", originalTransactionID: "(d.data->>'originalTransactionID')"))
            return try await ingestor.evidence.pool.query(statement.sql, statement.parameters).map { row in
                Outcome(rule: row["key"].text, shown: try row["seen"].int(), saved: try row["followed"].int())
            }
        }
    }
}
