import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

/// What an operator reads when PostgreSQL refuses something: the server's own words, its detail
/// and hint, the SQLSTATE and what the ledger was doing — and never the values a statement was given.
@Suite struct ErrorTextTests {
    @Test func aBoundValueNeverAppearsInTheText() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT $1::uuid", ["receipt-secret-4711"]) }
        #expect(error.sqlState == "22P02")
        #expect(!error.description.contains("receipt-secret-4711"), "\(error)")
        #expect(error.description.hasPrefix("invalid input syntax for type uuid"), "\(error)")
    }

    @Test func aDuplicateKeysValuesAreRedactedButItsColumnsNamed() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.execute(script: "CREATE TABLE public.k (secret text PRIMARY KEY)")
        try connection.query("INSERT INTO public.k VALUES ($1)", ["hunter2-token"])
        let error = try #require(throws: PostgresError.self) { try connection.query("INSERT INTO public.k VALUES ($1)", ["hunter2-token"]) }
        #expect(error.description.contains("detail: Key (secret)=(…) already exists."), "\(error)")
        #expect(!error.debugDescription.contains("hunter2"), "\(error.debugDescription)")
        // In a pipeline too.
        let piped = try #require(throws: PostgresError.self) {
            try connection.pipelinedTransaction {
                try $0.commit(with: RoundTrip([PipelinedStatement("INSERT INTO public.k VALUES ($1)", ["hunter2-token"])]))
            }
        }
        #expect(!piped.debugDescription.contains("hunter2"), "\(piped.debugDescription)")
    }

    @Test func theServersHintAndWhatWeWereDoingAreShown() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let error = try #require(throws: PostgresError.self) {
            try whilePostgres("counting the widgets") { try connection.query("SELECT no_such_function(1)") }
        }
        #expect(
            error.description.hasPrefix("counting the widgets: function no_such_function(integer) does not exist (SQLSTATE 42883)"),
            "\(error)")
        #expect(error.description.contains("hint: No function matches the given name and argument types."), "\(error)")
    }

    @Test func onlyFailuresThatPassAreTransient() {
        #expect(PostgresError(code: .connectionLost, message: "").isTransient)
        #expect(PostgresError(code: .server, sqlState: "40001", message: "").isTransient)
        #expect(PostgresError(code: .server, sqlState: "57P03", message: "").isTransient)
        #expect(!PostgresError(code: .server, sqlState: "42P01", message: "").isTransient, "a missing table is a fault, not an outage")
        #expect(!PostgresError(code: .server, sqlState: "42501", message: "").isTransient)
    }
}
