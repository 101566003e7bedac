import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSchema
import LedgerTestSupport
import Testing

@Suite struct MigratorTests {
    @Test func migratingTwiceIsANoOp() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database()) // already migrated once
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger)
        let report = try migrator.migrate(connection)
        #expect(report.applied.isEmpty)
        #expect(report.alreadyApplied == migrator.migrations.count)
        #expect(try migrator.pending(connection).isEmpty)
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let cluster = try await TestCluster.cluster()
        let name = "m_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await offThePool { try cluster.createDatabase(name) }
        let configuration = cluster.configuration(database: name)
        let migrations = try LedgerSchema.migrations()
        let appliedCounts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await offThePool {
                        let connection = try PostgresConnection.connect(configuration)
                        return try Migrator(migrations: migrations, logger: TestCluster.quietLogger).migrate(connection).applied.count
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(appliedCounts.reduce(0, +) == migrations.count, "every migration applied exactly once across instances")
        let rows = try PostgresConnection.connect(configuration).query("SELECT count(*) AS n FROM ledger.schema_migrations")
        #expect(try rows[0]["n"].int() == migrations.count)
    }

    @Test func anIndexBuiltConcurrentlyIsAppliedOnceWhileOtherMigratorsWaitForTheLock() async throws {
        // CREATE INDEX CONCURRENTLY fails inside a transaction, and waits for every older snapshot:
        // a migrator waiting for the lock inside pg_advisory_lock would hold one, and deadlock.
        let cluster = try await TestCluster.cluster()
        let name = "m_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await offThePool { try cluster.createDatabase(name) }
        let configuration = cluster.configuration(database: name)
        let concurrently = Migration(
            version: 9002, name: "concurrently",
            sql: """
                -- ledger: outside a transaction
                DROP INDEX CONCURRENTLY IF EXISTS ledger.events_by_type_test_idx;
                CREATE INDEX CONCURRENTLY events_by_type_test_idx
                    ON ledger.events (event_type);
                """)
        #expect(concurrently.runsOutsideTransaction)
        #expect(concurrently.statements.count == 2)
        let migrations = try LedgerSchema.migrations() + [concurrently]
        let appliedCounts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await offThePool {
                        let connection = try PostgresConnection.connect(configuration)
                        return try Migrator(migrations: migrations, logger: TestCluster.quietLogger).migrate(connection).applied.count
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(appliedCounts.reduce(0, +) == migrations.count)
        let index = try PostgresConnection.connect(configuration).query(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'ledger.events_by_type_test_idx'::regclass")
        #expect(try index.count == 1 && index[0]["indisvalid"].bool())
    }

    @Test func webhooksFilteringOnTheCurrencysOldChangeNamesAreGivenTheNewOnesToo() async throws {
        let cluster = try await TestCluster.cluster()
        let name = "m_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await offThePool { try cluster.createDatabase(name) }
        let connection = try await PostgresConnection.connect(cluster.configuration(database: name))
        let all = try LedgerSchema.migrations()
        try Migrator(migrations: all.filter { $0.version <= 31 }, logger: TestCluster.quietLogger).migrate(connection)
        for (webhook, types) in [("w1", "{balance.debited,entitlement.granted}"), ("w2", nil), ("w3", "{entitlement.granted}")] {
            try connection.query(
                "INSERT INTO ledger.webhooks (bundle_id, name, url, secret, types, starts_after) VALUES ('a', $1, 'https://x.test/h', $2, $3::text[], 0)",
                [webhook, String(repeating: "s", count: 32), types])
        }
        try Migrator(migrations: all, logger: TestCluster.quietLogger).migrate(connection)
        let rows = try connection.query("SELECT name, types::text AS types FROM ledger.webhooks ORDER BY name")
        #expect(
            try rows.map { try $0["types"].isNull ? "null" : $0["types"].string() }
                == ["{balance.debited,currency.spent,entitlement.granted}", "null", "{entitlement.granted}"])
    }

    @Test func anEditedMigrationIsRefused() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        var migrations = try LedgerSchema.migrations()
        migrations[0] = Migration(version: migrations[0].version, name: migrations[0].name, sql: migrations[0].sql + "\n-- edited")
        #expect(throws: MigrationError.changedAfterApply(version: migrations[0].version, name: migrations[0].name)) {
            try Migrator(migrations: migrations, logger: TestCluster.quietLogger).migrate(connection)
        }
    }

    @Test func aDatabaseALaterReleaseMigratedIsServedAndOneOfAnotherHistoryRefused() async throws {
        // A later release's migration: this release migrates nothing and serves on that schema.
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.query("INSERT INTO ledger.schema_migrations (version, name, checksum) VALUES (9999, 'future', 'x')")
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger)
        let report = try migrator.migrate(connection)
        #expect(report.applied.isEmpty && report.ahead == [9999])
        #expect(try migrator.migrateIfNeeded(connection).applied.isEmpty)
        // One it knows missing beside one it does not: another line of history, refused.
        let longer = try Migrator(
            migrations: LedgerSchema.migrations() + [Migration(version: 9998, name: "mine", sql: "SELECT 1;")],
            logger: TestCluster.quietLogger)
        #expect(throws: MigrationError.unknownApplied(versions: [9999])) { try longer.migrate(connection) }
        try connection.query("DELETE FROM ledger.schema_migrations WHERE version = 9999")
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let broken =
            try LedgerSchema.migrations() + [Migration(version: 9000, name: "broken", sql: "CREATE TABLE ledger.half (n int); SELECT 1/0;")]
        #expect(throws: PostgresError.self) { try Migrator(migrations: broken, logger: TestCluster.quietLogger).migrate(connection) }
        #expect(try connection.query("SELECT to_regclass('ledger.half') IS NULL AS absent")[0]["absent"].bool())
        #expect(try connection.query("SELECT count(*) AS n FROM ledger.schema_migrations WHERE version = 9000")[0]["n"].int() == 0)
    }

    @Test func aDatabaseMigratedWithTheFirstTextOf0001StillMigrates() async throws {
        // The checksum 0001 had when it still created the role itself; the file names it.
        let connection = try await PostgresConnection.connect(TestCluster.database())
        try connection.query(
            "UPDATE ledger.schema_migrations SET checksum = $1 WHERE version = 1",
            ["0d204667719431740642e133236f028277d52bfea6020992f460313c00c86115"])
        let report = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(connection)
        #expect(report.applied.isEmpty)
        try connection.query("UPDATE ledger.schema_migrations SET checksum = 'another' WHERE version = 1")
        #expect(throws: MigrationError.self) {
            try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(connection)
        }
    }

    @Test func databasesThatAppliedTheAppendFunctionsIn0001And0006StillMigrate() async throws {
        // The checksums 0001, 0006 and 0008 had while 0001 and 0006 still held their own copies of
        // the append functions: a database migrated then keeps them as applied.
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let earlier = [
            1: "fea0b84065387fa978cfdabde7681adbfbbb585e88953d37cd9d6cb0c9893d3c",
            6: "4ac08961c028c18b5a603db1fe9e685a9502515dbd43cdcb4dc34bf5bbb2754d",
            8: "23d4f43fc2e9b943017982733e49b10d2f5afc891806f833b0961864fd8ef9e1",
        ]
        for (version, checksum) in earlier {
            try connection.query("UPDATE ledger.schema_migrations SET checksum = $1 WHERE version = $2", [checksum, version])
        }
        let report = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(connection)
        #expect(report.applied.isEmpty)
        #expect(report.alreadyApplied == report.applied.count + (try LedgerSchema.migrations().count))
    }

    @Test func aFailingMigrationIsNamedWithTheServersMessage() async throws {
        let connection = try await PostgresConnection.connect(TestCluster.database())
        let broken =
            try LedgerSchema.migrations() + [Migration(version: 9001, name: "typo", sql: "CREATE TABLE ledger.t (n nonsense_type);")]
        let error = try #require(throws: PostgresError.self) {
            try Migrator(migrations: broken, logger: TestCluster.quietLogger).migrate(connection)
        }
        #expect(error.description == #"applying migration 9001_typo: type "nonsense_type" does not exist (SQLSTATE 42704)"#)
    }

    @Test func theRoleNameIsSubstitutedAsAWholeWordOnly() async throws {
        let role = try ApplicationRole("shop_ledger")
        #expect(
            role.substitute(into: "GRANT SELECT ON t TO ledger_app; -- ledger_apps ledger_app_x xledger_app")
                == "GRANT SELECT ON t TO shop_ledger; -- ledger_apps ledger_app_x xledger_app")
        #expect(throws: ApplicationRoleError.invalidName("Robert'); DROP")) { try ApplicationRole("Robert'); DROP") }
    }

    @Test func fileNamesGiveVersionAndName() {
        #expect(Migration(fileName: "0001_event_store.sql", sql: "")?.version == 1)
        #expect(Migration(fileName: "0012_projections.sql", sql: "")?.name == "projections")
        #expect(Migration(fileName: "README.md", sql: "") == nil)
        #expect(Migration(fileName: "abc_x.sql", sql: "") == nil)
    }
}
