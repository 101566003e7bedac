import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite struct ConnectionTests {
    @Test func parametersAreValuesNeverSQL() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let hostile = "x'); DROP TABLE ledger.events; --"
        let rows = try connection.query(
            "SELECT $1::text AS echoed, $2::bigint AS n, $3::uuid AS id, $4::timestamptz AS at",
            [hostile, Int64(42), UUID(uuidString: "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")!, Date(timeIntervalSince1970: 1_681_314_324.5)])
        #expect(try rows[0]["echoed"].string() == hostile)
        #expect(try rows[0]["n"].int64() == 42)
        #expect(try rows[0]["id"].uuid() == UUID(uuidString: "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6"))
        #expect(try rows[0]["at"].date() == Date(timeIntervalSince1970: 1_681_314_324.5))
        #expect(try connection.query("SELECT to_regclass('ledger.events') IS NOT NULL AS present")[0]["present"].bool())
    }

    /// Text arrays travel as array literals written by hand: every element must come back as it
    /// went, whatever quotes, backslashes, braces, commas or spaces it holds.
    @Test func textArrayElementsArriveAsTheyWere() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let elements = [
            "", "plain", "NULL", "a\"b", "back\\slash", "\\\"", "\"", "{x,y}", " spaced ", "é 😀", "line\nbreak",
            String(repeating: "eyJhbGciOiJFUzI1NiJ9.", count: 200) + "\"end\\",
        ]
        let rows = try connection.query(
            "SELECT e FROM unnest($1::text[]) WITH ORDINALITY AS u(e, n) ORDER BY n", [PostgresTextArray(elements)])
        #expect(try rows.map { try $0["e"].string() } == elements)
        let nullable = try connection.query(
            "SELECT e FROM unnest($1::text[]) WITH ORDINALITY AS u(e, n) ORDER BY n",
            [PostgresNullableTextArray(["a\"", nil, "NULL"])])
        #expect(nullable.map { $0["e"].optionalString() } == ["a\"", nil, "NULL"])
    }

    @Test func serverErrorsAreTypedAndRedacted() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let secret = "shared-secret-abc123"
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT $1::int", [secret]) }
        #expect(error.code == .server)
        #expect(error.sqlState == "22P02")
        #expect(!error.description.contains(secret), "descriptions never quote bound values")
        #expect(!error.debugDescription.contains(secret), "no unredacted copy is kept: logs print errors whole")
        // The connection stays usable after an error.
        #expect(try connection.query("SELECT 1 AS one")[0]["one"].int() == 1)
    }

    @Test func aConnectionThatCannotOpenIsATypedError() async throws {
        let nowhere = PostgresConfiguration(connectionString: "host=/nonexistent port=1 dbname=x user=nobody password=hunter2")
        let error = try #require(throws: PostgresError.self) { try PostgresConnection.connect(nowhere) }
        #expect(error.code == .connectionFailed)
        #expect(error.isTransient)
        #expect(!nowhere.description.contains("hunter2"))
    }

    @Test func transactionsRollBackWhenTheBodyThrows() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.execute(script: "CREATE TABLE t (n int)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try connection.transaction { c in
                try c.query("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try connection.query("SELECT count(*) AS n FROM t")[0]["n"].int() == 0)
    }

    @Test func aRoundTripReturnsEveryResultToItsSlot() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        var trip = RoundTrip()
        let slots = (1...300).map { trip.add(PipelinedStatement("SELECT $1::int * 2 AS doubled", [$0])) }
        let results = try connection.send(trip)
        #expect(try slots.enumerated().allSatisfy { index, slot in try results[slot][0]["doubled"].int() == (index + 1) * 2 })
    }

    @Test func pipelinedTransactionIsAllOrNothing() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
        let trip = RoundTrip([1, 2, 2, 3].map { PipelinedStatement("INSERT INTO t VALUES ($1)", [$0]) })
        let error = try #require(throws: PostgresError.self) { try connection.pipelinedTransaction { try $0.commit(with: trip) } }
        #expect(error.sqlState == "23505")
        #expect(error.statementIndex == 2)
        #expect(!connection.isInTransaction, "the aborted transaction was rolled back")
        #expect(try connection.query("SELECT count(*) AS n FROM t")[0]["n"].int() == 0)
    }

    @Test func largePipelinesDoNotDeadlock() async throws {
        // Enough statements and parameter bytes to fill both socket buffers several times over.
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let payload = String(repeating: "x", count: 2000)
        var trip = RoundTrip()
        let slots = (0..<5000).map { trip.add(PipelinedStatement("SELECT $1::int AS n, $2::text AS payload", [$0, payload])) }
        let results = try connection.pipelinedTransaction { try $0.commit(with: trip) }
        #expect(try results[slots[4999]][0]["n"].int() == 4999)
    }

    @Test func copyLoadsRowsInTextFormat() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.execute(script: "CREATE TABLE t (n int, label text)")
        let data = Array((1...1000).map { "\($0)\tlabel \($0)\n" }.joined().utf8)
        try connection.copyIn("COPY t (n, label) FROM STDIN", data: data)
        #expect(try connection.query("SELECT count(*) AS n, sum(n) AS s FROM t")[0]["s"].int() == 500_500)
    }
}
