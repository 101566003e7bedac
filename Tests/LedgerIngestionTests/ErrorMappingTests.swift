import LedgerCore
import LedgerEventStore
import LedgerPostgres
import Testing

@testable import LedgerIngestion

/// What a caller is told when something below ingestion refuses: a code and a sentence of ours,
/// never the store's or the database's words (they can quote the values a statement was given);
/// those stay with the error as its cause, for the log.
@Suite struct ErrorMappingTests {
    @Test func theStoresWordsBecomeTheCauseNotTheMessage() async throws {
        let refused = EventStoreError.invalidEvents(#"value too long; detail: Key (stream)=(user:secret-player-id) already exists"#)
        let error = try await #require(throws: LedgerError.self) { try await LedgerError.mapping { throw refused } }
        #expect(error.code == .invalidRequest && error.kind == .invalid)
        #expect(!error.message.contains("secret-player-id"))
        #expect("\(error.underlying.map { "\($0)" } ?? "")".contains("secret-player-id"), "the cause is kept for the log")

        let moved = EventStoreError.wrongExpectedVersion(stream: "user:com.example:private-id", expected: .exact(3), actual: 4)
        let conflict = try await #require(throws: LedgerError.self) { try await LedgerError.mapping { throw moved } }
        #expect(conflict.kind == .conflict && !conflict.message.contains("private-id"))
    }

    @Test func aDatabaseFailurePassesThroughWhole() async throws {
        let failure = PostgresError(code: .server, sqlState: "42P01", message: #"relation "ledger.user_timelines" does not exist"#)
        let thrown = try await #require(throws: PostgresError.self) {
            try await LedgerError.mapping { throw EventStoreError.database(failure) }
        }
        #expect(thrown.sqlState == "42P01" && !thrown.isTransient, "the edge answers 500 and logs it, not 503")
    }
}
