import Crypto
import Foundation
import Logging

/// One numbered, forward-only SQL file from `schema/` (e.g. `0001_event_store.sql`).
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String
    /// SHA-256 of the file: an applied migration whose file later changed is refused, because
    /// forward-only means history is never edited.
    package var checksum: String { Hex.encode(SHA256.hash(data: Data(sql.utf8))) }

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Parses `NNNN_name.sql`; nil for any other file name.
    /// `NNNN_name`, as operators see it in errors and logs.
    package var fileStem: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Checksums of earlier texts of this file that are equivalent to it, each declared in the file
    /// by a line `-- replaces checksum <sha256 hex>`: the only way an applied migration's text may
    /// change, visible to anyone who reads the file (0001 lost its CREATE ROLE this way).
    package var acceptedChecksums: Set<String> {
        var accepted: Set<String> = [checksum]
        for line in sql.split(separator: "\n") where line.hasPrefix("-- replaces checksum ") {
            accepted.insert(String(line.dropFirst("-- replaces checksum ".count)).trimmingCharacters(in: .whitespaces))
        }
        return accepted
    }

    /// Declared by a line `-- ledger: outside a transaction`: for `CREATE INDEX CONCURRENTLY`, which
    /// builds an index on a log that servers keep writing to (a plain `CREATE INDEX` would hold
    /// their appends for as long as the build takes), and which PostgreSQL refuses inside one.
    package var runsOutsideTransaction: Bool {
        sql.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "-- ledger: outside a transaction" }
    }

    /// The statements of a migration run outside a transaction, each sent alone (several in one
    /// message would make an implicit transaction): they end with `;` at the end of a line, and
    /// comment lines are dropped. Such a migration must be safe to run again from the top after
    /// failing part-way, since nothing rolls its earlier statements back.
    package var statements: [String] {
        var statements: [String] = []
        var current: [Substring] = []
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("--") || trimmed.isEmpty { continue }
            current.append(line)
            if trimmed.hasSuffix(";") {
                statements.append(current.joined(separator: "\n"))
                current = []
            }
        }
        if !current.isEmpty { statements.append(current.joined(separator: "\n")) }
        return statements
    }

    package init?(fileName: String, sql: String) {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0 else { return nil }
        self.init(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql)
    }
}

package enum MigrationError: Error, CustomStringConvertible, Equatable {
    case duplicateVersion(Int)
    case changedAfterApply(version: Int, name: String)
    /// The database has migrations this binary does not know while one it knows is missing: not a
    /// later release's schema but another line of history.
    case unknownApplied(versions: [Int])
    /// Migrations are pending and the connected login may not apply them (a runtime login).
    case needsOwner(pending: [String], login: String, cause: String)

    package var description: String {
        switch self {
        case .duplicateVersion(let version): "two migration files share version \(version)"
        case .changedAfterApply(let version, let name):
            "migration \(version) (\(name)) was edited after it was applied; add a new migration instead"
        case .unknownApplied(let versions):
            "the database has migrations \(versions) that this ledger binary does not know, and lacks some it knows: "
                + "it was not migrated by a later release of this ledger; run the ledger that migrated it"
        case .needsOwner(let pending, let login, let cause):
            "migrations \(pending.joined(separator: ", ")) are pending and login \(login) may not apply them (\(cause)); "
                + "run `ledger migrate` once with the owner's LEDGER_DATABASE_URL, then start the server again. See docs/deployment.md."
        }
    }
}

/// What `migrate` did.
package struct MigrationReport: Sendable {
    package var applied: [Migration] = []
    package var alreadyApplied: Int = 0
    /// Migrations of a later release already applied: during a rolling upgrade (or after a roll
    /// back) this release serves on that schema, since migrations only expand it.
    package var ahead: [Int] = []
}

/// Applies migrations in order, each in its own transaction, recorded in `ledger.schema_migrations`,
/// after making the application role usable (`ApplicationRole.prepare`).
///
/// A session-level advisory lock makes two instances migrating at once safe: the second waits,
/// then finds everything applied. Running it again is a no-op. The files name the application
/// role `ledger_app`; another configured role takes its place in their text (their checksums are
/// of the files as shipped).
package struct Migrator: Sendable {
    /// `hashtext('ledger.migrations')`-style constant; any fixed bigint shared by all instances works.
    static let advisoryLockKey: Int64 = 0x1ED6_E500_0000_0001
    package let migrations: [Migration]
    package let role: ApplicationRole
    private let logger: Logger

    package init(migrations: [Migration], role: ApplicationRole = try! ApplicationRole(), logger: Logger) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.version == b.version { throw MigrationError.duplicateVersion(a.version) }
        self.migrations = sorted
        self.role = role
        self.logger = logger
    }

    /// What `ledger serve` does: the role made usable, then migrations applied only if some are
    /// pending — so a runtime login with no DDL rights serves a current schema, and is told to run
    /// `ledger migrate` as the owner when the schema is not.
    @discardableResult
    package func migrateIfNeeded(_ connection: PostgresConnection) throws -> MigrationReport {
        try role.prepare(on: connection)
        let pending = try whilePostgres("reading which migrations are applied") { try self.pending(connection) }
        guard !pending.isEmpty else { return MigrationReport(applied: [], alreadyApplied: migrations.count) }
        do {
            return try migrate(connection, rolePrepared: true)
        } catch let error as PostgresError where error.sqlState == "42501" {
            let login = (try? connection.query("SELECT current_user AS who")[0]["who"].string()) ?? "?"
            throw MigrationError.needsOwner(pending: pending.map(\.fileStem), login: login, cause: error.description)
        }
    }

    @discardableResult
    package func migrate(_ connection: PostgresConnection) throws -> MigrationReport {
        try migrate(connection, rolePrepared: false)
    }

    private func migrate(_ connection: PostgresConnection, rolePrepared: Bool) throws -> MigrationReport {
        if !rolePrepared { try role.prepare(on: connection) }
        try waitForTheLock(connection)
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey]) }
        try whilePostgres("creating the ledger schema") {
            // Only when absent: CREATE … IF NOT EXISTS checks the CREATE privilege first.
            let present = try connection.query("SELECT to_regclass('ledger.schema_migrations') IS NOT NULL AS present")
            guard try !present[0]["present"].bool() else { return }
            try connection.execute(
                script: """
                    CREATE SCHEMA IF NOT EXISTS ledger;
                    CREATE TABLE IF NOT EXISTS ledger.schema_migrations (
                        version    integer PRIMARY KEY,
                        name       text NOT NULL,
                        checksum   text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    );
                    """)
        }
        let applied = try appliedChecksums(connection)
        let known = Set(migrations.map(\.version))
        let unknown = applied.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            guard migrations.allSatisfy({ applied[$0.version] != nil }) else { throw MigrationError.unknownApplied(versions: unknown) }
            logger.notice(
                "the database is ahead of this release: a later one applied these migrations; this release serves on its schema",
                metadata: ["migration.versions": "\(unknown)"])
        }

        var report = MigrationReport(ahead: unknown)
        for migration in migrations {
            if let checksum = applied[migration.version] {
                guard migration.acceptedChecksums.contains(checksum) else {
                    throw MigrationError.changedAfterApply(version: migration.version, name: migration.name)
                }
                report.alreadyApplied += 1
                continue
            }
            try whilePostgres("applying migration \(migration.fileStem)") {
                let record = "INSERT INTO ledger.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)"
                let values: [(any PostgresBindable)?] = [migration.version, migration.name, migration.checksum]
                if migration.runsOutsideTransaction {
                    // What such a migration's guards say ("does not exist, skipping") is no news to
                    // an operator: libpq would print it on the command's standard error.
                    try connection.execute(script: "SET client_min_messages TO warning")
                    defer { _ = try? connection.execute(script: "RESET client_min_messages") }
                    for statement in migration.statements { try connection.execute(script: role.substitute(into: statement)) }
                    try connection.query(record, values)
                } else {
                    try connection.transaction { connection in
                        try connection.execute(script: role.substitute(into: migration.sql))
                        try connection.query(record, values)
                    }
                }
            }
            logger.info(
                "applied migration", metadata: ["migration.version": "\(migration.version)", "migration.name": "\(migration.name)"])
            report.applied.append(migration)
        }
        return report
    }

    /// Takes the migrations' advisory lock, asking again every tenth of a second rather than
    /// waiting inside `pg_advisory_lock`: a session waiting there holds a snapshot, and a
    /// `CREATE INDEX CONCURRENTLY` run by the holder waits for every older snapshot to end — the
    /// holder and the waiter would each wait for the other until one is cancelled as a deadlock.
    private func waitForTheLock(_ connection: PostgresConnection) throws {
        var waited = false
        while try !connection.query("SELECT pg_try_advisory_lock($1) AS taken", [Self.advisoryLockKey])[0]["taken"].bool() {
            if !waited { logger.info("waiting for another ledger migrate to finish") }
            waited = true
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// Migrations not yet applied (for readiness checks). Does not take the lock.
    package func pending(_ connection: PostgresConnection) throws -> [Migration] {
        let exists = try connection.query("SELECT to_regclass('ledger.schema_migrations') IS NOT NULL AS present")
        guard try exists[0]["present"].bool() else { return migrations }
        let applied = try appliedChecksums(connection)
        return migrations.filter { applied[$0.version] == nil }
    }

    private func appliedChecksums(_ connection: PostgresConnection) throws -> [Int: String] {
        var result: [Int: String] = [:]
        for row in try connection.query("SELECT version, checksum FROM ledger.schema_migrations") {
            result[try row["version"].int()] = try row["checksum"].string()
        }
        return result
    }
}
