import Foundation
import LedgerAccess
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// A request is answered by its deadline however long the database keeps it waiting: 503 with
/// `Retry-After`, whether it waited for an answer of its own or for a group commit it joined.
/// The database is held up the plainest way there is — a lock another session keeps. One test at
/// a time: beside the currency ledger's held lock, the purchase sent again after the first test's
/// lock is gone missed its 1 s deadline in 3 runs of 5 (each test alone passes).
@Suite(.serialized) struct RequestDeadlineTests {
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

    /// The currency ledger reads every user of the app before its first row: it is read in the
    /// answer's body, like the transactions' export, so a close that takes longer than a request
    /// may is answered whole — here the owners' table held past the deadline, as a large app's
    /// thousands of pages would hold it.
    @Test func theCurrencyLedgerIsAnsweredWholePastTheRequestsDeadline() async throws {
        // Long enough for the answer's head on a busy machine (the key, the app, the node chosen).
        let deadline = Duration.seconds(3)
        let server = try await TestServer.start(limits: RequestLimits(deadline: deadline))
        let admin = try await server.key([.admin]), finance = try await server.key([.finance])
        let app = "/v1/apps/\(TestServer.bundleID)"
        // The setup's writes are sent again when the short deadline answers 503, as a client would:
        // both are idempotent (a grant by its id), and a 503 loses nothing.
        func written(_ method: String, _ path: String, _ json: [String: Any]) async throws -> TestServer.Answer {
            var answer = try await server.send(method, app + path, key: admin, json: json)
            for _ in 0..<20 where answer.status == 503 { answer = try await server.send(method, app + path, key: admin, json: json) }
            return answer
        }
        #expect(try await written("PUT", "/currencies/gems", ["name": "Gems"]).status == 200)
        let granted = try await written(
            "POST", "/users/deadline-gems/currencies/gems/grants", ["amount": 70, "reason": "quest", "grant_id": "deadline-70"])
        #expect([200, 201].contains(granted.status), "\(granted.text)")
        // A grant answered 503 may be projected a moment later: the export lists the users projected.
        var projected = false
        for _ in 0..<200 where !projected {
            let state = try await server.send("GET", app + "/users/deadline-gems", key: admin)
            projected = (state.json["balances"] as? [String: any Sendable])?["gems"] as? Int == 70
            if !projected { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(projected, "the grant never reached the user's state")

        let holder = try PostgresConnection.connect(TestCluster.superuser(server.configuration))
        try holder.execute(script: "BEGIN; LOCK TABLE ledger.transaction_owners IN ACCESS EXCLUSIVE MODE")
        let today = String(RFC3339.string(Date()).prefix(10))
        let tomorrow = String(RFC3339.string(Date(timeIntervalSinceNow: 86_400)).prefix(10))
        async let books = server.send("GET", app + "/exports/currencies?from=\(today)&to=\(tomorrow)&format=jsonl", key: finance)
        // Held until the export waits on it, and a deadline and a half longer. (A pipeline's
        // statement is not what pg_stat_activity shows as its query: any wait on a lock is it.)
        let waiting = "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        var waited = false
        for _ in 0..<600 where !waited {
            waited = try holder.query(waiting)[0]["n"].int() > 0
            if !waited { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(waited, "nothing waited on the owners' table")
        try await Task.sleep(for: deadline * 1.5)
        try holder.execute(script: "ROLLBACK")
        let answer = try await books
        #expect(answer.status == 200, "\(answer.text)")
        let row = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any]
        #expect(row?["currency"] as? String == "gems" && row?["closing"] as? Int == 70, "\(answer.text)")
        await server.stop()
    }
}
