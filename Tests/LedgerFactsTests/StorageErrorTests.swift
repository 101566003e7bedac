import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import Testing

/// A storage failure tells the caller what it means, never what it says: what passes is a 503,
/// anything else a fault whose words stay with it as the cause.
@Suite struct StorageErrorTests {
    @Test func aTransientDatabaseFailureIsUnavailableAndAnyOtherAFault() {
        for state in ["08006", "57P01", "40001", "40P01", "53300", "25006"] {
            let error = PostgresError(code: .server, sqlState: state, message: "x").ledgerError
            #expect(error.code == .databaseUnavailable && error.kind == .unavailable, "\(state)")
        }
        let fault = PostgresError(code: .server, sqlState: "42501", message: "permission denied for table events").ledgerError
        #expect(fault.code == .internalError && fault.kind == .fault)
        #expect(!fault.message.contains("permission"))
        #expect("\(fault.underlying.map { "\($0)" } ?? "")".contains("permission denied"), "kept for the log")
    }

    /// U+0000 in a free-text field reaches PostgreSQL, which cannot store it in text or jsonb:
    /// the request's fault, a 400, not the ledger's.
    @Test func textTheDatabaseCannotStoreIsTheCallersToFix() {
        for state in ["22P05", "22021"] {
            let error = PostgresError(
                code: .server, sqlState: state, message: "unsupported Unicode escape sequence",
                detail: "\\u0000 cannot be converted to text."
            ).ledgerError
            #expect(error.code == .invalidRequest && error.kind == .invalid, "\(state)")
            #expect(error.message.contains("U+0000") && !error.message.contains("escape sequence"))
        }
    }

    @Test func theStoresRefusalsBecomeTheCallersWords() {
        let refused = EventStoreError.invalidEvents("value too long for stream user:com.example:secret-user").ledgerError
        #expect(refused.code == .invalidRequest && !refused.message.contains("secret-user"))
        let moved = EventStoreError.wrongExpectedVersion(stream: "purchase:com.example:1", expected: .exact(1), actual: 2).ledgerError
        #expect(moved.kind == .conflict)
        let away = EventStoreError.database(PostgresError(code: .connectionLost, message: "gone")).ledgerError
        #expect(away.code == .databaseUnavailable)
    }
}
