import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// A request is answered by its deadline however long the database keeps it waiting: 503 with
/// `Retry-After`, whether it waited for an answer of its own or for a group commit it joined.
/// The database is held up the plainest way there is — a lock another session keeps.
@Suite struct RequestDeadlineTests {
    static let deadline = Duration.seconds(1)

    @Test func aRequestHeldUpByTheDatabaseIsAnswered503ByItsDeadline() async throws {
        let server = try await TestServer.start(limits: RequestLimits(deadline: Self.deadline))
        let key = try await server.key([.ingest, .read])
        let bundle = TestServer.bundleID
        let bought = try await FailoverTests.purchase(server, "deadline-first", key: key)
        #expect(bought.status == 200)

        // A session holding the log's tables: a read of a user's trail and a purchase (a group
        // commit: its writer waits on the lock, the request does not wait with it) both stop.
        let holder = try PostgresConnection.connect(TestCluster.superuser(server.configuration))
        try holder.execute(script: "BEGIN; LOCK TABLE ledger.events, ledger.streams IN ACCESS EXCLUSIVE MODE")
        let jws = try FailoverTests.signed(server, "deadline-second")
        let started = ContinuousClock.now
        async let trail = server.send("GET", "/v1/apps/\(bundle)/users/user-deadline-first/events", key: key)
        async let purchase = FailoverTests.purchase(server, "deadline-second", key: key, jws: jws)
        let answers = try await [(trail, ContinuousClock.now - started), (purchase, ContinuousClock.now - started)]
        try holder.execute(script: "ROLLBACK")
        for (answer, took) in answers {
            #expect(answer.status == 503, "\(answer.text)")
            #expect(answer.headers["Retry-After"].first != nil)
            #expect(answer.errorCode == "database_unavailable")
            #expect(took < Self.deadline + .seconds(1), "answered after \(took)")
        }

        // The lock gone, the same evidence sent again is recorded once (its group may have written
        // it meanwhile).
        let again = try await FailoverTests.purchase(server, "deadline-second", key: key, jws: jws)
        #expect(again.status == 200, "\(again.text)")
        let purchases = try await server.eventCount(ofType: "Purchased")
        #expect(purchases == 2)
        await server.stop()
    }
}
