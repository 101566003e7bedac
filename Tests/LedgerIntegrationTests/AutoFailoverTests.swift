import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The ledger under a real failover manager: pg_auto_failover (a monitor, a primary and a
/// synchronous secondary, each node under its `pg_autoctl` keeper) decides, the server follows.
/// Under a steady load of purchases: the primary's machine dies and the monitor promotes the
/// secondary; the old primary rejoins as secondary; a planned switchover goes back.
@Suite(.serialized, .takingTurns) struct AutoFailoverTests {
    static let bundle = TestServer.bundleID

    /// Purchases posted by each of `writers` tasks, about ten a second each, until stopped, every
    /// answer kept.
    final class Load: Sendable {
        struct Answer: Sendable {
            var id: String
            var status: Int
            var at: ContinuousClock.Instant
            /// What a refusal said (its error message), for the report of a failed run.
            var said: String = ""
            /// From the request sent to its answer.
            var took: Duration = .zero
        }
        let answers = Locked<[Answer]>([])
        let running = Locked(true)
        let paused = Locked(false)
        let tasks = Locked<[Task<Void, Never>]>([])

        init(_ server: TestServer, key: String, writers: Int = 2) {
            for writer in 0..<writers {
                let task = Task { [answers, running, paused] in
                    var index = 0
                    while running.value {
                        if paused.value {
                            try? await Task.sleep(for: .milliseconds(50))
                            continue
                        }
                        index += 1
                        let id = "load-\(writer)-\(index)"
                        let status: Int
                        var said = ""
                        let sent = ContinuousClock.now
                        do {
                            let jws = try server.app.signedTransaction(IngestionFlowTests.subscription(id, days: 30, startedAgo: 60))
                            let answer = try await server.send(
                                "POST", "/v1/apps/\(AutoFailoverTests.bundle)/transactions", key: key,
                                json: ["user_id": "user-\(id)", "signed_transaction": jws], timeout: 30)
                            status = answer.status
                            if status != 200 { said = String(answer.text.prefix(300)) }
                        } catch {
                            status = -1 // no answer at all
                            said = "\(error)"
                        }
                        answers.withLock { $0.append(Answer(id: id, status: status, at: .now, said: said, took: .now - sent)) }
                        // A steady load, not a flood: the rest of the suite shares these two cores.
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                }
                tasks.withLock { $0.append(task) }
            }
        }

        func stop() async {
            running.withLock { $0 = false }
            for task in tasks.value { await task.value }
        }

        func firstAcknowledged(after instant: ContinuousClock.Instant) -> Answer? {
            answers.value.first { $0.status == 200 && $0.at > instant }
        }

        func waitForAcknowledgement(after instant: ContinuousClock.Instant, within limit: Duration) async throws -> Answer? {
            let start = ContinuousClock.now
            while ContinuousClock.now - start < limit {
                if let answer = firstAcknowledged(after: instant) { return answer }
                try await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }
    }

    /// One user's state read every 100 ms until stopped, every answer kept.
    final class Reads: Sendable {
        let answers = Locked<[Load.Answer]>([])
        let running = Locked(true)
        let task: Locked<Task<Void, Never>?> = Locked(nil)

        init(_ server: TestServer, key: String, user: String) {
            let task = Task { [answers, running] in
                while running.value {
                    let sent = ContinuousClock.now
                    let status =
                        (try? await server.send("GET", "/v1/apps/\(AutoFailoverTests.bundle)/users/\(user)", key: key, timeout: 30).status)
                        ?? -1
                    answers.withLock { $0.append(Load.Answer(id: user, status: status, at: .now, took: .now - sent)) }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            self.task.withLock { $0 = task }
        }

        func stop() async {
            running.withLock { $0 = false }
            await task.value?.value
        }
    }

    @Test func theLedgerFollowsPgAutoFailoverThroughAFailoverAndASwitchoverUnderLoad() async throws {
        try #require(
            AutoFailover.isAvailable, "pg_auto_failover is not installed: Tools/dev test and .ci/run install postgresql-15-auto-failover")
        let formation = try await AutoFailover.start()
        defer { formation.stop() }
        let (owner, database) = try await formation.database()
        var application = formation.hostList(database: database, user: TestCluster.runtime, deadline: .seconds(2))
        application.role = "ledger_app"
        // Reads from the standby while there is one, as LEDGER_READ_DATABASE_URL says it.
        var reading = formation.hostList(database: database, user: TestCluster.runtime, sessions: "prefer-standby", deadline: .seconds(2))
        reading.role = "ledger_app"
        let server = try await TestServer.start(connecting: (owner, application), reading: [reading])
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])

        let load = Load(server, key: key)
        let first = try #require(try await load.waitForAcknowledgement(after: .now, within: .seconds(20)), "no first purchase")
        let reads = Reads(server, key: key, user: "user-\(first.id)")
        try await Task.sleep(for: .seconds(1))

        // The primary's machine dies; the monitor promotes the secondary.
        let old = try formation.primaryNode()
        let other = try #require(formation.nodes.first { $0.name != old.name })
        let killed = ContinuousClock.now
        try formation.kill(old)
        let promoted = try await formation.waitUntilWritable(other, within: .seconds(60))
        let firstAfter = try await load.waitForAcknowledgement(after: promoted, within: .seconds(30))
        if firstAfter == nil {
            // What the server's own pool meets, for the report.
            let probe: String
            do {
                let rows = try await server.pool.query(
                    "SELECT txid_current()::text AS x, current_setting('synchronous_standby_names') AS sync, inet_server_port()::text AS port"
                )
                probe =
                    "a write's xid \(rows[0]["x"].optionalString() ?? "?") on port \(rows[0]["port"].optionalString() ?? "?"), sync '\(rows[0]["sync"].optionalString() ?? "?")'"
            } catch {
                probe = "\(error)"
            }
            Issue.record(
                "pool: \(probe); states \((try? formation.states()) ?? [:]); last answers \(load.answers.value.suffix(3).map { "\($0.status) \($0.said)" })"
            )
        }
        let resumed = try #require(firstAfter, "writes never came back")
        print(
            "failover: promoted \(promoted - killed) after the kill; first purchase acknowledged \(resumed.at - promoted) after the promotion"
        )
        #expect(resumed.at - promoted < .seconds(5), "writes resumed \(resumed.at - promoted) after the promotion")
        // Without a primary, reads went on from the standby.
        let readsMeanwhile = reads.answers.value.filter { $0.at > killed + .seconds(1) && $0.at < promoted }
        let servedMeanwhile = readsMeanwhile.filter { $0.status == 200 }.count
        print("reads while no primary: \(servedMeanwhile) of \(readsMeanwhile.count) answered 200")
        #expect(servedMeanwhile > 0 && readsMeanwhile.count > 0, "\(readsMeanwhile.map(\.status))")

        // The old primary rejoins as secondary — with the load paused: its keeper starts the
        // server as the primary it last was, and until the monitor has it demoted, a client
        // following the host list may write there what the rewind then drops (pg_auto_failover's
        // window, said in docs/deployment.md). Then a planned switchover goes back, under load.
        load.paused.withLock { $0 = true }
        try formation.restart(old)
        try await formation.waitForStates([old.name: "secondary", other.name: "primary"], within: .seconds(120))
        // A planned switchover is lossless only from a standby that replicates synchronously: the
        // monitor may call the rejoined node secondary while it still catches up (seconds on a
        // slow machine), and one run at a fifth of a core's speed lost purchases acknowledged in
        // that window. An operator switches over once the standby is in sync; so does the test.
        let primaryAdmin = formation.admin(port: other.port)
        let inSyncBy = ContinuousClock.now + .seconds(120)
        while try await offThePool({ try Self.synchronousStandbys(primaryAdmin) }) == 0 {
            try #require(ContinuousClock.now < inSyncBy, "the rejoined node never replicated synchronously")
            try await Task.sleep(for: .milliseconds(200))
        }
        load.paused.withLock { $0 = false }
        let asked = ContinuousClock.now
        try await formation.switchover()
        try await formation.waitForStates([old.name: "primary", other.name: "secondary"], within: .seconds(120))
        let switched = ContinuousClock.now
        let back = try #require(
            try await load.waitForAcknowledgement(after: .now, within: .seconds(30)), "writes did not come back after the switchover")
        let refused = load.answers.value.filter { $0.at > asked && $0.at <= back.at && $0.status != 200 }
        let window = refused.isEmpty ? Duration.zero : refused.last!.at - refused.first!.at
        print("switchover: \(refused.count) purchases answered 503 over \(window); the formation took \(switched - asked)")
        // Writes are refused only while the formation itself switches (a second or two on a quick
        // machine, several on a slow one): never longer than the switchover took, as a pool that
        // kept dead connections or backed off too far would. How long it is, is the failover
        // benchmark's to measure.
        #expect(window <= switched - asked, "503s for \(window) during a switchover of \(switched - asked)")

        await load.stop()
        await reads.stop()
        #expect(Set(reads.answers.value.map(\.status)).isSubset(of: [200, 503]), "reads: \(Set(reads.answers.value.map(\.status)))")
        // The reads follow the topology: the last purchase's user, read after everything, owns it.
        let lastUser = try #require(load.answers.value.last { $0.status == 200 })
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/user-\(lastUser.id)", key: key)
        #expect(state.status == 200 && state.text.contains("\"pro\""), "\(state.status) \(state.text)")
        let answers = load.answers.value
        #expect(Set(answers.map(\.status)).isSubset(of: [200, 503]), "\(Set(answers.map(\.status)))")
        // Every request was answered by its deadline (10 s), whatever it met: a pool on a dead
        // primary, a COMMIT waiting for a standby that is gone, a group commit behind one.
        let slowest = (answers + reads.answers.value).map(\.took).max() ?? .zero
        print("slowest answer during the failover and the switchover: \(slowest)")
        #expect(slowest < RequestLimits.defaultDeadline + .seconds(1), "a request waited \(slowest)")
        let acknowledged = Set(answers.filter { $0.status == 200 }.map(\.id))
        let recorded = try await server.pool.query(
            "SELECT data->>'originalTransactionID' AS id FROM ledger.events WHERE event_type = 'Purchased'")
        let present = Set(try recorded.map { try $0["id"].string() })
        #expect(acknowledged.isSubset(of: present), "acknowledged but missing: \(acknowledged.subtracting(present).sorted())")
        let report = try await ChainVerifier(pool: server.pool).verify()
        #expect(report.isIntact, "\(report.breaks)")

        // Background work followed: the last purchase acknowledged is announced.
        let last = try #require(answers.last { $0.status == 200 })
        let announced = try await server.waitForChange(key: key) { $0["user_id"] as? String == "user-\(last.id)" }.found
        #expect(announced, "the change projection followed the primary")
    }

    /// Standbys streaming synchronously from the server at `admin`.
    static func synchronousStandbys(_ admin: PostgresConfiguration) throws -> Int {
        let rows = try PostgresConnection.connect(admin).query(
            "SELECT count(*) AS n FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')")
        return try rows[0]["n"].int()
    }
}
