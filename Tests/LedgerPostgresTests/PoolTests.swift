import Foundation
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

@Suite struct PoolTests {
    @Test func blockingQueriesRunOnThePoolsOwnThreads() async throws {
        // Four 1 s sleeps on a 4-connection pool: more blocked calls than Swift's cooperative pool
        // has threads (2 here). If libpq ran there, the ticker below could not run at all meanwhile.
        let pool = PostgresPool(configuration: try await TestCluster.database(), size: 4, logger: TestCluster.quietLogger)
        let ticks = Locked(0)
        let ticker = Task {
            while !Task.isCancelled {
                ticks.withLock { $0 += 1 }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let threadNames = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.query("SELECT pg_sleep(1)")
                        return Thread.current.name ?? ""
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        ticker.cancel()
        #expect(threadNames.allSatisfy { $0.hasPrefix("TP-") }, "libpq calls ran on NIOThreadPool threads: \(threadNames)")
        #expect(ticks.value >= 2, "the cooperative pool kept running while four calls blocked")
        await pool.close()
    }

    @Test func callersBeyondThePoolSizeWaitTheirTurn() async throws {
        // A turn, not a deadline, is what this asks: the suite's start keeps the shared cluster
        // busy enough that twenty turns of a 10 ms statement have outlasted the 10 s default wait.
        let pool = PostgresPool(
            configuration: try await TestCluster.database(), size: 2, waitLimit: .seconds(120), logger: TestCluster.quietLogger)
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<20 { group.addTask { try await pool.query("SELECT $1::int AS n, pg_sleep(0.01)", [n])[0]["n"].int() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<20))
        let backends = try await pool.query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'ledger' AND datname = current_database()")
        #expect(try backends[0]["n"].int() <= 2)
        await pool.close()
    }

    @Test func aWaiterGivesUpAfterTheWaitLimit() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: configuration, size: 1, waitLimit: .milliseconds(100), logger: TestCluster.quietLogger)
        // The one connection is held until the waiter has given up: a condition, not a duration
        // (a loaded machine once let a two-second query finish before the waiter even asked).
        let lent = Mutex(false)
        let release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await pool.withConnection { _ in
                lent.withLock { $0 = true }
                release.wait()
            }
        }
        while !lent.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.code == .poolTimeout)
        release.signal()
        try await holder.value
        #expect(try await pool.query("SELECT 1").count == 1, "the connection serves again once returned")
        await pool.close()
    }

    /// A killed backend says so (a FATAL message) and closes its socket; the idle connection is
    /// retired before it is lent again, so the next caller does not fail on it. (Reading only that
    /// message once left the connection looking alive: a readiness probe after the primary came
    /// back failed on such a connection.)
    @Test func aKilledConnectionIsReplacedBeforeItIsLentAgain() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: configuration, size: 1, logger: TestCluster.quietLogger)
        let pid = try await pool.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int()
        let admin = try PostgresConnection.connect(configuration)
        try admin.query("SELECT pg_terminate_backend($1, 5000)", [pid]) // returns once the backend has exited
        let newPID = try await pool.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int()
        #expect(newPID != pid)
        await pool.close()
    }

    /// A connection killed while a caller holds it fails that caller with a transient error, and
    /// its slot reconnects for the next.
    @Test func aConnectionKilledInUseFailsTransientlyAndIsReplaced() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: configuration, size: 1, logger: TestCluster.quietLogger)
        let admin = try PostgresConnection.connect(configuration)
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { connection in
                let pid = try connection.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int()
                try admin.query("SELECT pg_terminate_backend($1, 5000)", [pid])
                try connection.query("SELECT 1")
            }
        }
        #expect(error?.isTransient == true)
        #expect(try await pool.query("SELECT 1 AS one")[0]["one"].int() == 1)
        await pool.close()
    }

    @Test func theApplicationRoleIsSetOnEveryConnection() async throws {
        let pool = PostgresPool(
            configuration: TestCluster.applicationRole(try await TestCluster.database()), size: 1, logger: TestCluster.quietLogger)
        #expect(try await pool.query("SELECT current_user AS who")[0]["who"].string() == "ledger_app")
        await pool.close()
    }

    @Test func aCallerCancelledBeforeItQueuesDoesNotWaitOutTheLimit() async throws {
        let pool = PostgresPool(
            configuration: TestCluster.applicationRole(try await TestCluster.database()), size: 1, waitLimit: .seconds(60),
            logger: TestCluster.quietLogger)
        let release = Locked(false)
        let holder = Task { try await pool.withConnection { _ in while !release.value { usleep(1000) } } }
        try await Task.sleep(for: .milliseconds(200)) // the one connection is taken
        let ran = Locked(false)
        let cancelled = Task { try await pool.withConnection { _ in ran.withLock { $0 = true } } }
        cancelled.cancel() // before it had a chance to queue
        let started = ContinuousClock.now
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(ContinuousClock.now - started < .seconds(30), "answered when cancelled, not after the pool's 60 s wait limit")
        release.withLock { $0 = true }
        try await holder.value
        #expect(!ran.value, "a cancelled caller never runs")
        await pool.close()
    }
}
