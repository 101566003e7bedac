import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import LedgerTestSupport
import Synchronization
import Testing

/// The database restarted under load: appends fail with a clear, transient error during the outage,
/// succeed after it, and nothing is half-written.
@Suite struct OutageTests {
    @Test(arguments: ["fast", "immediate"])
    func appendsFailCleanlyDuringARestartAndRecoverAfter(mode: String) async throws {
        let cluster = try await TestCluster.privateCluster()
        let configuration = try await TestCluster.database(on: cluster, named: "ledger")
        try await offThePool {
            try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(
                PostgresConnection.connect(configuration))
        }
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 4, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)

        let acknowledged = Locked<[UUID: Int]>([:]) // batch id → event count
        let failures = Locked<[String]>([])
        let successesAfterRestart = Locked<Int>(0)
        let restarted = Locked<Bool>(false)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    // Until the database is back and this writer has appended after it (a
                    // condition, not a duration: a slow machine restarts slowly).
                    var n = 0
                    var mineAfterRestart = 0
                    while mineAfterRestart < 5 {
                        n += 1
                        let events = (0..<(1 + n % 4)).map { _ in testEvent() }
                        do {
                            let afterRestart = restarted.value
                            try await store.append(events, to: "writer-\(writer)-\(n % 3)")
                            acknowledged.withLock { $0[events[0].id] = events.count }
                            if afterRestart {
                                mineAfterRestart += 1
                                successesAfterRestart.withLock { $0 += 1 }
                            }
                        } catch let error as EventStoreError {
                            guard case .database(let cause) = error, cause.isTransient else {
                                Issue.record("an outage must surface as a transient database error, got \(error)")
                                return
                            }
                            failures.withLock { $0.append(cause.code.name) }
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(800))
                try await cluster.stop(mode: mode)
                try await Task.sleep(for: .milliseconds(700))
                try await cluster.start()
                restarted.withLock { $0 = true }
            }
            try await group.waitForAll()
        }

        #expect(!failures.value.isEmpty, "appends during the outage failed")
        #expect(successesAfterRestart.value > 0, "appends succeeded after the restart")
        // Nothing half-written: every acknowledged batch is stored whole, chains verify.
        let owner = try PostgresConnection.connect(configuration)
        for (firstID, count) in acknowledged.value {
            let rows = try owner.query(
                """
                SELECT count(*) AS n FROM ledger.events e
                 WHERE e.stream = (SELECT stream FROM ledger.events WHERE event_id = $1)
                   AND e.version >= (SELECT version FROM ledger.events WHERE event_id = $1)
                   AND e.version < (SELECT version FROM ledger.events WHERE event_id = $1) + $2
                """, [firstID, count])
            #expect(try rows[0]["n"].int() == count)
        }
        let report = try await ChainVerifier(pool: pool).verify()
        #expect(report.isIntact, "\(report.breaks)")
        await pool.close()
        print(
            "outage (\(mode)): \(acknowledged.withLock { $0.count }) appends acknowledged, \(failures.withLock { $0.count }) failed during the outage"
        )
    }
}
