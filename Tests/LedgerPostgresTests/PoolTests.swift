import Foundation
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

@Suite struct PoolTests {
    @Test func blockingQueriesNeverStallTheCooperativePool() async throws {
        // Four 0.3 s sleeps on a 4-connection pool run on the pool's own threads. Meanwhile a task on
        // Swift's cooperative pool (2 threads here) must keep ticking; if libpq ran there, it would stall.
        let pool = PostgresPool(configuration: try TestCluster.database(), size: 4, logger: TestCluster.quietLogger)
        let ticks = Atomic<Int>(0)
        let ticker = Task {
            while !Task.isCancelled {
                ticks.add(1, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await pool.query("SELECT pg_sleep(0.3)") } }
            try await group.waitForAll()
        }
        ticker.cancel()
        #expect(ticks.load(ordering: .relaxed) >= 10, "the cooperative pool kept running while queries blocked")
        await pool.close()
    }

    @Test func callersBeyondThePoolSizeWaitTheirTurn() async throws {
        let pool = PostgresPool(configuration: try TestCluster.database(), size: 2, logger: TestCluster.quietLogger)
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<20 { group.addTask { try await pool.query("SELECT $1::int AS n, pg_sleep(0.01)", [n])[0]["n"].int() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<20))
        let backends = try await pool.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'ledger' AND datname = current_database()")
        #expect(try backends[0]["n"].int() <= 2)
        await pool.close()
    }

    @Test func aWaiterGivesUpAfterTheWaitLimit() async throws {
        let pool = PostgresPool(configuration: try TestCluster.database(), size: 1, waitLimit: .milliseconds(100), logger: TestCluster.quietLogger)
        async let long: PostgresRows = pool.query("SELECT pg_sleep(1)")
        try await Task.sleep(for: .milliseconds(50))
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.code == .poolTimeout)
        _ = try await long
        await pool.close()
    }

    @Test func aKilledConnectionIsReplaced() async throws {
        let configuration = try TestCluster.database()
        let pool = PostgresPool(configuration: configuration, size: 1, logger: TestCluster.quietLogger)
        let pid = try await pool.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int()
        let admin = try PostgresConnection.connect(configuration)
        try admin.query("SELECT pg_terminate_backend($1)", [pid])
        let first = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(first?.isTransient == true)
        let newPID = try await pool.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int()
        #expect(newPID != pid)
        await pool.close()
    }

    @Test func theApplicationRoleIsSetOnEveryConnection() async throws {
        let pool = PostgresPool(configuration: TestCluster.applicationRole(try TestCluster.database()), size: 1, logger: TestCluster.quietLogger)
        #expect(try await pool.query("SELECT current_user AS who")[0]["who"].string() == "ledger_app")
        await pool.close()
    }
}
