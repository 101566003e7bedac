import LedgerPostgres
import LedgerTestSupport
import Testing

/// The owner of a pipelined transaction sends its BEGIN, COMMIT and ROLLBACK; participants only
/// add statements to its round trips and read their own results.
@Suite struct PipelinedTransactionTests {
    struct Boom: Error {}

    /// A database with an empty table `t`, and two connections to it: the owner's, and another
    /// that sees only what is committed.
    func database() async throws -> (owner: PostgresConnection, other: PostgresConnection) {
        let configuration = try await TestCluster.database()
        let owner = try PostgresConnection.connect(configuration)
        try owner.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
        return (owner, try PostgresConnection.connect(configuration))
    }

    func insert(_ values: Int...) -> RoundTrip {
        RoundTrip(values.map { PipelinedStatement("INSERT INTO t VALUES ($1)", [$0]) })
    }

    func count(on connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM t")[0]["n"].int()
    }

    @Test func aThrowRollsBackTheStatementsOfEveryRoundTrip() async throws {
        let (owner, other) = try await database()
        #expect(throws: Boom.self) {
            try owner.pipelinedTransaction { transaction in
                _ = try transaction.send(insert(1, 2))
                _ = try transaction.roundTrips.send(insert(3))
                throw Boom()
            }
        }
        #expect(!owner.isInTransaction, "rolled back, not left open")
        #expect(try count(on: owner) == 0)
        #expect(try count(on: other) == 0)
    }

    @Test func aThrowAfterTheCommitKeepsWhatWasCommitted() async throws {
        let (owner, other) = try await database()
        #expect(throws: Boom.self) {
            try owner.pipelinedTransaction { transaction in
                try transaction.commit(with: insert(1))
                throw Boom()
            }
        }
        #expect(try count(on: other) == 1)
    }

    @Test func theClosingRoundTripCarriesTheCommit() async throws {
        let (owner, other) = try await database()
        try owner.pipelinedTransaction { transaction in
            _ = try transaction.send(insert(1))
            #expect(try count(on: other) == 0, "nothing is visible before the closing round trip")
            try transaction.commit(with: insert(2))
            // Still inside the owner's body: the COMMIT went with the last statements, not after.
            #expect(!owner.isInTransaction)
            #expect(try count(on: other) == 2)
        }
        #expect(try count(on: other) == 2)
    }

    @Test func returningWithoutClosingCommits() async throws {
        let (owner, other) = try await database()
        try owner.pipelinedTransaction { transaction in
            _ = try transaction.send(insert(1, 2))
            #expect(owner.isInTransaction, "the first round trip began it")
        }
        #expect(!owner.isInTransaction)
        #expect(try count(on: other) == 2)
    }

    @Test func aFailureInTheLastRoundTripRollsBackTheFirst() async throws {
        let (owner, other) = try await database()
        let error = try #require(throws: PostgresError.self) {
            try owner.pipelinedTransaction { transaction in
                _ = try transaction.send(insert(1))
                try transaction.commit(with: insert(2, 1))
            }
        }
        #expect(error.sqlState == "23505")
        #expect(error.statementIndex == 1, "counted among the round trip's own statements, not the BEGIN or COMMIT around them")
        #expect(!owner.isInTransaction)
        #expect(try count(on: other) == 0)
    }

    @Test func anOwnerThatRollsBackKeepsNothingAndReturns() async throws {
        let (owner, other) = try await database()
        let answer = try owner.pipelinedTransaction { transaction in
            _ = try transaction.send(insert(1))
            transaction.rollBack()
            return "refused"
        }
        #expect(answer == "refused")
        #expect(!owner.isInTransaction)
        #expect(try count(on: other) == 0)
    }

    @Test func aCommitThatDoesNotWaitForTheDiskCommitsAllTheSame() async throws {
        let (owner, other) = try await database()
        try owner.execute(script: "SET synchronous_commit = on")
        _ = try owner.pipelinedTransaction { try $0.commit(with: insert(1), waitingForDisk: false) }
        #expect(try count(on: other) == 1)
        #expect(
            try owner.query("SELECT current_setting('synchronous_commit') AS s")[0]["s"].string() == "on", "set for that transaction only")
    }

    @Test func participantsReadTheirOwnResultsWhateverOthersSent() async throws {
        let (owner, _) = try await database()
        // Two participants' statements interleaved with the owner's over two round trips, the
        // first of which also carries the BEGIN and the second the COMMIT.
        func participant(_ name: String) -> (trip: RoundTrip, greeting: RoundTrip.Slot, number: RoundTrip.Slot) {
            var trip = RoundTrip()
            let greeting = trip.add(PipelinedStatement("SELECT $1::text AS v", [name]))
            trip.add([PipelinedStatement("SELECT 'ignored' AS v")])
            let number = trip.add(PipelinedStatement("SELECT $1::int AS v", [name.count]))
            return (trip, greeting, number)
        }
        let (a, b) = (participant("alpha"), participant("be"))
        let (first, last) = try owner.pipelinedTransaction { transaction -> (String, Int) in
            var opening = RoundTrip()
            opening.add([PipelinedStatement("SELECT 0 AS v")])
            let aPart = opening.include(a.trip)
            let mine = opening.add(PipelinedStatement("SELECT 'owner' AS v"))
            let bPart = opening.include(b.trip)
            let opened = try transaction.send(opening)
            #expect(try opened[mine][0]["v"].string() == "owner")
            #expect(try opened[aPart][a.greeting][0]["v"].string() == "alpha")
            #expect(try opened[bPart][b.greeting][0]["v"].string() == "be")

            var closing = RoundTrip()
            let bLater = closing.include(b.trip)
            closing.add([PipelinedStatement("SELECT 1 AS v")])
            let aLater = closing.include(a.trip)
            let closed = try transaction.commit(with: closing)
            return (try closed[aLater][a.greeting][0]["v"].string(), try closed[bLater][b.number][0]["v"].int())
        }
        #expect(first == "alpha")
        #expect(last == 2)
    }

    @Test func statementsOneByOneRollBackWhenTheBodyThrows() async throws {
        let (owner, other) = try await database()
        #expect(throws: Boom.self) {
            try owner.transaction { connection in
                try connection.query("INSERT INTO t VALUES (1)")
                #expect(connection.isInTransaction, "BEGIN went first, alone")
                throw Boom()
            }
        }
        #expect(!owner.isInTransaction)
        #expect(try count(on: other) == 0)
        _ = try owner.transaction { try $0.query("INSERT INTO t VALUES (2)") }
        #expect(try count(on: other) == 1)
    }
}
